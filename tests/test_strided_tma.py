"""Strided views through TMA descriptors, on the CPU: which arguments a kernel takes strided
(ArgSpec.strided: reached only through tensor maps over its natural layout), the strides the
launcher encodes for a view, the TMA rules a view must keep, and the refusals naming them.
On a GPU: tests/test_strided_tma_gpu.py."""

import dataclasses
import json

import pytest

import tirx
from tirx.artifact import ArgSpec, LaunchSpec, ParamSpec, TensorMapSpec, mark_strided, strided_args
from tirx.errors import LaunchError, LayoutError
from tirx.launch import check_args, layout_error, layout_problems, tma_strides
from tirx.symbolic import evaluate

torch = pytest.importorskip("torch")

FA4 = "hd128_bfloat16_causal_32x8"  # GQA 32:8, causal, head_dim 128 (tests/fa4_sm90_kernels.py)
B, S, HQ, HKV, D = 2, 1000, 32, 8, 128


@pytest.fixture(scope="module")
def fa4():
    import fa4_sm90_kernels as K

    if not (K.PREBUILT / FA4 / "artifact.json").exists():
        pytest.importorskip("tvm", reason=f"no prebuilt {FA4} and no TVM to build it")
    return K.load(FA4)[0]


def fused_qkv(b=B, s=S, hq=HQ, hkv=HKV, d=D, dtype=torch.bfloat16):
    """q, k, v as a decoder block has them: views of one (b, s, hq + 2 hkv, d) projection."""
    qkv = torch.empty(b, s, hq + 2 * hkv, d, dtype=dtype)
    return qkv.split([hq, hkv, hkv], dim=2)


def fa4_args(q, k, v, o=None, lse=None):
    o = torch.empty(q.shape, dtype=q.dtype) if o is None else o
    lse = torch.empty(q.shape[0], q.shape[2], q.shape[1]) if lse is None else lse
    return (q, k, v, o, lse, 132, 0)


# ----------------------------------------------------------------- which args may be strided
def test_fa4_takes_q_k_v_and_o_strided_and_lse_contiguous(fa4):
    """Q, K, V are read and O written only through TMA descriptors over their natural layout;
    LSE is written with buffer_store, through a pointer."""
    spec = fa4.launch
    assert [(a.name, a.strided) for a in spec.args] == [
        ("Q", True), ("K", True), ("V", True), ("O", True), ("LSE", False), ("max_ctas", False),
        ("order", False)]
    assert {p.arg for p in spec.params if p.kind == "pointer"} == {4}
    assert {m.arg for m in spec.tensor_maps} == {0, 1, 2, 3}


def test_the_maps_of_a_contiguous_tensor_get_their_natural_strides(fa4):
    """For a contiguous tensor the launcher's strides are the ones the kernel's maps record."""
    q, k, v = (t.contiguous() for t in fused_qkv(s=77))
    args = fa4_args(q, k, v)
    for m in fa4.launch.tensor_maps:
        t = args[m.arg]
        assert [evaluate(x, args) for x in m.global_dims] == list(reversed(t.shape))
        assert tma_strides(t.shape, t.stride(), 2) == tuple(evaluate(x, args)
                                                            for x in m.global_strides)


def test_the_small_kernels_mark_what_they_read_through_tma_alone():
    import tirx_kernels as K

    pytest.importorskip("tvm")
    scale = K.artifact("tma_scale_sm90").launch  # A through TMA, D through a pointer
    assert [(a.name, a.strided) for a in scale.args] == [("A", True), ("D", False)]
    rows = K.artifact("tma_rows_runtime_sm90").launch  # runtime sizes in Q's map
    assert [(a.name, a.strided) for a in rows.args] == [("Q", True), ("O", False), ("L", False)]


def spec_with(maps, params=(), shape=("B", "S", 4, 64), dtype="float16"):
    return LaunchSpec(symbol="k", args=(ArgSpec("X", shape, dtype), ArgSpec("Y", shape, dtype)),
                      params=tuple(params), tensor_maps=tuple(maps), grid=(1, 1, 1),
                      block=(128, 1, 1), cluster=None, dynamic_smem=0)


def tmap(dims, strides, offset=0, dtype="float16", arg=0):
    rank = len(dims)
    return TensorMapSpec(arg=arg, offset=offset, dtype=dtype, cu_dtype=6, global_dims=dims,
                         global_strides=strides, box_dims=(64,) + (1,) * (rank - 1),
                         element_strides=(1,) * rank, interleave=0, swizzle=0, l2_promotion=0,
                         oob_fill=0)


S_OF_X, B_OF_X = ("dim", 0, 1), ("dim", 0, 0)
NATURAL = tmap((64, 4, S_OF_X, B_OF_X), (128, 512, ("mul", S_OF_X, 512)))


@pytest.mark.parametrize("maps, params, strided", [
    ([NATURAL], [], {0}),
    # Y's map, its sizes read off X's tensor (equal names, equal sizes): natural too
    ([NATURAL, dataclasses.replace(NATURAL, arg=1)], [], {0, 1}),
    ([NATURAL], [ParamSpec("pointer", arg=0)], set()),  # a pointer too: the kernel's own layout
    ([NATURAL, tmap((64, 4, S_OF_X, B_OF_X), (128, 512, ("mul", S_OF_X, 512)), offset=128)],
     [], set()),  # a map from an offset: a sub-block
    ([tmap((64, 4, S_OF_X, B_OF_X), (128, 512, ("mul", S_OF_X, 1024)))], [], set()),  # strides
    ([tmap((64, 4, ("dim", 0, 0), ("dim", 0, 1)), (128, 512, ("mul", S_OF_X, 512)))], [],
     set()),  # B and S swapped: equal only where B == S
    ([tmap((32, 4, S_OF_X, B_OF_X), (128, 512, ("mul", S_OF_X, 512)), dtype="float32")], [],
     set()),  # the rows as float32 pairs
    ([tmap((64, 4, ("mul", S_OF_X, B_OF_X)), (128, 512))], [], set()),  # another rank
    ([], [ParamSpec("pointer", arg=1)], set()),  # no map at all
])
def test_only_whole_natural_maps_without_a_pointer_make_an_argument_strided(maps, params, strided):
    spec = spec_with(maps, params)
    assert strided_args(spec) == strided
    assert [a.strided for a in mark_strided(spec).args] == [i in strided for i in range(2)]


def test_an_old_artifact_has_its_strided_args_derived_on_load(fa4, tmp_path):
    """artifact.json written before ArgSpec.strided (the same format otherwise) loads with the
    field derived from what it records; a recorded value is kept as it is."""
    art = fa4.save(tmp_path / "new", source=False)
    meta = json.loads((art.path / "artifact.json").read_text())
    assert [a["strided"] for a in meta["launch"]["args"]] == [True] * 4 + [False] * 3
    assert tirx.Artifact.load(art.path).launch == fa4.launch
    old = art.save(tmp_path / "old", source=False)
    for a in meta["launch"]["args"]:
        del a["strided"]
    (old.path / "artifact.json").write_text(json.dumps(meta))
    assert tirx.Artifact.load(old.path).launch == fa4.launch
    for a in meta["launch"]["args"]:
        a["strided"] = False
    (old.path / "artifact.json").write_text(json.dumps(meta))
    assert not any(a.strided for a in tirx.Artifact.load(old.path).launch.args)


# ------------------------------------------------------------------------- strides and rules
def test_a_fused_projections_views_get_their_own_strides():
    q, k, v = fused_qkv(s=77)
    row = (HQ + 2 * HKV) * D * 2  # bytes from one token to the next in the projection
    assert q.stride() == (77 * (HQ + 2 * HKV) * D, (HQ + 2 * HKV) * D, D, 1)
    assert tma_strides(q.shape, q.stride(), 2) == (D * 2, row, 77 * row)  # innermost first
    assert tma_strides(k.shape, k.stride(), 2) == (D * 2, row, 77 * row)
    contiguous = q.contiguous()
    assert tma_strides(contiguous.shape, contiguous.stride(), 2) == (D * 2, HQ * D * 2,
                                                                     77 * HQ * D * 2)
    for t in (q, k, v):
        assert layout_problems(t.shape, t.stride(), 2, t.data_ptr()) == []


def test_a_dimension_of_size_one_takes_any_stride():
    """torch calls a tensor with size-1 dims contiguous whatever their strides: they address
    one index, and get the stride a contiguous tensor has there."""
    q = fused_qkv(b=1, s=1)[0]
    odd = q.as_strided(q.shape, (3, 5, D, 1))  # batch and sequence of size 1
    assert tma_strides(odd.shape, odd.stride(), 2) == (D * 2, HQ * D * 2, HQ * D * 2)
    assert layout_problems(odd.shape, odd.stride(), 2) == []


@pytest.mark.parametrize("shape, strides, itemsize, address, words", [
    ((2, 8, 64), (1024, 128, 2), 2, None, "innermost stride is 2 elements"),
    ((2, 8, 64), (1000, 65, 1), 2, None, "dimension 1 has a stride of 130 bytes"),
    ((2, 8, 64), (1 << 40, 64, 1), 2, None, "dimension 0 has a stride of 2199023255552 bytes"),
    ((2, 8, 64), (0, 64, 1), 2, None, "dimension 0 has a stride of 0 bytes"),  # expanded
    ((2, 8, 64), (256, 32, 1), 2, None, "not nested in memory"),  # rows overlap
    ((2, 8, 64), (512, 64, 1), 2, 0x1008, "address 0x1008 is not 16-byte aligned"),
])
def test_strides_tma_cannot_take_are_named_with_the_rule(shape, strides, itemsize, address, words):
    problems = layout_problems(shape, strides, itemsize, address)
    assert len(problems) == 1 and words in problems[0], problems


def test_empty_tensors_have_nothing_to_break():
    assert layout_problems((2, 0, 64), (7, 3, 5), 2) == []


# ------------------------------------------------------------------------------- refusals
def test_check_args_takes_the_fused_views(fa4):
    q, k, v = fused_qkv()
    assert not any(t.is_contiguous() for t in (q, k, v))
    check_args(fa4.launch, fa4_args(q, k, v))
    o_buffer = torch.empty(B, S, HQ + 8, D, dtype=torch.bfloat16)  # o written into a view
    check_args(fa4.launch, fa4_args(q, k, v, o=o_buffer[:, :, :HQ]))


def test_a_view_of_a_pointer_argument_is_refused_naming_it(fa4):
    q, k, v = fused_qkv()
    lse = torch.empty(B, S, HQ).transpose(1, 2)  # the right shape, not contiguous
    with pytest.raises(LayoutError, match=r"LSE must be contiguous, got shape \(2, 32, 1000\) "
                                          r"with strides \(32000, 1, 32\): the kernel reaches "
                                          r"it through a pointer") as e:
        check_args(fa4.launch, fa4_args(q, k, v, lse=lse))
    assert e.value.contiguous_only and isinstance(e.value, LaunchError)


@pytest.mark.parametrize("make, words", [
    (lambda: torch.empty(B, S, HQ, D + 8, dtype=torch.bfloat16)[..., :D], None),  # legal
    (lambda: torch.empty(B, S, HQ, D + 1, dtype=torch.bfloat16)[..., :D],
     "dimension 2 has a stride of 258 bytes"),
    (lambda: torch.empty(B, S, D, HQ, dtype=torch.bfloat16).transpose(2, 3),
     "innermost stride is 32 elements"),
    (lambda: torch.empty(B, S, HQ, D + 8, dtype=torch.bfloat16)[..., 1:D + 1],
     "is not 16-byte aligned"),
])
def test_a_view_tma_cannot_take_is_refused_with_the_rule(fa4, make, words):
    _, k, v = fused_qkv()
    q = make()
    if words is None:
        check_args(fa4.launch, fa4_args(q, k, v))
        return
    with pytest.raises(LayoutError, match=r"Q has shape \(2, 1000, 32, 128\) with strides "
                                          r".* which its TMA descriptors cannot take: .*"
                                          + words) as e:
        check_args(fa4.launch, fa4_args(q, k, v))
    assert not e.value.contiguous_only


def test_shape_and_dtype_are_still_checked_first(fa4):
    q, k, v = fused_qkv()
    with pytest.raises(LaunchError, match=r"K must be a bfloat16 tensor of shape \('B', 'SK', 8, "
                                          r"128\) with \{'B': 2\}, got bfloat16 "
                                          r"\(2, 1000, 16, 128\)"):
        check_args(fa4.launch, fa4_args(q, torch.cat([k, v], 2), v))
    lse = torch.empty(B, HQ, S + 1)
    with pytest.raises(LaunchError, match="LSE must be a contiguous float32 tensor"):
        check_args(fa4.launch, fa4_args(q, k, v, lse=lse))


def test_layout_error_passes_contiguous_tensors_and_pointers(fa4):
    assert layout_error(fa4.launch, 4, 0x1000) is None
    assert layout_error(fa4.launch, 4, torch.empty(B, HQ, S)) is None
