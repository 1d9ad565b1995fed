"""tirx.numsim: the optional NumSim boundary. The real simulator needs Python 3.12,
tirx-harness, a Rust toolchain and crates.io; these tests stub what is missing."""

import numpy as np
import pytest

from tirx import numsim


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
    assert numsim.unavailable_reason() == "no Rust toolchain: cargo not on PATH"
    mp.setattr(numsim, "_harness_installed", lambda: False)
    assert "tirx-harness is not installed" in numsim.unavailable_reason()
    mp.setattr(numsim.sys, "version_info", type("V", (tuple,), {"major": 3, "minor": 11})((3, 11)))
    assert numsim.unavailable_reason() == "tirx-harness needs Python >= 3.12 (this is 3.11)"


def test_offline_cargo_counts_as_crate_access(monkeypatch):
    monkeypatch.setenv("CARGO_NET_OFFLINE", "true")
    assert numsim._crates_reachable()


def test_simulate_refuses_with_the_reason(monkeypatch):
    monkeypatch.setattr(numsim, "unavailable_reason", lambda: "no Rust toolchain: cargo not on PATH")
    called = []
    monkeypatch.setattr(numsim, "_harness_run", lambda *a: called.append(a))
    with pytest.raises(numsim.NumSimUnavailable, match="cargo not on PATH"):
        numsim.simulate(object(), {}, ["D"])
    assert called == []


def test_simulate_passes_through_the_boundary(everything_present):
    seen = {}

    def fake_run(prim_func, inputs, outputs, cache_dir):
        seen.update(func=prim_func, inputs=inputs, outputs=outputs, cache_dir=cache_dir)
        return {"D": np.ones((2, 3), dtype=np.float16), "E": None}

    everything_present.setattr(numsim, "_harness_run", fake_run)
    out = numsim.simulate("f", {"A": np.zeros(1)}, ["D"], cache_dir="/c")
    assert seen == {"func": "f", "inputs": {"A": np.zeros(1)}, "outputs": ["D"], "cache_dir": "/c"}
    assert list(out) == ["D"] and out["D"].dtype == np.float32 and out["D"].shape == (2, 3)


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


def test_verdict_wording():
    assert not numsim.Verdict(skipped="no Rust").ok
    assert str(numsim.Verdict(skipped="no Rust")) == "NumSim skipped: no Rust"
    good = numsim.Verdict(error=1e-3, tolerance=2e-2)
    bad = numsim.Verdict(error=0.1, tolerance=2e-2)
    assert good.ok and "passed" in str(good)
    assert not bad.ok and "FAILED" in str(bad)
