"""The attention op (autotune/ops/attention.py) on the CPU: problems and their syntax, the
bucket rule, the inputs, the reference against the float64 numpy oracle, the vendor (torch
SDPA) against the reference with our conventions (bottom-right causal, GQA), and the torch
binding's checks, launcher and fake."""

import numpy as np
import pytest

from autotune.ops.attention import ATTENTION, BENCHMARK_SHAPES, fa4_problem, packs_heads, sdpa
from kernels.fa4 import reference

torch = pytest.importorskip("torch")


def problem(b=1, sq=128, sk=None, hq=4, hkv=None, d=64, causal=False, dtype="bfloat16"):
    return ATTENTION.problem(dtype, batch=b, seqlen_q=sq, seqlen_k=sk or sq, heads_q=hq,
                             heads_kv=hkv or hq, head_dim=d, causal=causal)


@pytest.mark.parametrize("text, want", [
    ("4x4096/32:8/128/causal", problem(4, 4096, hq=32, hkv=8, d=128, causal=True)),
    ("2x1x1000/16/64", problem(2, 1, 1000, hq=16, d=64)),
    ("1x127x4096/28:4/128", problem(1, 127, 4096, hq=28, hkv=4, d=128)),
    ("batch=1,seqlen_q=5,seqlen_k=7,heads_q=2,heads_kv=1,head_dim=64,causal=true",
     problem(1, 5, 7, hq=2, hkv=1, causal=True)),
])
def test_parse_and_short_syntax_round_trip(text, want):
    got = ATTENTION.parse(text)
    assert got == want
    assert ATTENTION.parse(ATTENTION.shape(got)) == got
    assert ATTENTION.from_key(got.key) == got


def test_causal_rows_without_keys_cannot_be_tuned_but_can_be_called():
    assert ATTENTION.untunable(ATTENTION.parse("1x100x200/8/128/causal")) == []
    assert ATTENTION.untunable(ATTENTION.parse("1x200x100/8/128")) == []
    reasons = ATTENTION.untunable(ATTENTION.parse("1x200x100/8/128/causal"))
    assert len(reasons) == 1 and "without a key" in reasons[0]


def test_benchmark_shapes_parse():
    problems = [ATTENTION.parse(s) for s in BENCHMARK_SHAPES]
    assert all(p["batch"] * p["seqlen_q"] == 16384 for p in problems[:8])
    assert not any(ATTENTION.untunable(p) for p in problems)


def test_a_dtype_the_kernels_lack_is_refused():
    with pytest.raises(ValueError, match="float32"):
        ATTENTION.parse("1x16/4/64", "float32")


@pytest.mark.parametrize("a, b, same", [
    (problem(sq=1000), problem(sq=1024), True),
    (problem(sq=1024), problem(sq=1025), False),
    (problem(sq=1, sk=1000), problem(sq=1, sk=1024), True),  # decode: the cache length
    (problem(sq=1, sk=1024), problem(sq=1, sk=4096), False),
    (problem(b=1), problem(b=16), True),  # batch only scales the grid
    (problem(hq=32, hkv=8), problem(hq=16, hkv=4), True),  # the GQA ratio is what counts
    (problem(hq=32, hkv=8), problem(hq=32, hkv=32), False),
    (problem(d=64), problem(d=128), False),
    (problem(causal=True), problem(causal=False), False),
    (problem(), problem(dtype="float16"), False),
])
def test_bucket_rounds_sequence_lengths_and_fixes_the_rest(a, b, same):
    assert (ATTENTION.bucket.bucket(a) == ATTENTION.bucket.bucket(b)) is same


def test_counts():
    p = problem(2, 1000, 4000, hq=16, hkv=4, d=128)
    assert ATTENTION.flops(p) == 4.0 * 2 * 16 * 1000 * 4000 * 128
    assert ATTENTION.flops(ATTENTION.parse("2x1000x4000/16:4/128/causal")) == ATTENTION.flops(p) / 2
    q_o, k_v, lse = 2 * 1000 * 16, 2 * 4000 * 4, 4 * 2 * 16 * 1000
    assert ATTENTION.bytes_moved(p) == 2 * 2 * 128 * (q_o + k_v) + lse
    assert fa4_problem(p).group == 4 and fa4_problem(p).scale == 128 ** -0.5


def test_inputs_are_the_kernels_parameters():
    p = problem(2, 5, 7, hq=4, hkv=2, d=64)
    q, k, v, o, lse = ATTENTION.make_inputs(p, seed=0, device="cpu")
    assert [tuple(t.shape) for t in (q, k, v, o, lse)] == [
        (2, 5, 4, 64), (2, 7, 2, 64), (2, 7, 2, 64), (2, 5, 4, 64), (2, 4, 5)]
    assert q.dtype == torch.bfloat16 and lse.dtype == torch.float32
    assert ATTENTION.output_indices(p) == [3, 4]
    again = ATTENTION.make_inputs(p, seed=0, device="cpu")
    assert torch.equal(q, again[0]) and not torch.equal(q, ATTENTION.make_inputs(p, 1, "cpu")[0])


@pytest.mark.parametrize("sq, sk, hq, hkv, causal", [
    (37, 37, 4, 4, False), (37, 37, 4, 1, True), (1, 50, 4, 2, True), (20, 50, 2, 2, True),
    (50, 20, 2, 1, True)])  # the last: rows with no key
def test_reference_matches_the_float64_oracle(sq, sk, hq, hkv, causal):
    p = problem(2, sq, sk, hq=hq, hkv=hkv, d=64, causal=causal)
    inputs = ATTENTION.make_inputs(p, seed=3, device="cpu")
    o, lse = ATTENTION.reference(p, inputs)
    want_o, want_lse = reference.attention(*(t.float().numpy() for t in inputs[:3]), causal)
    np.testing.assert_allclose(o.numpy(), want_o, atol=2e-6)
    np.testing.assert_allclose(lse.numpy(), want_lse, atol=2e-6)


@pytest.mark.parametrize("sq, sk, hq, hkv, causal", [
    (37, 37, 4, 1, True), (1, 50, 4, 2, False), (1, 50, 4, 2, True), (20, 50, 4, 4, True)])
def test_vendor_sdpa_computes_what_the_reference_does(sq, sk, hq, hkv, causal):
    """Bottom-right causal alignment and GQA grouping, through torch's own choice of backend."""
    p = problem(1, sq, sk, hq=hq, hkv=hkv, d=64, causal=causal, dtype="float16")
    inputs = ATTENTION.make_inputs(p, seed=1, device="cpu")
    want = ATTENTION.reference(p, inputs)[0]
    got = sdpa(*inputs[:3], causal)
    assert tuple(got.shape) == tuple(inputs[0].shape)
    assert float((got.float() - want).abs().max()) < 2e-2


def test_call_problem_reads_the_call():
    q = torch.empty(2, 9, 32, 128, dtype=torch.bfloat16)
    k = torch.empty(2, 40, 8, 128, dtype=torch.bfloat16)
    want = problem(2, 9, 40, hq=32, hkv=8, d=128, causal=True)
    assert ATTENTION.call_problem((q, k, k, True)) == want
    assert ATTENTION.call_problem((q, k, k))["causal"] is False
    assert ATTENTION.call_key((q, k, k, True)) != ATTENTION.call_key((q, k, k, False))


@pytest.mark.parametrize("shapes, dtypes, words", [
    (((2, 9, 32, 128), (2, 40, 8, 128), (2, 41, 8, 128)), None, "two equal"),
    (((2, 9, 32, 128), (1, 40, 8, 128), (1, 40, 8, 128)), None, "two equal"),
    (((2, 9, 32, 64), (2, 40, 8, 128), (2, 40, 8, 128)), None, "two equal"),
    (((9, 32, 128), (40, 8, 128), (40, 8, 128)), None, "two equal"),
    (((2, 9, 32, 128), (2, 40, 5, 128), (2, 40, 5, 128)), None, "multiple of heads_kv=5"),
    (((2, 9, 4, 64),) * 3, (torch.bfloat16, torch.float16, torch.float16), "different dtypes"),
    (((2, 9, 4, 64),) * 3, (torch.float32,) * 3, "float32"),
])
def test_calls_no_kernel_can_serve_are_refused_by_name(shapes, dtypes, words):
    dtypes = dtypes or (torch.bfloat16,) * 3
    args = tuple(torch.empty(s, dtype=dt) for s, dt in zip(shapes, dtypes))
    with pytest.raises(ValueError, match=words):
        ATTENTION.call_problem(args)


def fused_views(b=2, s=9, hq=4, hkv=1, d=64):
    """q, k, v as a fused qkv projection has them: strided views of one tensor."""
    qkv = torch.randn(b, s, (hq + 2 * hkv) * d, dtype=torch.bfloat16)
    return tuple(t.view(b, s, -1, d) for t in qkv.split([hq * d, hkv * d, hkv * d], dim=-1))


def test_launcher_passes_the_views_as_they_are_and_returns_o():
    """A fused qkv projection's q, k, v are strided views: the kernel (whose TMA descriptors
    take their strides) gets them uncopied, a fresh o and an lse of (batch, heads_q, seqlen_q)
    float32, and the call returns o."""
    q, k, v = fused_views()
    assert not any(t.is_contiguous() for t in (q, k, v))
    args = (q, k, v, True)
    p = ATTENTION.call_problem(args)
    seen = []

    def kernel(*buffers, check=True):
        seen.append(buffers)
        buffers[3].fill_(1.0)

    o = ATTENTION.launcher(args, p, kernel)(args, None)
    (bq, bk, bv, bo, lse), = seen
    assert bq is q and bk is k and bv is v
    assert o is bo and bool((o == 1).all()) and tuple(o.shape) == (2, 9, 4, 64)
    assert tuple(lse.shape) == (2, 4, 9) and lse.dtype == torch.float32
    out = torch.empty_like(q)
    assert ATTENTION.launcher(args, p, kernel)(args, out) is out
    assert seen[1][3] is out


def refusing_kernel(contiguous_only, seen):
    """A kernel as tirx.Kernel refuses a view it cannot take: before launching, with
    tirx.LayoutError; o filled with 1 where it runs."""
    from tirx import LayoutError

    def kernel(*buffers, check=True):
        seen.append(buffers)
        if not all(t.is_contiguous() for t in buffers):
            raise LayoutError("k: Q must be contiguous", contiguous_only=contiguous_only)
        buffers[3].fill_(1.0)

    return kernel


@pytest.mark.parametrize("contiguous_only", [True, False])
def test_a_kernel_that_refuses_views_gets_contiguous_copies(contiguous_only):
    """A binary that reads q through a pointer (contiguous_only) is handed copies from its first
    refusal on; one that only refused these strides is offered the views again next call. A
    strided `out` gets the kernel's contiguous o copied in."""
    q, k, v = fused_views()
    args = (q, k, v, True)
    seen = []
    launch = ATTENTION.launcher(args, ATTENTION.call_problem(args),
                                refusing_kernel(contiguous_only, seen))
    o = launch(args, None)
    assert len(seen) == 2 and seen[0][0] is q  # the views, refused; then copies
    assert all(t.is_contiguous() for t in seen[1][:4])
    assert torch.equal(seen[1][0], q) and torch.equal(seen[1][1], k) and torch.equal(seen[1][2], v)
    assert o is seen[1][3] and bool((o == 1).all())
    seen.clear()
    out = torch.zeros(2, 9, 8, 64, dtype=torch.bfloat16)[:, :, 2:6]  # a strided out
    assert launch(args, out) is out and bool((out == 1).all())
    assert len(seen) == (1 if contiguous_only else 2)
    assert seen[-1][3] is not out and seen[-1][3].is_contiguous()


def test_vendor_launcher_and_fake_have_the_kernels_output():
    p = problem(1, 7, 11, hq=4, hkv=2, d=64, causal=True)
    q, k, v, _, _ = ATTENTION.make_inputs(p, seed=0, device="cpu")
    o = ATTENTION.vendor_launcher((q, k, v, True), p)((q, k, v, True), None)
    assert o.is_contiguous() and o.shape == q.shape and o.dtype == q.dtype
    assert float((o.float() - ATTENTION.reference(p, [q, k, v, None, None])[0]).abs().max()) < 5e-2
    fake = ATTENTION.fake(q, k, v, True)
    assert fake.shape == q.shape and fake.dtype == q.dtype


def test_vendor_launcher_runs_cudnn_first_and_the_others_where_it_refuses(monkeypatch):
    """The vendor route runs what `vendor` timed (cuDNN), whatever order torch's process holds;
    the other backends stay enabled for the calls cuDNN refuses (all of them on a CPU, which
    this call still computes)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend

    seen, sdpa_fn = [], F.scaled_dot_product_attention

    def recording(*args, **kwargs):
        seen.append((torch._C._get_sdp_priority_order()[0],
                     torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.math_sdp_enabled()))
        return sdpa_fn(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", recording)
    before = torch._C._get_sdp_priority_order()
    p = problem(1, 7, 7, hq=4, hkv=2, d=64, causal=True)
    q, k, v, _, _ = ATTENTION.make_inputs(p, seed=0, device="cpu")
    o = ATTENTION.vendor_launcher((q, k, v, True), p)((q, k, v, True), None)
    assert seen == [(int(SDPBackend.CUDNN_ATTENTION), True, True)]
    assert torch._C._get_sdp_priority_order() == before  # the process's order is left as it was
    assert float((o.float() - ATTENTION.reference(p, [q, k, v, None, None])[0]).abs().max()) < 5e-2


def reference_kernel(problem):
    """A kernel as the launcher sees one: writes o and lse as `problem`'s reference has them."""

    def kernel(q, k, v, o, lse, check=True):
        assert (q.shape[1], q.shape[2]) == (problem["seqlen_q"], problem["heads_q"])
        ref_o, ref_lse = ATTENTION.reference(problem, [q, k, v, o, lse])
        o.copy_(ref_o)
        lse.copy_(ref_lse)

    return kernel


@pytest.mark.parametrize("causal", [False, True])
def test_a_gqa_decode_step_runs_with_its_heads_packed_into_rows(causal):
    """Decode of GQA 8:2: the kernel runs 4 query rows of 2 heads (one MHA problem), and the
    call still gets each query head's own attention."""
    p = problem(3, 1, 37, hq=8, hkv=2, d=64, causal=causal)
    q, k, v, _, _ = ATTENTION.make_inputs(p, seed=2, device="cpu")
    args = (q, k, v, causal)
    packed = ATTENTION.call_problem(args)
    assert packed == problem(3, 4, 37, hq=2, hkv=2, d=64, causal=False)
    o = ATTENTION.launcher(args, packed, reference_kernel(packed))(args, None)
    want = ATTENTION.reference(p, [q, k, v, None, None])[0]
    assert o.shape == q.shape and float((o.float() - want).abs().max()) < 1e-2
    out = torch.empty_like(q)
    assert ATTENTION.launcher(args, packed, reference_kernel(packed))(args, out) is out
    assert torch.equal(out, o)


def test_a_packed_decode_step_from_fused_views_copies_q_alone():
    """Packing the heads copies q (its rows are the group's heads); k and v go as they are."""
    q, k, v = fused_views(b=3, s=37, hq=8, hkv=2)
    q = q[:, -1:]  # the step's one query
    args = (q, k, v, True)
    packed = ATTENTION.call_problem(args)
    seen = []
    compute = reference_kernel(packed)

    def kernel(*buffers, check=True):
        seen.append(buffers)
        compute(*buffers)

    o = ATTENTION.launcher(args, packed, kernel)(args, None)
    (bq, bk, bv, _, _), = seen
    assert bq.is_contiguous() and tuple(bq.shape) == (3, 4, 2, 64)
    assert bk is k and bv is v and not k.is_contiguous()
    p = problem(3, 1, 37, hq=8, hkv=2, d=64, causal=True)
    want = ATTENTION.reference(p, [q, k, v, None, None])[0]
    assert float((o.float() - want).abs().max()) < 1e-2


@pytest.mark.parametrize("sq, hq, hkv, packs", [(1, 32, 8, True), (1, 8, 8, False),
                                                 (2, 32, 8, False), (4096, 32, 8, False)])
def test_only_decode_steps_of_gqa_are_packed(sq, hq, hkv, packs):
    assert packs_heads(sq, hq, hkv) is packs
    q = torch.empty(2, sq, hq, 64, dtype=torch.bfloat16)
    k = torch.empty(2, 50, hkv, 64, dtype=torch.bfloat16)
    got = ATTENTION.call_problem((q, k, k))
    assert (got["seqlen_q"], got["heads_q"]) == ((hq // hkv, hkv) if packs else (sq, hq))
