"""Attention through autotune's dispatch on a Hopper GPU: the torch custom op against the float32
reference (prefill causal GQA, a packed decode step), captured in a CUDA graph and replayed on
new inputs, and under torch.compile. Kernels come from an artifact directory
($AUTOTUNE_ARTIFACTS, made on a CPU machine by `python -m autotune.dispatch prebuild --space
fa4_sm90 --shapes 1x4x1025/8/128 1x512/32:8/128/causal`) or are built where TVM is."""

import warnings

import pytest

from kernels.fa4.reference_torch import attention_reference, check_rows, errors, failures

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9,
                       reason="needs a Hopper GPU"),
]


@pytest.fixture(scope="module")
def attention():
    import autotune
    from autotune.dispatch.torch_op import register_torch_op

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no attention store on this GPU: the defaults serve
        dispatcher = autotune.load("attention")
    register_torch_op(dispatcher)
    return dispatcher


def qkv(b, sq, sk, hq=32, hkv=8, d=128, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randn(b, s, h, d, device="cuda", generator=g, dtype=torch.bfloat16)
            for s, h in ((sq, hq), (sk, hkv), (sk, hkv))]


def check(o, q, k, v, causal):
    lse = torch.zeros(q.shape[0], q.shape[2], q.shape[1], device="cuda")  # o is what is checked
    rows = check_rows(q.shape[1], "cuda")
    ref_o, ref_lse = attention_reference(q, k, v, causal, q.shape[3] ** -0.5, rows)
    err = errors(o, lse, ref_o, ref_lse, rows)
    return [f for f in failures(err, "bfloat16") if not f.startswith("lse")]


@pytest.mark.parametrize("b, sq, sk, causal", [(1, 1000, 1000, True), (2, 1, 1025, False),
                                                (3, 1, 77, True), (1, 300, 1000, True)])
def test_dispatched_attention_is_correct(attention, b, sq, sk, causal):
    q, k, v = qkv(b, sq, sk)
    o = torch.ops.autotune.attention(q, k, v, causal)
    assert attention.route(q, k, v, causal).reason != "vendor"  # SDPA's answer proves nothing
    assert check(o, q, k, v, causal) == []


def test_captured_in_a_cuda_graph_it_replays_on_new_inputs(attention):
    q, k, v = qkv(2, 1, 1025)
    torch.ops.autotune.attention(q, k, v, False)  # the route and kernel load, outside capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o = torch.ops.autotune.attention(q, k, v, False)
    for seed in (1, 2):
        for static, new in zip((q, k, v), qkv(2, 1, 1025, seed=seed)):
            static.copy_(new)
        graph.replay()
        torch.cuda.synchronize()
        assert check(o, q, k, v, False) == []


def test_under_torch_compile(attention):
    q, k, v = qkv(1, 512, 512)
    assert attention.route(q, k, v, True).reason != "vendor"

    def block(q, k, v):
        return torch.ops.autotune.attention(q * 2, k, v, True).float().square().mean()

    compiled = torch.compile(block, fullgraph=True)
    assert torch.allclose(compiled(q, k, v), block(q, k, v), rtol=1e-3)
