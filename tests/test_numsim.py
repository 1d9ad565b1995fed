"""tirx.numsim: the NumSim boundary. What the simulator itself computes is tested through the
kernels (tests/test_gemm_sm100_numsim.py, tests/test_fa4_sm100_numsim.py); here the boundary is
stubbed so every branch of our side runs on any machine."""

import numpy as np
import pytest
from tvm.script import tirx as T

from tirx import numsim


@T.prim_func
def copy_kernel(A: T.Buffer((4,), "bfloat16"), D: T.Buffer((4,), "bfloat16"),
                L: T.Buffer((4,), "float32")):
    for i in range(4):
        D[i] = A[i]
        L[i] = T.float32(0)


def test_reason_names_what_is_missing_here():
    reason = numsim.unavailable_reason()
    if reason is None:
        pytest.skip("NumSim is fully available on this machine")
    assert any(word in reason for word in ("Python >= 3.12", "tirx-harness", "Rust", "crates"))


@pytest.fixture
def everything_present(monkeypatch):
    monkeypatch.setattr(numsim.sys, "version_info", (3, 12, 3))
    monkeypatch.setattr(numsim, "_harness_installed", lambda: True)
    monkeypatch.setattr(numsim, "_missing_rust_tools", lambda: [])
    monkeypatch.setattr(numsim, "_crates_reachable", lambda: True)
    return monkeypatch


def test_reason_order_and_wording(everything_present):
    mp = everything_present
    assert numsim.unavailable_reason() is None
    mp.setattr(numsim, "_crates_reachable", lambda: False)
    assert "crates" in numsim.unavailable_reason()
    mp.setattr(numsim, "_missing_rust_tools", lambda: ["cargo"])
    assert numsim.unavailable_reason().startswith("no Rust toolchain: cargo not on PATH")
    mp.setattr(numsim, "_harness_installed", lambda: False)
    assert "tirx-harness is not installed" in numsim.unavailable_reason()
    mp.setattr(numsim.sys, "version_info", type("V", (tuple,), {"major": 3, "minor": 11})((3, 11)))
    assert numsim.unavailable_reason() == "tirx-harness needs Python >= 3.12 (this is 3.11)"


def test_rust_tools_are_found_in_rustups_folder_off_path(monkeypatch, tmp_path):
    bin_dir = tmp_path / ".cargo" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("cargo", "rustc"):
        (bin_dir / tool).write_text("#!/bin/sh\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert numsim._missing_rust_tools() == []
    (bin_dir / "rustc").unlink()
    assert numsim._missing_rust_tools() == ["rustc"]


def test_offline_cargo_counts_as_crate_access(monkeypatch):
    monkeypatch.setenv("CARGO_NET_OFFLINE", "true")
    assert numsim._crates_reachable()


def test_simulate_refuses_with_the_reason(monkeypatch):
    monkeypatch.setattr(numsim, "unavailable_reason", lambda: "no Rust toolchain: cargo not on PATH")
    called = []
    monkeypatch.setattr(numsim, "_harness_run", lambda *a: called.append(a))
    with pytest.raises(numsim.NumSimUnavailable, match="cargo not on PATH"):
        numsim.simulate(copy_kernel, {}, ["D"])
    assert called == []


def test_simulate_decodes_outputs_by_their_buffer_dtype(everything_present):
    seen = {}

    def fake_run(prim_func, inputs, outputs, cache_dir):
        seen.update(func=prim_func, outputs=outputs, cache_dir=cache_dir)
        # NumSim hands bf16 buffers back in the uint16 carrier they were given in
        return {"D": numsim.bf16_bits(np.array([1.0, -2.5, 0.0, 3.0], dtype=np.float32)),
                "L": np.arange(4, dtype=np.float32)}

    everything_present.delenv(numsim.OPT_LEVEL_ENV, raising=False)
    everything_present.setattr(numsim, "_harness_run", fake_run)
    out = numsim.simulate(copy_kernel, {"A": np.zeros(4, np.uint16)}, ["D", "L"], cache_dir="/c")
    assert seen == {"func": copy_kernel, "outputs": ["D", "L"], "cache_dir": "/c"}
    assert out["D"].dtype == np.float32 and out["D"].tolist() == [1.0, -2.5, 0.0, 3.0]
    assert out["L"].tolist() == [0.0, 1.0, 2.0, 3.0]
    # kernels are built at -O0 unless the caller chose a level
    assert numsim.os.environ[numsim.OPT_LEVEL_ENV] == "0"


def test_a_caller_set_opt_level_is_kept(everything_present):
    everything_present.setenv(numsim.OPT_LEVEL_ENV, "3")
    everything_present.setattr(numsim, "_harness_run", lambda *a: {"L": np.zeros(4, np.float32)})
    numsim.simulate(copy_kernel, {}, ["L"])
    assert numsim.os.environ[numsim.OPT_LEVEL_ENV] == "3"


def test_run_and_compare_verdicts(everything_present):
    mp = everything_present
    expected = {"L": np.array([1.0, 2.0, 2.0, 1.0])}
    mp.setattr(numsim, "_harness_run", lambda *a: {"L": np.array([1.0, 2.0, 2.0, 1.0], np.float32)})
    good = numsim.run_and_compare(copy_kernel, {}, expected, tolerance=1e-3)
    assert good.ok and good.error == 0.0 and str(good).startswith("NumSim passed")

    mp.setattr(numsim, "_harness_run", lambda *a: {"L": np.array([1.0, 2.0, 2.0, 2.0], np.float32)})
    bad = numsim.run_and_compare(copy_kernel, {}, expected, tolerance=1e-3)
    assert not bad.ok and bad.error == pytest.approx(1 / np.sqrt(10)) and "FAILED" in str(bad)

    def deadlock(*a):
        raise numsim.SimulationFailed("deadlock: warp 4 waits on mbarrier 2 forever")

    mp.setattr(numsim, "_harness_run", deadlock)
    hung = numsim.run_and_compare(copy_kernel, {}, expected, tolerance=1e-3)
    assert not hung.ok and hung.failure.startswith("deadlock")
    assert str(hung) == ("NumSim FAILED: the kernel did not complete: "
                         "deadlock: warp 4 waits on mbarrier 2 forever")

    mp.setattr(numsim, "unavailable_reason", lambda: "tirx-harness is not installed")
    skipped = numsim.run_and_compare(copy_kernel, {}, expected, tolerance=1e-3)
    assert not skipped.ok and str(skipped) == "NumSim skipped: tirx-harness is not installed"


def test_compare_names_the_worst_output():
    out = {"O": np.ones(4), "LSE": np.full(4, 2.0)}
    verdict = numsim.compare(out, {"O": np.ones(4), "LSE": np.full(4, 2.2)}, tolerance=0.2)
    assert verdict.worst == "LSE" and verdict.ok and "in LSE" in str(verdict)


def test_check_runs_the_named_analysis(everything_present):
    seen = []

    def fake_check(tool, prim_func, inputs):
        seen.append(tool)
        return numsim.CheckReport(tool=tool, verdict="clean", text=f"{tool} CLEAN")

    everything_present.setattr(numsim, "_harness_check", fake_check)
    report = numsim.check("racecheck", copy_kernel, {})
    assert report.clean and seen == ["racecheck"]
    assert not numsim.CheckReport("synccheck", "incomplete", "").clean
    with pytest.raises(ValueError, match="unknown NumSim check 'memcheck'"):
        numsim.check("memcheck", copy_kernel, {})


def test_operands_and_poison():
    rng = np.random.default_rng(0)
    bits, value = numsim.operand(rng, (3, 5), "bfloat16")
    assert bits.dtype == np.uint16 and np.array_equal(numsim.bf16_value(bits), value)
    half, value = numsim.operand(rng, (2,), "float16")
    assert half.dtype == np.float16 and np.array_equal(half.astype(np.float32), value)
    assert np.isnan(numsim.bf16_value(numsim.poisoned((2, 2), "bfloat16"))).all()
    assert np.isnan(numsim.poisoned((2,), "float16")).all()
    assert numsim.poisoned((2,), "float32").dtype == np.float32


def test_bf16_bits_round_to_nearest_even():
    x = np.array([1.0, -2.5, 1.00390625, 1.01171875, 3.0e38, 0.0], dtype=np.float32)
    bits = numsim.bf16_bits(x)
    assert bits.dtype == np.uint16
    assert bits[0] == 0x3F80 and bits[1] == 0xC020 and bits[5] == 0
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0)
    assert bits[2] == 0x3F80
    # 1 + 3*2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6)
    assert numsim.bf16_value(bits)[3] == np.float32(1.015625)
    back = numsim.bf16_value(bits)
    assert np.all(np.abs(back - x) <= np.abs(x) * 2.0 ** -8)


def test_relative_error():
    ref = np.array([[3.0, 4.0]])
    assert numsim.relative_error(ref, ref) == 0.0
    assert numsim.relative_error(ref * 1.01, ref) == pytest.approx(0.01)
    assert numsim.relative_error(np.array([[np.nan, 4.0]]), ref) == float("inf")
    assert numsim.relative_error(ref.T, ref) == float("inf")
    # matching infinities agree (an attention row that sees no key has LSE +inf) ...
    lse = np.array([np.inf, 1.0])
    assert numsim.relative_error(np.array([np.inf, 1.0]), lse) == 0.0
    # ... any other infinity does not
    assert numsim.relative_error(np.array([-np.inf, 1.0]), lse) == float("inf")
    assert numsim.relative_error(np.array([1.0, 1.0]), lse) == float("inf")


def test_verdict_wording():
    assert not numsim.Verdict(skipped="no Rust").ok
    assert str(numsim.Verdict(skipped="no Rust")) == "NumSim skipped: no Rust"
    good = numsim.Verdict(error=1e-3, tolerance=2e-2)
    bad = numsim.Verdict(error=0.1, tolerance=2e-2)
    assert good.ok and "passed" in str(good)
    assert not bad.ok and "FAILED" in str(bad)
