"""Launching artifacts on a GPU with cuda-bindings only (GPU machines have no TVM).

There, run `python tests/tirx_kernels.py .prebuilt` on the CPU machine first and carry .prebuilt.
"""

import os
from pathlib import Path

import pytest

import tirx

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU"),
]
PREBUILT = Path(os.environ.get("AUTOTUNE_PREBUILT", Path(__file__).resolve().parents[1] / ".prebuilt"))


def load(name: str) -> tirx.Artifact:
    if (PREBUILT / name / "artifact.json").exists():
        return tirx.Artifact.load(PREBUILT / name)
    pytest.importorskip("tvm", reason=f"no prebuilt {name} and no TVM to build it")
    import tirx_kernels

    return tirx_kernels.artifact(name)


def poisoned(*shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def test_tma_kernel_matches_torch():
    kernel = tirx.Kernel(load("tma_scale_sm90"))
    for seed in range(3):  # fresh inputs each time: a stale or unwritten output cannot pass
        torch.manual_seed(seed)
        a = torch.randn(256, 512, dtype=torch.float16, device="cuda")
        d = poisoned(256, 512, dtype=torch.float16)
        kernel(a, d)
        torch.cuda.synchronize()
        assert not d.isnan().any(), "some outputs were never written"
        torch.testing.assert_close(d, a * 2, rtol=0, atol=0)  # x2 is exact in fp16


def test_raw_pointers_and_an_explicit_stream():
    kernel = tirx.Kernel(load("tma_scale_sm90"))
    a = torch.randn(256, 512, dtype=torch.float16, device="cuda")
    d = poisoned(256, 512, dtype=torch.float16)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        kernel(a.data_ptr(), d.data_ptr(), stream=stream.cuda_stream)
    stream.synchronize()
    torch.testing.assert_close(d, a * 2, rtol=0, atol=0)


def test_launch_is_cuda_graph_capturable():
    kernel = tirx.Kernel(load("tma_scale_sm90"))
    a = torch.randn(256, 512, dtype=torch.float16, device="cuda")
    d = poisoned(256, 512, dtype=torch.float16)
    kernel(a, d)  # warm-up outside capture (module load, descriptor encode)
    d.fill_(float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(a, d)
    a.copy_(torch.randn_like(a))  # the replay must read the buffer's current contents
    d.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(d, a * 2, rtol=0, atol=0)


def test_cluster_kernel_runs_as_clusters():
    art = load("cluster_rank_sm90")
    assert art.launch.cluster == (2, 1, 1)
    out = torch.full((8,), -1, dtype=torch.int32, device="cuda")
    tirx.Kernel(art)(out)
    torch.cuda.synchronize()
    # Without the cluster launch attribute every CTA would be rank 0 of a cluster of one.
    assert out.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]


def test_wrong_buffer_is_refused_before_launch():
    kernel = tirx.Kernel(load("tma_scale_sm90"))
    a = torch.randn(256, 256, dtype=torch.float16, device="cuda")
    with pytest.raises(tirx.LaunchError, match="A must be a float16 tensor of shape"):
        kernel(a, a)


def test_a_view_is_read_through_its_own_strides():
    """A (read through TMA alone) may be a strided view: its descriptor gets the view's
    strides, encoded afresh for a view at an address and sizes seen before with other strides.
    D (a pointer) must be contiguous, checked or not."""
    kernel = tirx.Kernel(load("tma_scale_sm90"))
    assert [a.strided for a in kernel.spec.args] == [True, False]
    wide = torch.randn(256, 1024, dtype=torch.float16, device="cuda")
    for a in (wide.view(-1)[:256 * 512].view(256, 512), wide[:, :512], wide[:, 256:768]):
        d = poisoned(256, 512, dtype=torch.float16)
        kernel(a, d)
        torch.cuda.synchronize()
        torch.testing.assert_close(d, a * 2, rtol=0, atol=0)
    d = poisoned(256, 1024, dtype=torch.float16)
    with pytest.raises(tirx.LayoutError, match="D must be contiguous, got shape \\(256, 512\\) "
                                               "with strides \\(1024, 1\\)"):
        kernel(wide[:, :512], d[:, :512], check=False)
    with pytest.raises(tirx.LayoutError, match="A has shape .* stride of 1026 bytes"):
        kernel(torch.zeros(256, 513, dtype=torch.float16, device="cuda")[:, :512],
               poisoned(256, 512, dtype=torch.float16))
    torch.cuda.synchronize()
    assert d.isnan().all()


def test_scalar_arguments_are_passed_at_each_launch():
    kernel = tirx.Kernel(load("affine_index_sm90"))
    index = torch.arange(256, dtype=torch.int32, device="cuda")
    out = torch.full((256,), -1, dtype=torch.int32, device="cuda")
    for scale, bias in ((1, 0), (3, -7), (-2, 2**31 - 600)):  # one binary, new values each launch
        kernel(out, scale, bias)
        torch.cuda.synchronize()
        assert torch.equal(out, index * scale + bias)


def test_wrong_scalar_is_refused_before_launch():
    kernel = tirx.Kernel(load("affine_index_sm90"))
    out = torch.empty(256, dtype=torch.int32, device="cuda")
    for bad in (2**31, 1.5, True):
        with pytest.raises(tirx.LaunchError, match="scale must be an integer of type int32"):
            kernel(out, bad, 0)


def test_one_binary_serves_every_runtime_size():
    kernel = tirx.Kernel(load("tma_rows_runtime_sm90"))
    for B, S in [(1, 1), (2, 127), (3, 1000), (1, 64)]:
        q = torch.randn(B, S, 4, 64, dtype=torch.float16, device="cuda")
        d = poisoned(B, S, 4, 64, dtype=torch.float16)
        lse = poisoned(B, 4, S, dtype=torch.float32)
        kernel(q, d, lse)
        torch.cuda.synchronize()
        torch.testing.assert_close(d, q * 2, rtol=0, atol=0)
        want = torch.arange(S, dtype=torch.float32, device="cuda").expand(B, 4, S)
        torch.testing.assert_close(lse, want, rtol=0, atol=0)
    with pytest.raises(tirx.LaunchError, match="O must be"):
        kernel(q, poisoned(B, S + 1, 4, 64, dtype=torch.float16), lse)



def test_runtime_sizes_and_a_strided_view_together():
    """Q's descriptor has runtime dims; a view of a wider (B, S, 7, 64) tensor's heads 1..4
    brings its own strides."""
    kernel = tirx.Kernel(load("tma_rows_runtime_sm90"))
    for B, S in [(2, 127), (1, 1000), (3, 64)]:
        q = torch.randn(B, S, 7, 64, dtype=torch.float16, device="cuda")[:, :, 1:5]
        d = poisoned(B, S, 4, 64, dtype=torch.float16)
        lse = poisoned(B, 4, S, dtype=torch.float32)
        kernel(q, d, lse)
        torch.cuda.synchronize()
        torch.testing.assert_close(d, q * 2, rtol=0, atol=0)
