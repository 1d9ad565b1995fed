"""Attention on q, k, v sliced from one fused qkv projection, on a Hopper GPU: the fa4 kernel
reads them (and writes o) through TMA descriptors encoded with the views' own strides, so the
op's launcher hands them over uncopied. GQA 32:8, causal, a sequence that is no multiple of the
tile, batch 2; checked against the float32 reference and, bit for bit, against the same
kernel on contiguous copies. GPU machines have no TVM: on the CPU machine run
`python tests/fa4_sm90_kernels.py .prebuilt/fa4_sm90 hd128_bfloat16_causal_32x8` and carry
.prebuilt (CPU side: tests/test_strided_tma.py)."""

import pytest

import fa4_sm90_kernels as K
from kernels.fa4.reference_torch import attention_reference, check_rows, errors, failures

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9,
                       reason="needs a Hopper GPU"),
]
NAME = "hd128_bfloat16_causal_32x8"
B, S, HQ, HKV, D = 2, 1000, 32, 8, 128
NAN = float("nan")


@pytest.fixture(scope="module")
def fa4():
    """(tirx.Kernel, problem, its launch scalars)."""
    import tirx
    from kernels.fa4._sm90_config import launch_scalars

    if not (K.PREBUILT / NAME / "artifact.json").exists():
        pytest.importorskip("tvm", reason=f"no prebuilt {NAME} and no TVM to build it")
    art, problem, cfg = K.load(NAME)
    assert [a.strided for a in art.launch.args[:5]] == [True, True, True, True, False]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return tirx.Kernel(art), problem, launch_scalars(cfg, sms)


def fused(seed):
    """The projection (B, S, HQ + 2 HKV, D) and its q, k, v: views split along the heads."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    qkv = torch.randn(B, S, HQ + 2 * HKV, D, generator=g, device="cuda", dtype=torch.bfloat16)
    return qkv, qkv.split([HQ, HKV, HKV], dim=2)


def contiguous_run(fa4, q, k, v):
    """(o, lse) of the same kernel on contiguous copies."""
    kernel, _, scalars = fa4
    q, k, v = (t.contiguous() for t in (q, k, v))
    o = torch.full_like(q, NAN)
    lse = torch.full((B, HQ, S), NAN, device="cuda")
    kernel(q, k, v, o, lse, *scalars)
    return o, lse


def test_views_of_a_fused_projection_are_read_and_written_in_place(fa4):
    kernel, problem, scalars = fa4
    _, (q, k, v) = fused(0)
    assert not any(t.is_contiguous() for t in (q, k, v))
    o_heads = torch.full((B, S, HQ + 8, D), NAN, device="cuda", dtype=torch.bfloat16)
    o = o_heads[:, :, 4:4 + HQ]  # o a view too: the heads around it must stay untouched
    lse = torch.full((B, HQ, S), NAN, device="cuda")
    kernel(q, k, v, o, lse, *scalars)  # checked: the checks take the views
    want_o, want_lse = contiguous_run(fa4, q, k, v)
    torch.cuda.synchronize()
    assert torch.equal(o, want_o) and torch.equal(lse, want_lse)  # same elements, same bits
    assert o_heads[:, :, :4].isnan().all() and o_heads[:, :, 4 + HQ:].isnan().all()
    rows = check_rows(S, "cuda")
    ref_o, ref_lse = attention_reference(q, k, v, problem.causal, problem.scale, rows)
    assert failures(errors(o, lse, ref_o, ref_lse, rows), problem.dtype) == []


def test_the_ops_launcher_hands_the_views_over_uncopied(fa4):
    """Through the op's launcher as dispatch calls it (launch scalars appended, unchecked), in
    a CUDA graph too: the kernel gets the views themselves, and its o is the contiguous run's."""
    from autotune.ops.attention import ATTENTION

    kernel, problem, scalars = fa4
    seen = []

    def launch_with_scalars(*buffers, **kwargs):
        seen.append(buffers)
        return kernel(*buffers, *scalars, **kwargs)

    qkv, (q, k, v) = fused(1)
    args = (q, k, v, True)
    launch = ATTENTION.launcher(args, ATTENTION.call_problem(args), launch_with_scalars)
    o = launch(args, None)
    want_o, _ = contiguous_run(fa4, q, k, v)
    torch.cuda.synchronize()
    (bq, bk, bv, _, _), = seen
    assert bq is q and bk is k and bv is v
    assert torch.equal(o, want_o)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o = launch(args, None)
    qkv.copy_(fused(2)[0])  # the replay reads the projection's current contents
    graph.replay()
    want_o, _ = contiguous_run(fa4, q, k, v)
    torch.cuda.synchronize()
    assert torch.equal(o, want_o)


def test_views_the_kernel_cannot_take_are_refused_unchecked(fa4):
    """Even unchecked, before anything is launched: a view of LSE (written through a pointer)
    and a q whose head stride TMA cannot take."""
    import tirx

    kernel, _, scalars = fa4
    _, (q, k, v) = fused(3)
    o = torch.full((B, S, HQ, D), NAN, device="cuda", dtype=torch.bfloat16)
    lse = torch.full((B, HQ, S), NAN, device="cuda")
    with pytest.raises(tirx.LayoutError, match="LSE must be contiguous.*through a pointer"):
        kernel(q, k, v, o, lse.transpose(1, 2).contiguous().transpose(1, 2), *scalars,
               check=False)
    odd = torch.zeros(B, S, HQ, D + 1, device="cuda", dtype=torch.bfloat16)[..., :D]
    with pytest.raises(tirx.LayoutError, match="Q has shape .* stride of 258 bytes"):
        kernel(odd, k, v, o, lse, *scalars, check=False)
    torch.cuda.synchronize()
    assert o.isnan().all() and lse.isnan().all()  # nothing ran
