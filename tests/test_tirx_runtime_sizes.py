"""Kernels with runtime sizes (buffer dims that are variables): one artifact for every size,
its grid, TMA descriptors and size parameters recorded as expressions of the caller's tensors."""

from types import SimpleNamespace

import pytest

import tirx
from tirx.errors import CompileError, LaunchError
from tirx.launch import check_args
from tirx.symbolic import evaluate, freeze, leaves

import tirx_kernels as K


@pytest.fixture(scope="module")
def art(tmp_path_factory):
    return tirx.build(K.tma_rows_runtime(H=4, D=64, BM=64), "sm_90a",
                      cache_dir=tmp_path_factory.mktemp("cache"))


def tensor(*shape, dtype="float16"):
    return SimpleNamespace(shape=shape, dtype=dtype, is_contiguous=lambda: True)


def test_buffer_dims_name_their_size_variables(art):
    assert [(a.name, a.shape) for a in art.launch.args] == [
        ("Q", ("B", "S", 4, 64)), ("O", ("B", "S", 4, 64)), ("L", ("B", 4, "S"))]


@pytest.mark.parametrize("B, S", [(1, 1), (2, 127), (3, 1000)])
def test_grid_and_descriptor_follow_the_tensors(art, B, S):
    q, d, lse = tensor(B, S, 4, 64), tensor(B, S, 4, 64), tensor(B, 4, S, dtype="float32")
    args = (q, d, lse)
    assert [evaluate(g, args) for g in art.launch.grid] == [-(-S // 64), B * 4, 1]
    (tmap,) = art.launch.tensor_maps
    assert [evaluate(x, args) for x in tmap.global_dims] == [64, 4, S, B]  # innermost first
    assert [evaluate(x, args) for x in tmap.global_strides] == [64 * 2, 4 * 64 * 2,
                                                                 S * 4 * 64 * 2]
    assert tmap.box_dims == (64, 1, 64, 1)
    sizes = {p.expr for p in art.launch.params if p.expr is not None}
    assert sizes <= {("dim", 0, 0), ("dim", 0, 1)}  # B and S, read off q
    assert leaves(art.launch.grid[0]) == {("dim", 0, 1)}


def test_runtime_sizes_round_trip_through_disk(art):
    assert tirx.Artifact.load(art.path).launch == art.launch
    assert freeze([["dim", 0, 1], 3]) == (("dim", 0, 1), 3)


def test_check_args_binds_sizes_across_tensors(art):
    spec = art.launch
    check_args(spec, (tensor(2, 100, 4, 64), tensor(2, 100, 4, 64), tensor(2, 4, 100, dtype="float32")))
    with pytest.raises(LaunchError, match=r"L must be .* shape \('B', 4, 'S'\) with "
                                          r"\{'B': 2, 'S': 100\}"):
        check_args(spec, (tensor(2, 100, 4, 64), tensor(2, 100, 4, 64),
                          tensor(2, 4, 99, dtype="float32")))
    with pytest.raises(LaunchError, match="Q has runtime sizes B, S: pass a tensor"):
        check_args(spec, (0x1000, tensor(2, 100, 4, 64), tensor(2, 4, 100, dtype="float32")))


def test_expression_arithmetic_is_tirs():
    args = (tensor(7, 3),)
    assert evaluate(("floordiv", ("sub", 0, ("dim", 0, 0)), 2), args) == -4  # floor, not trunc
    assert evaluate(("truncdiv", ("sub", 0, ("dim", 0, 0)), 2), args) == -3
    assert evaluate(("floormod", ("sub", 0, ("dim", 0, 0)), 2), args) == 1
    assert evaluate(("min", ("dim", 0, 1), ("mul", ("dim", 0, 0), 2)), args) == 3


def test_a_size_the_launch_cannot_compute_is_refused():
    from tvm.script import tirx as T

    @T.prim_func
    def kernel(out: T.Buffer((128,), "float32"), x: T.float32):
        T.device_entry()
        T.cta_id([T.cast(x, "int32")])  # a grid from a float argument: no integer expression
        tid = T.thread_id([128])
        out[tid] = x

    with pytest.raises(CompileError, match="launch dimension"):
        tirx.build(kernel, "sm_90a", use_cache=False)


def test_a_size_passed_twice_must_agree():
    spec = tirx.LaunchSpec(symbol="k", args=(tirx.artifact.ArgSpec("x", ("S", 8), "float16"),
                                             tirx.artifact.ArgSpec("S", (), "int32", "scalar")),
                           params=(), tensor_maps=(), grid=(1, 1, 1), block=(128, 1, 1),
                           cluster=None, dynamic_smem=0)
    check_args(spec, (tensor(5, 8), 5))
    with pytest.raises(LaunchError, match="S=4, but the tensors have S=5"):
        check_args(spec, (tensor(5, 8), 4))
