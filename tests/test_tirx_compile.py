"""The compile layer on a CPU-only machine: artifacts, launch descriptions, cache, errors."""

import pytest

import tirx
from tirx import compile as tirx_compile

import tirx_kernels as K


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "cache"


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_tma_kernel_artifact_matches_kernel_parameters(arch, cache):
    art = tirx.build(K.tma_scale(256, 512), arch, cache_dir=cache)
    spec = art.launch
    assert art.cubin[:4] == b"\x7fELF"
    assert f".target {arch}" not in art.source  # CUDA source, not PTX
    assert "cp.async.bulk.tensor" in art.source
    assert [(a.name, a.shape, a.dtype) for a in spec.args] == [
        ("A", (256, 512), "float16"), ("D", (256, 512), "float16")]
    # A reaches the kernel only as a TMA descriptor, D as a plain pointer.
    assert [p.kind for p in spec.params] == ["tensormap", "pointer"]
    assert spec.params[1].arg == 1 and spec.params[1].offset == 0
    (tmap,) = spec.tensor_maps
    assert tmap.arg == 0 and tmap.dtype == "float16" and tmap.cu_dtype == 6
    assert tmap.global_dims == (512, 256)  # innermost first
    assert tmap.global_strides == (512 * 2,)
    assert tmap.box_dims == (64, 64)
    assert tmap.swizzle == 3  # 128-byte swizzle, as the shared layout asks
    assert spec.grid == (4, 8, 1) and spec.block == (128, 1, 1) and spec.cluster is None
    assert spec.dynamic_smem >= 64 * 64 * 2
    res = art.resources
    assert res.spill_bytes == 0 and 0 < res.registers <= 255
    assert res.smem_bytes == spec.dynamic_smem + res.static_smem_bytes
    assert f"Function properties for {spec.symbol}" in art.ptxas_log


def test_scalar_parameters_are_caller_arguments_passed_by_value(cache):
    art = tirx.build(K.affine_index(256), "sm_90a", cache_dir=cache)
    spec = art.launch
    assert [(a.name, a.shape, a.dtype, a.kind) for a in spec.args] == [
        ("out", (256,), "int32", "buffer"), ("scale", (), "int32", "scalar"),
        ("bias", (), "int32", "scalar")]
    # The device kernel takes them in its own order; each traces back to its caller argument.
    assert sorted((p.kind, p.arg, p.dtype) for p in spec.params) == [
        ("pointer", 0, ""), ("scalar", 1, "int32"), ("scalar", 2, "int32")]
    assert tirx.Artifact.load(art.path).launch == spec


def test_cluster_dims_come_from_the_kernel(cache):
    art = tirx.build(K.cluster_rank(8, 2), "sm_90a", cache_dir=cache)
    assert art.launch.cluster == (2, 1, 1)
    assert art.launch.grid == (8, 1, 1)
    assert art.launch.cluster_size == 2
    assert "barrier.cluster" in art.source


def test_second_build_is_a_cache_hit(cache, monkeypatch):
    first = tirx.build(K.tma_scale(128, 128), "sm_90a", cache_dir=cache)

    def no_compile(*a, **k):
        raise AssertionError("a cached candidate was compiled again")

    monkeypatch.setattr(tirx_compile, "_lower", no_compile)
    again = tirx.build(K.tma_scale(128, 128), "sm_90a", cache_dir=cache)
    assert again.key == first.key and again.cubin == first.cubin and again.path == first.path
    # Another arch or another kernel is another entry.
    with pytest.raises(AssertionError, match="compiled again"):
        tirx.build(K.tma_scale(128, 128), "sm_100a", cache_dir=cache)
    with pytest.raises(AssertionError, match="compiled again"):
        tirx.build(K.tma_scale(128, 256), "sm_90a", cache_dir=cache)


def test_artifact_round_trips_through_disk(cache):
    art = tirx.build(K.tma_scale(128, 128), "sm_90a", cache_dir=cache)
    loaded = tirx.Artifact.load(art.path)
    assert loaded.launch == art.launch
    assert loaded.resources == art.resources
    assert loaded.cubin == art.cubin and loaded.source == art.source


def test_lowering_error_is_classified(cache):
    from tvm.script import tirx as T
    from tvm.script.tirx import tile as Tx

    @T.prim_func
    def bad(A: T.Buffer((64, 64), "float16")):
        T.device_entry()
        T.cta_id([1])
        tid = T.thread_id([128])
        pool = T.SMEMPool()
        bar = pool.alloc((1,), "uint64", align=8)
        s = pool.alloc((64, 64), "float16")
        pool.commit()
        if tid == 0:  # a Blackwell-only dispatch asked of a copy: TIRx refuses while lowering
            Tx.copy_async(s[:, :], A[0:64, 0:64], dispatch="tcgen05", mbar=bar.ptr_to([0]))

    with pytest.raises(tirx.CompileError) as e:
        tirx.build(bad, "sm_90a", cache_dir=cache)
    assert e.value.kind == "lowering"
    assert "no variant named 'tcgen05'" in str(e.value)  # the reason, not TVM's module dump


def test_nvrtc_error_keeps_the_compiler_message(cache):
    with pytest.raises(tirx.CompileError) as e:
        tirx.build(K.undefined_extern(), "sm_90a", cache_dir=cache)
    assert e.value.kind == "nvrtc"
    assert "no_such_device_function" in e.value.log


def test_over_budget_shared_memory_is_refused_before_nvrtc(cache, monkeypatch):
    def no_nvrtc(*a, **k):
        raise AssertionError("NVRTC ran for a config that cannot launch")

    monkeypatch.setattr(tirx_compile, "_nvrtc_ptx", no_nvrtc)
    with pytest.raises(tirx.ResourceLimitError) as e:
        tirx.build(K.tma_scale(128, 128, smem_pad=240 * 1024), "sm_90a", cache_dir=cache)
    assert e.value.kind == "resources"
    assert "shared memory" in str(e.value) and "232448 B per block" in str(e.value)


def test_ptxas_report_parsing():
    log = ("ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
           "ptxas info    : Function properties for k\n"
           "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
           "ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem\n")
    r = tirx_compile.parse_ptxas_log(log, "k", dynamic_smem=2048, threads=384)
    assert (r.registers, r.stack_frame_bytes, r.spill_bytes, r.smem_bytes) == (168, 16, 20, 3072)
    with pytest.raises(tirx.CompileError, match="no entry for other"):
        tirx_compile.parse_ptxas_log(log, "other", 0, 128)


def test_missing_jitlink_report_falls_back_to_ptxas(cache, monkeypatch):
    real = tirx_compile._assemble
    monkeypatch.setattr(tirx_compile, "_assemble", lambda ptx, arch: (real(ptx, arch)[0], ""))
    art = tirx.build(K.tma_scale(128, 128), "sm_90a", cache_dir=cache)
    assert art.cubin[:4] == b"\x7fELF"
    assert f"Function properties for {art.launch.symbol}" in art.ptxas_log
    assert art.resources.registers > 0 and art.resources.spill_bytes == 0
