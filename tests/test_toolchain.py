"""The CUDA compiler pieces come from pip's wheels when no toolkit is named; CUDA_PATH wins;
a missing piece is one error naming what to install."""

import os
from pathlib import Path

import pytest

import tirx
from tirx import compile as tirx_compile
from tirx import toolchain
from tirx.errors import CompileError

import tirx_kernels as K


@pytest.fixture
def no_cuda_path(monkeypatch, tmp_path):
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("AUTOTUNE_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_wheel_root_has_the_layout_tvm_expects(no_cuda_path):
    root = toolchain.cuda_root()
    wheels = toolchain._wheel_dir()
    assert wheels is not None and "site-packages" in str(wheels)
    assert os.environ["CUDA_PATH"] == str(root)
    assert (root / "include").resolve() == (wheels / "include").resolve()
    # TVM's NVRTC path adds CCCL only from targets/<triple>/include/cccl.
    assert (root / "targets" / toolchain._triple() / "include" / "cccl" / "cuda" / "std"
            / "cstdint").exists()
    assert (root / "bin" / "ptxas").exists()
    assert toolchain.describe()["cuda_source"] == "wheels"
    assert toolchain.cuda_root() == root  # made once, then reused


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_compiles_through_the_wheels_and_reads_the_ptxas_report(arch, no_cuda_path):
    art = tirx.build(K.tma_scale(256, 512), arch, use_cache=False)
    assert art.versions["cuda_source"] == "wheels"
    assert art.versions["nvidia-cuda-runtime"].startswith("13.0")
    assert art.cubin[:4] == b"\x7fELF"
    res = art.resources
    assert 0 < res.registers <= 255 and res.spill_bytes == 0
    assert f"Function properties for {art.launch.symbol}" in art.ptxas_log


def test_the_wheels_ptxas_assembles_and_reports(no_cuda_path):
    toolchain.cuda_root()
    func = K.tma_scale(256, 512)
    host, device_mod, device_target = tirx_compile._lower(func, "sm_90a")
    launch = tirx_compile.launch_spec(func, host)
    ptx = tirx_compile._nvrtc_ptx(tirx_compile._cuda_source(device_mod, device_target), "sm_90a")
    cubin, log = tirx_compile._assemble_with_ptxas(ptx, "sm_90a")
    res = tirx_compile.parse_ptxas_log(log, launch.symbol, launch.dynamic_smem, launch.threads)
    assert cubin[:4] == b"\x7fELF" and res.registers > 0 and res.spill_bytes == 0


def _toolkit_like(root: Path, wheels: Path) -> Path:
    """A system toolkit's layout: headers (and CCCL) under targets/<triple>/include only."""
    inc = root / "targets" / toolchain._triple() / "include"
    inc.parent.mkdir(parents=True)
    inc.symlink_to(wheels / "include")
    (root / "bin").symlink_to(wheels / "bin")
    return root


def test_cuda_path_names_a_toolkit_that_wins(no_cuda_path, monkeypatch):
    root = _toolkit_like(no_cuda_path / "toolkit", toolchain._wheel_dir())
    monkeypatch.setenv("CUDA_PATH", str(root))
    assert toolchain.cuda_root() == root
    assert toolchain.describe()["cuda_source"] == "toolkit"
    art = tirx.build(K.tma_scale(256, 512), "sm_90a", use_cache=False)
    assert art.versions["cuda_source"] == "toolkit" and art.resources.registers > 0


def test_an_incomplete_cuda_path_names_the_missing_pieces(no_cuda_path, monkeypatch):
    (no_cuda_path / "empty" / "include").mkdir(parents=True)
    monkeypatch.setenv("CUDA_PATH", str(no_cuda_path / "empty"))
    with pytest.raises(CompileError) as e:
        toolchain.cuda_root()
    assert e.value.kind == "toolchain"
    for wheel in ("nvidia-cuda-runtime", "nvidia-cuda-crt", "nvidia-cuda-cccl", "nvidia-cuda-nvcc"):
        assert wheel in str(e.value)
    assert "ptxas" in str(e.value) and "CUDA_PATH" in str(e.value)


def test_no_wheels_and_no_toolkit_says_what_to_install(no_cuda_path, monkeypatch):
    monkeypatch.setattr(toolchain, "_wheel_dir", lambda: None)
    monkeypatch.setattr(toolchain, "SYSTEM_ROOTS", ())
    with pytest.raises(CompileError, match="pip install .*nvidia-cuda-runtime") as e:
        tirx.build(K.tma_scale(256, 512), "sm_90a", use_cache=False)
    assert e.value.kind == "toolchain"


def test_tune_with_no_toolchain_is_one_line(no_cuda_path, monkeypatch, capsys):
    from autotune.cli import main

    monkeypatch.setattr(toolchain, "_wheel_dir", lambda: None)
    monkeypatch.setattr(toolchain, "SYSTEM_ROOTS", ())
    rc = main(["tune", "gemm_sm90", "--shapes", "256x256x256", "--trials", "1", "--compile-only",
               "--storage", f"sqlite:///{no_cuda_path / 's.db'}", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "no CUDA compiler pieces found" in err and "nvidia-cuda-nvcc" in err
