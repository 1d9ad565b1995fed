"""The dispatcher as a model uses it, on a GPU: through the torch custom op inside torch.compile
and inside a captured CUDA graph. Kernels come from the artifact directory ($AUTOTUNE_ARTIFACTS,
prebuilt with `python -m autotune.dispatch prebuild`) or are compiled when TVM is installed."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU"),
]

SHAPES = ((64, 4096, 4096), (300, 1024, 1000))  # decode-like, and a ragged M with a K tail


@pytest.fixture(scope="module")
def gemm():
    import autotune
    from autotune.dispatch.torch_op import register_torch_op

    return register_torch_op(autotune.load("gemm"))


def _inputs(M, N, K, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=gen)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=gen) / K ** 0.5
    return x, w


def _close(y, x, w):
    ref = x.float() @ w.float().T
    return bool(torch.isfinite(y).all()) and (y.float() - ref).norm() / ref.norm() < 2e-2


@pytest.mark.parametrize("M, N, K", SHAPES)
def test_custom_op_under_torch_compile(gemm, M, N, K):
    def mlp(x, w):  # torch ops around ours, so the compiled graph is more than the op itself
        return torch.nn.functional.silu(gemm(x * 0.5, w)) + 1.0

    compiled = torch.compile(mlp, fullgraph=True)
    for seed in range(2):  # fresh inputs: a stale output cannot pass
        x, w = _inputs(M, N, K, seed)
        y = compiled(x, w)
        ref = torch.nn.functional.silu((x * 0.5).float() @ w.float().T) + 1.0
        assert y.shape == (M, N) and y.dtype == torch.bfloat16
        assert (y.float() - ref).norm() / ref.norm() < 2e-2


@pytest.mark.parametrize("M, N, K", SHAPES)
def test_custom_op_in_a_cuda_graph(gemm, M, N, K):
    x, w = _inputs(M, N, K, 0)
    gemm(x, w)  # warm-up outside capture: the kernel is loaded, not compiled, while capturing
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = gemm(x, w)
    for seed in (1, 2):
        x2, w2 = _inputs(M, N, K, seed)
        x.copy_(x2)
        w.copy_(w2)
        y.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert _close(y, x2, w2)


def test_first_use_times_on_the_gpu_serves_the_winner_and_remembers_it(tmp_path, monkeypatch):
    import autotune
    from autotune.dispatch.first_use import VENDOR, is_first_use

    monkeypatch.setenv("AUTOTUNE_CACHE", str(tmp_path))  # its store file, not the user's
    op = autotune.load("gemm", first_use=2)
    x, w = _inputs(333, 1024, 1000, 0)  # a shape no store holds: ragged M and K
    key = op.op.call_problem((x, w)).key
    assert key not in op.selector.entries
    y = op(x, w)
    assert _close(y, x, w)
    entry = op.selector.entries[key]
    assert is_first_use(entry) and len(entry.measured) == 2
    assert entry.vendor_ms > 0 and all(ms > 0 for ms in entry.measured.values())
    assert op.route(x, w).reason in ("exact", "vendor-faster") and VENDOR not in entry.measured
    later = autotune.load("gemm", first_use=2)  # another process's view: read back, not retimed
    assert later.selector.entries[key] == entry
