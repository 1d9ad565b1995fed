"""The sm_100a GEMM computed in NumSim, no stub: the plugin's default and a covering sample of
configs (every value of every knob at least once) against the float64 reference at two small
shapes, synccheck and racecheck on the default, and planted bugs that NumSim must catch. Where
NumSim cannot run (Python 3.11, no tirx-harness, no Rust) these skip with the reason.

A few tests stub the simulator at tirx.numsim's boundary to pin down the validator's own path
(shape choice, inputs, poisoning, specialization) on any machine.

Cost: each (config, shape) is its own kernel source, so its own cargo build (~5-15 s at -O0
after the simulator's engine is built once, ~2-3 min per engine variant on a cold cache);
CI runs every config at one shape and the default at both, `-m slow` the rest."""

import numpy as np
import pytest

from autotune.spaces.gemm_sm100 import DEFAULTS_BY_N, FALLBACK, KNOBS, kernel_config
from kernels.gemm import _sm100_kernel
from kernels.gemm import _sm100_numsim as sim
from tests.planted import planted
from tirx import numsim

REASON = numsim.unavailable_reason()
needs_numsim = pytest.mark.skipif(REASON is not None, reason=f"NumSim unavailable: {REASON}")

DEFAULT = dict(FALLBACK[1])  # the plugin's default for every shape its table does not name
# With the default, every value of every knob at least once (test_the_sample_covers_every_knob).
SAMPLE = {
    "n1024": dict(DEFAULTS_BY_N[1024][1]),  # blk_k 128, one consumer, paired MMA
    "n2048": dict(DEFAULTS_BY_N[2048][1]),  # epi_ld 64
    "multicast": dict(blk_n=64, blk_k=64, stages=7, epi_n=64, epi_ld=32, epi_stages=1,
                      cta_group=1, consumers=1, multicast=True, group_m=1),
    "n256": dict(blk_n=256, blk_k=64, stages=3, epi_n=128, epi_ld=64, epi_stages=2,
                 cta_group=1, consumers=1, multicast=False, group_m=16),
    "n192": dict(blk_n=192, blk_k=64, stages=2, epi_n=64, epi_ld=16, epi_stages=1,
                 cta_group=1, consumers=1, multicast=False, group_m=2),
    "deep_pair": dict(blk_n=32, blk_k=64, stages=8, epi_n=64, epi_ld=32, epi_stages=1,
                      cta_group=2, consumers=1, multicast=False, group_m=1),
    "two_consumers": dict(blk_n=128, blk_k=128, stages=2, epi_n=32, epi_ld=32, epi_stages=2,
                          cta_group=1, consumers=2, multicast=False, group_m=16),
    "six_stages": dict(blk_n=32, blk_k=64, stages=6, epi_n=32, epi_ld=16, epi_stages=1,
                       cta_group=1, consumers=1, multicast=False, group_m=4),
}
# Which shape CI simulates each sample config at (the other one runs under -m slow).
CI_SHAPE = {name: sim.SHAPES[i % 2] for i, name in enumerate(SAMPLE)}


def test_the_sample_covers_every_knob():
    configs = [DEFAULT, *SAMPLE.values()]
    for knob, values in KNOBS.items():
        assert {c[knob] for c in configs} == set(values), knob
    from autotune.spaces.gemm_sm100 import GemmSm100Space

    space = GemmSm100Space()
    for config in configs:
        for shape in sim.SHAPES:
            M, N, K = sim.simulation_shape(kernel_config(config), shape)
            assert not space.violations(config, space.parse_problem(f"{M}x{N}x{K}")), config
    assert set(CI_SHAPE.values()) == set(sim.SHAPES)


def _validate(config, shape, dtype="bfloat16"):
    return sim.validate(kernel_config(config), config["group_m"], dtype, shape=shape)


@needs_numsim
@pytest.mark.parametrize("shape", sim.SHAPES)
def test_default(shape):
    verdict = _validate(DEFAULT, shape)
    assert verdict.ok, str(verdict)


@needs_numsim
@pytest.mark.parametrize("name", SAMPLE)
def test_sample(name):
    verdict = _validate(SAMPLE[name], CI_SHAPE[name])
    assert verdict.ok, str(verdict)


@needs_numsim
@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLE)
def test_sample_at_the_other_shape(name):
    other, = set(sim.SHAPES) - {CI_SHAPE[name]}
    verdict = _validate(SAMPLE[name], other)
    assert verdict.ok, str(verdict)


@needs_numsim
def test_fp16():
    verdict = _validate(SAMPLE["n2048"], "tails", dtype="float16")
    assert verdict.ok, str(verdict)


@needs_numsim
@pytest.mark.parametrize("tool", numsim.CHECK_TOOLS)
def test_default_passes_synccheck_and_racecheck(tool):
    prim_func, inputs, _ = sim.simulation_case(kernel_config(DEFAULT), DEFAULT["group_m"])
    report = numsim.check(tool, prim_func, inputs)
    assert report.clean, report.text


@needs_numsim
def test_register_oversubscription_is_reported(monkeypatch):
    """The budget two epilogues took before kernels/registers.py (208 each next to a producer
    at 96, from a pool of three warpgroups at 168): the increase can never be met."""
    monkeypatch.setattr(type(kernel_config(DEFAULT)), "epilogue_regs", property(lambda self: 208))
    prim_func, inputs, _ = sim.simulation_case(kernel_config(DEFAULT), DEFAULT["group_m"])
    report = numsim.check("racecheck", prim_func, inputs)
    assert report.verdict == "error" and "setmaxnreg" in report.text


@needs_numsim
def test_a_wrong_tile_offset_gives_wrong_results(monkeypatch, tmp_path):
    # both CTAs of a pair load the first half of the B tile
    copy = planted(_sm100_kernel, "b_row = T.meta_var(n_idx * MMA_N + cbx * B_ROWS)",
                   "b_row = T.meta_var(n_idx * MMA_N)", tmp_path)
    monkeypatch.setattr(_sm100_kernel, "make_kernel", copy.make_kernel)
    verdict = _validate(DEFAULT, "tiles")
    assert not verdict.ok and verdict.skipped is None and verdict.error > 0.1, str(verdict)


@needs_numsim
def test_a_skipped_mbarrier_wait_is_a_race(monkeypatch, tmp_path):
    """The MMA issuer no longer waits for its stage's TMA loads. NumSim's one schedule lands
    the loads first, so the numbers still agree (checked here): the race is racecheck's."""
    copy = planted(_sm100_kernel, "tma2mma.wait(mma_ps.stage, mma_ps.phase)\n", "\n", tmp_path)
    monkeypatch.setattr(_sm100_kernel, "make_kernel", copy.make_kernel)
    assert _validate(DEFAULT, "tiles").ok
    prim_func, inputs, _ = sim.simulation_case(kernel_config(DEFAULT), DEFAULT["group_m"])
    report = numsim.check("racecheck", prim_func, inputs)
    assert report.verdict == "error" and "data_race" in report.text, report.text


# -- the validator's own path, the simulator stubbed -----------------------------------------

def _decode(x, dtype):
    return numsim.bf16_value(x) if dtype == "bfloat16" else x.astype(np.float32)


def numpy_gemm(prim_func, inputs, outputs, cache_dir):
    """What a correct kernel computes, from exactly the arrays the validator hands NumSim."""
    dtype = numsim.buffer_dtypes(prim_func)["A"]
    a, b = (_decode(inputs[n], dtype) for n in ("A", "B"))
    d = a.astype(np.float64) @ b.astype(np.float64).T
    return {"D": numsim.bf16_bits(d) if dtype == "bfloat16" else d.astype(np.float16)}


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
@pytest.mark.parametrize("shape", sim.SHAPES)
def test_the_validator_hands_numsim_poisoned_outputs_and_no_scalars(stubbed, dtype, shape):
    calls = stubbed(numpy_gemm)
    verdict = _validate(DEFAULT, shape, dtype)
    assert verdict.ok and verdict.error < 1e-2, str(verdict)
    (prim_func, inputs, outputs), = calls
    M, N, K = sim.simulation_shape(kernel_config(DEFAULT), shape)
    assert M % kernel_config(DEFAULT).tile_m  # an M tail either way
    carrier = np.uint16 if dtype == "bfloat16" else np.float16
    assert outputs == ["D"]
    assert {k: (v.shape, v.dtype) for k, v in inputs.items()} == {
        "A": ((M, K), carrier), "B": ((N, K), carrier), "D": ((M, N), carrier)}
    assert np.isnan(_decode(inputs["D"], dtype)).all()  # poisoned before the launch
    # NumSim binds buffers only: group_m is compiled in and its parameter specialized away
    assert [p.name for p in prim_func.params] == ["A", "B", "D"]


def test_the_shapes(stubbed):
    cfg = kernel_config(DEFAULT)  # tile 512 x 256, blk_k 64
    assert sim.simulation_shape(cfg, "tiles") == (960, 512, 192)
    assert sim.simulation_shape(cfg, "tails") == (264, 264, 192)
    with pytest.raises(ValueError, match="unknown simulation shape 'huge'"):
        sim.simulation_shape(cfg, "huge")
    calls = stubbed(numpy_gemm)
    _validate(DEFAULT, "tiles")
    assert "T.cta_id([4])" in calls[0][0].script()  # 2 clusters of 2 CTAs for 4 cluster tiles


def test_a_wrong_result_fails(stubbed):
    def unwritten_tail(prim_func, inputs, outputs, cache_dir):
        d = numpy_gemm(prim_func, inputs, outputs, cache_dir)["D"]
        d[-64:] = inputs["D"][-64:]
        return {"D": d}

    stubbed(unwritten_tail)
    verdict = _validate(DEFAULT, "tiles")
    assert not verdict.ok and verdict.error == float("inf")


def test_skipped_with_the_reason_when_numsim_is_missing(monkeypatch):
    monkeypatch.setattr(numsim, "unavailable_reason", lambda: "no Rust toolchain: cargo not on PATH")
    monkeypatch.setattr(numsim, "_harness_run", lambda *a: pytest.fail("simulator called"))
    verdict = _validate(DEFAULT, "tiles")
    assert verdict.skipped == "no Rust toolchain: cargo not on PATH" and not verdict.ok


def test_the_plugin_validates_through_the_kernel_validator(stubbed):
    from autotune.spaces.gemm_sm100 import GemmSm100Space

    calls = stubbed(numpy_gemm)
    space = GemmSm100Space()
    assert space.validate_numsim(DEFAULT, space.parse_problem("4096x4096x4096")).ok
    assert [tuple(p.shape) for p in calls[0][0].params] == [(960, 192), (512, 192), (960, 512)]
