"""The Hopper attention kernel against a float32 reference, on a Hopper GPU, from prebuilt
artifacts (no TVM there): run `python tests/fa4_sm90_kernels.py .prebuilt/fa4_sm90` on the CPU
machine and carry .prebuilt. Every check draws fresh random inputs and poisons the outputs with
NaN first, so an element the kernel never writes fails it.

A hung launch cannot be interrupted: a watchdog ends the process after HANG_S, writing the test
to $FA4_GPU_HUNG. With $FA4_GPU_DONE set, each finished test's id is appended there, so a driver
can start pytest again past the hung test (tests/gpu_fa4_sm90.sh)."""

import os
import threading

import pytest

import fa4_sm90_kernels as K
from kernels.fa4._sm90_config import ORDERS
from kernels.fa4.reference_torch import attention_reference, check_rows, errors, failures

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9,
                       reason="needs a Hopper GPU"),
]
TORCH_DTYPE = {"bfloat16": torch.bfloat16, "float16": torch.float16}
HANG_S = 10.0
_kernels = {}


def hung():
    """A launch did not finish: record the running test and end the process (exit 3)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
    with open(os.environ.get("FA4_GPU_HUNG", "fa4_gpu_hung.txt"), "a") as f:
        f.write(test + "\n")
    print(f"\nHANG {test}", flush=True)
    os._exit(3)


@pytest.fixture(autouse=True)
def record_done(request):
    yield
    if os.environ.get("FA4_GPU_DONE"):
        with open(os.environ["FA4_GPU_DONE"], "a") as f:
            f.write(request.node.nodeid + "\n")


def kernel(name):
    import tirx

    if name not in _kernels:
        art, problem, cfg = K.load(name)
        _kernels[name] = (tirx.Kernel(art), problem, cfg)
    return _kernels[name]


def run(name, batch, seqlen_q, seqlen_k, *, persistent=None, order=None, seed=0):
    """Launch `name` on fresh inputs; the failures of its output (empty when correct)."""
    from kernels.fa4._sm90_config import launch_scalars

    launch, problem, cfg = kernel(name)
    cfg = cfg if persistent is None else type(cfg)(**{**cfg.as_dict(), "persistent": persistent})
    cfg = cfg if order is None else type(cfg)(**{**cfg.as_dict(), "order": order})
    dt, d = TORCH_DTYPE[problem.dtype], problem.head_dim
    hq, heads_kv = problem.heads_q, problem.heads_kv
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(batch, seqlen_q, hq, d, dtype=dt, device="cuda", generator=g)
    k = torch.randn(batch, seqlen_k, heads_kv, d, dtype=dt, device="cuda", generator=g)
    v = torch.randn(batch, seqlen_k, heads_kv, d, dtype=dt, device="cuda", generator=g)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((batch, hq, seqlen_q), float("nan"), dtype=torch.float32, device="cuda")
    timer = threading.Timer(HANG_S, hung)
    timer.start()
    launch(q, k, v, o, lse, *launch_scalars(cfg, torch.cuda.get_device_properties(0)
                                            .multi_processor_count))
    torch.cuda.synchronize()
    timer.cancel()
    rows = check_rows(seqlen_q, "cuda", seed=seed)
    ref_o, ref_lse = attention_reference(q, k, v, problem.causal, problem.scale, rows)
    return failures(errors(o, lse, ref_o, ref_lse, rows), problem.dtype)


# (batch, seqlen_q, seqlen_k): every length of the issue, equal and unequal lengths (causal with
# seqlen_q > seqlen_k leaves the first rows with no key), batch > 1.
SHAPES = [(1, 1, 1), (2, 127, 127), (3, 1000, 1000), (1, 4096, 4096), (1, 16384, 16384),
          (2, 1, 1000), (1, 127, 4096), (2, 1000, 127), (1, 4096, 16384)]
MATRIX_CASES = [(n, s) for n in K.MATRIX for s in SHAPES
                if "hd64" not in n or s[2] <= 4096]  # head_dim 64: short lengths suffice


@pytest.mark.parametrize("name, shape", MATRIX_CASES, ids=[f"{n}-{'x'.join(map(str, s))}"
                                                          for n, s in MATRIX_CASES])
def test_default_configs_match_the_reference(name, shape):
    assert run(name, *shape, seed=hash(shape) % 1000) == []


@pytest.mark.parametrize("name", list(K.MATRIX))
@pytest.mark.parametrize("order", ORDERS)
def test_persistent_ctas_walk_several_tiles(name, order):
    """One CTA per SM, each walking several query tiles (384+ tiles at 3x1000 with 16+ heads),
    in every order: the K/V ring, the Q buffer and the ping-pong turns carry across tiles."""
    assert run(name, 3, 1000, 1300, persistent=True, order=order, seed=7) == []


@pytest.mark.parametrize("name", list(K.PREFETCH))
@pytest.mark.parametrize("order", ORDERS)
def test_a_second_q_stage_carries_across_tiles(name, order):
    """Two Q stages: a persistent CTA loads its next tile's Q during this one and hands a stage
    back one tile late; one CTA per tile and persistent, ragged and unequal lengths (causal
    with seqlen_q > seqlen_k: tiles with no key), every order."""
    for i, shape in enumerate(((3, 1000, 1300), (2, 1000, 127), (1, 4096, 4096), (2, 127, 127))):
        for persistent in (False, True):
            assert run(name, *shape, persistent=persistent, order=order, seed=i) == [], (
                shape, persistent)


@pytest.mark.parametrize("name", list(K.SWEEP))
def test_sampled_configs_match_the_reference(name):
    _, _, cfg = kernel(name)
    for shape in ((2, 1000, 1000), (1, 300, 1200)):
        assert run(name, *shape) == [], shape
    # the launch-time knobs share this binary: the other values must be right too, and a
    # persistent CTA walks several tiles here (256+ tiles)
    flipped = {"persistent": not cfg.persistent, "order": ORDERS[ORDERS.index(cfg.order) - 1]}
    assert run(name, 2, 513, 777, **flipped) == []
    assert run(name, 4, 1000, 1100, persistent=True, order=cfg.order) == []


@pytest.mark.parametrize("causal, seqlen_q, seqlen_k", [(False, 300, 1000), (True, 1000, 1000),
                                                        (True, 300, 1000)])
def test_reference_is_torch_sdpa_in_float32(causal, seqlen_q, seqlen_k):
    """The reference itself: torch's SDPA (math backend, float32) with GQA and, for unequal
    lengths, the bottom-right mask given explicitly."""
    from kernels.fa4.reference_torch import causal_mask

    q = torch.randn(2, seqlen_q, 8, 64, device="cuda")
    k, v = (torch.randn(2, seqlen_k, 2, 64, device="cuda") for _ in range(2))
    mask = causal_mask(seqlen_q, seqlen_k, "cuda") if causal else None
    want = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask,
        enable_gqa=True).transpose(1, 2)
    o, lse = attention_reference(q, k, v, causal, 64 ** -0.5)
    torch.testing.assert_close(o, want, rtol=1e-4, atol=1e-5)
    s = torch.einsum("bqhd,bkhd->bhqk", q, k.repeat_interleave(4, dim=2)) * 64 ** -0.5
    if causal:
        s = s.masked_fill(~mask, float("-inf"))
    torch.testing.assert_close(lse, torch.logsumexp(s, -1), rtol=1e-5, atol=1e-5)
