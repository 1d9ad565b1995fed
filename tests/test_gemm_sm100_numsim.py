"""The sm_100a GEMM's NumSim validator. The simulator itself is stubbed at tirx.numsim's
boundary (`_harness_run`) with a numpy model of the kernel, so the validator's whole path
(shape choice, inputs, poisoning, reference, verdict) runs on any CPU; the real simulation runs
only where NumSim is available and is otherwise skipped with the reason."""

import numpy as np
import pytest

from autotune.spaces.gemm_sm100 import BOOK_STEP9, GemmSm100Space, kernel_config
from kernels.gemm import _sm100_numsim as sim
from tirx import numsim

SPACE = GemmSm100Space()
CONFIG = dict(BOOK_STEP9)
REASON = numsim.unavailable_reason()


def _decode(x, dtype):
    return numsim.bf16_value(x) if dtype == "bfloat16" else x.astype(np.float32)


def numpy_gemm(prim_func, inputs, outputs, cache_dir):
    """What a correct kernel computes, from exactly the arrays the validator hands NumSim."""
    dtype = str(prim_func.params[0].dtype)
    a, b = (_decode(inputs[n], dtype) for n in ("A", "B"))
    return {"D": a.astype(np.float64) @ b.astype(np.float64).T}


@pytest.fixture
def stubbed(monkeypatch):
    monkeypatch.setattr(numsim, "unavailable_reason", lambda: None)
    calls = []

    def install(model):
        def run(prim_func, inputs, outputs, cache_dir):
            calls.append((prim_func, inputs, outputs))
            return model(prim_func, inputs, outputs, cache_dir)

        monkeypatch.setattr(numsim, "_harness_run", run)
        return calls

    return install


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_correct_simulation_passes(stubbed, dtype):
    calls = stubbed(numpy_gemm)
    verdict = SPACE.validate_numsim(CONFIG, dtype=dtype, seed=3)
    assert verdict.ok and verdict.skipped is None, str(verdict)
    assert verdict.error < 1e-6 and verdict.tolerance == SPACE.tolerance(
        SPACE.parse_problem("64x64x64", dtype))
    (prim_func, inputs, outputs), = calls
    cfg = kernel_config(CONFIG)
    M, N, K = sim.simulation_shape(cfg)
    # two cluster tiles plus an M tail, two tile columns, three K stages
    assert (M, N, K) == (2 * 512 - 64, 512, 192) and M % cfg.tile_m
    assert outputs == ["D"] and set(inputs) == {"A", "B", "D"}
    carrier = np.uint16 if dtype == "bfloat16" else np.float16
    assert {k: (v.shape, v.dtype) for k, v in inputs.items()} == {
        "A": ((M, K), carrier), "B": ((N, K), carrier), "D": ((M, N), carrier)}
    assert np.isnan(_decode(inputs["D"], dtype)).all()  # poisoned before the launch
    # NumSim binds buffers only: group_m is compiled in and its parameter specialized away
    assert [tuple(p.shape) for p in prim_func.params] == [
        (M, K), (N, K), (M, N)]


def test_the_grid_is_shrunk_so_each_cluster_runs_two_tiles(stubbed):
    calls = stubbed(numpy_gemm)
    SPACE.validate_numsim(CONFIG)
    prim_func = calls[0][0]
    assert "T.cta_id([4])" in prim_func.script()  # 2 clusters of 2 CTAs for 4 cluster tiles


@pytest.mark.parametrize("fault", ["unwritten tail", "last K stage dropped", "stale tile"])
def test_a_wrong_simulation_fails(stubbed, fault):
    def faulty(prim_func, inputs, outputs, cache_dir):
        d = numpy_gemm(prim_func, inputs, outputs, cache_dir)["D"]
        if fault == "unwritten tail":
            d[-64:] = np.nan
        elif fault == "last K stage dropped":
            a, b = (numsim.bf16_value(inputs[n])[:, :-64] for n in ("A", "B"))
            d = a.astype(np.float64) @ b.astype(np.float64).T
        else:
            d[:128, :128] = d[128:256, :128]
        return {"D": d}

    stubbed(faulty)
    verdict = SPACE.validate_numsim(CONFIG)
    assert not verdict.ok and "FAILED" in str(verdict)


def test_skipped_with_the_reason_when_numsim_is_missing(monkeypatch):
    monkeypatch.setattr(numsim, "unavailable_reason", lambda: "no Rust toolchain: cargo not on PATH")
    monkeypatch.setattr(numsim, "_harness_run", lambda *a: pytest.fail("simulator called"))
    verdict = SPACE.validate_numsim(CONFIG)
    assert verdict.skipped == "no Rust toolchain: cargo not on PATH" and not verdict.ok
    assert str(verdict) == "NumSim skipped: no Rust toolchain: cargo not on PATH"


def test_main_reports_the_skip(monkeypatch, capsys):
    monkeypatch.setattr(numsim, "unavailable_reason", lambda: "tirx-harness is not installed")
    assert sim.main() == 0
    assert "NumSim skipped: tirx-harness is not installed" in capsys.readouterr().out


@pytest.mark.skipif(REASON is not None, reason=f"NumSim unavailable: {REASON}")
@pytest.mark.parametrize("config", [
    CONFIG,
    dict(CONFIG, cta_group=1, multicast=True, consumers=1, blk_n=64, epi_n=32, epi_ld=16),
    dict(CONFIG, cta_group=1, consumers=1, blk_n=128, blk_k=128, stages=2, epi_stages=2),
])
def test_real_numsim(config):
    verdict = SPACE.validate_numsim(config)
    assert verdict.ok, str(verdict)
