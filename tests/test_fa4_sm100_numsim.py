"""The sm_100a FA4 kernel computed in NumSim, no stub: the default and a sample of configs (every
value of every knob and every rescale threshold at least once) at batch 1, sequence lengths 256
and 384 (384 is no multiple of a block), causal and not, MHA and GQA 4:1, against the float64
reference, O and LSE both, outputs poisoned; synccheck and racecheck on the default; planted
bugs NumSim must catch. Where NumSim cannot run (Python 3.11, no tirx-harness, no Rust) these
skip with the reason.

Cost: each config x problem is its own kernel source, so its own cargo build (~15 s at -O0 once
the simulator's engine is built) and a 5-35 s simulation; one persistent CTA runs every task.
"""

import numpy as np
import pytest

from kernels.fa4 import _sm100_kernel
from kernels.fa4 import _sm100_numsim as sim
from kernels.fa4.problem import AttentionProblem
from kernels.fa4.sm100 import KNOBS, RESCALE_THRESHOLDS, Fa4Config, config_violations, default_config
from tests.planted import planted
from tirx import numsim

REASON = numsim.unavailable_reason()
needs_numsim = pytest.mark.skipif(REASON is not None, reason=f"NumSim unavailable: {REASON}")


def attention(gqa: bool, causal: bool, head_dim: int = 128, dtype: str = "bfloat16"):
    """MHA with two heads, or GQA 4:1 (four query heads on one K/V head)."""
    heads = (4, 1) if gqa else (2, 2)
    return AttentionProblem(head_dim, *heads, causal=causal, dtype=dtype)


# name: (config, problem, seqlen, rescale threshold)
CASES = {
    "default_mha": (None, attention(False, False), 256, 8),
    "default_gqa_causal": (None, attention(True, True), 384, 8),
    "q1_lpt_emu0": (Fa4Config(q_stages=1, kv_stages=2, softmax_regs=240, exp2_emu=0,
                              scheduler="lpt"), attention(False, True), 384, 8),
    "q1_s2_kv4": (Fa4Config(q_stages=1, kv_stages=4, s_stages=2, softmax_regs=208, exp2_emu=4),
                  attention(True, False), 256, 8),
    "n64_s2_kv4_lpt": (Fa4Config(kv_stages=4, s_stages=2, blk_n=64, softmax_regs=176,
                                 exp2_emu=4, scheduler="lpt"), attention(False, False), 384, 8),
    "kv2_always_rescale": (Fa4Config(kv_stages=2, exp2_emu=0), attention(True, True), 256, 0),
    "n64_s2_causal": (Fa4Config(s_stages=2, blk_n=64), attention(True, True), 384, 8),
    "q1_n64_lpt": (Fa4Config(q_stages=1, blk_n=64, softmax_regs=176, scheduler="lpt"),
                   attention(False, True), 256, 8),
    "n64_kv2_lpt_thr12": (Fa4Config(kv_stages=2, blk_n=64, exp2_emu=0, scheduler="lpt"),
                          attention(True, False), 384, 12),
    "q1_s2_n64_fp16": (Fa4Config(q_stages=1, kv_stages=2, s_stages=2, blk_n=64,
                                 softmax_regs=240, exp2_emu=4),
                       attention(False, False, dtype="float16"), 256, 8),
    "emu4_lpt_thr4": (Fa4Config(exp2_emu=4, scheduler="lpt"), attention(False, False), 384, 4),
    "q1_kv4_d64": (Fa4Config(q_stages=1, kv_stages=4), attention(True, True, head_dim=64), 384, 8),
    "n64_kv4_d64": (Fa4Config(kv_stages=4, blk_n=64), attention(False, True, head_dim=64), 256, 8),
}


def _config(case):
    cfg, problem, _, _ = CASES[case]
    return cfg or default_config(problem)


def test_the_sample_covers_every_knob_and_problem_kind():
    configs = [_config(c) for c in CASES]
    for knob, values in KNOBS.items():
        assert {getattr(c, knob) for c in configs} == set(values), knob
    assert {thr for *_, thr in CASES.values()} == set(RESCALE_THRESHOLDS)
    kinds = {(seqlen, p.causal, p.group > 1) for _, p, seqlen, _ in CASES.values()}
    assert kinds == {(s, c, g) for s in (256, 384) for c in (False, True) for g in (False, True)}
    for case, (_, problem, _, thr) in CASES.items():
        assert not config_violations(_config(case), problem, thr), case
    assert len(CASES) >= 11


@needs_numsim
@pytest.mark.parametrize("case", CASES)
def test_config_matches_the_reference(case):
    _, problem, seqlen, thr = CASES[case]
    verdict = sim.validate(_config(case), problem, 1, seqlen, seqlen, thr)
    assert verdict.ok, str(verdict)


@needs_numsim
@pytest.mark.parametrize("seqlen_q, seqlen_k", [(384, 256), (128, 384)])
def test_causal_with_unequal_lengths(seqlen_q, seqlen_k):
    """Bottom-right alignment: with more queries than keys the first 128 rows see no key
    (O = 0, LSE = +inf); with fewer, every query sees a prefix longer than itself."""
    problem = attention(True, True)
    verdict = sim.validate(default_config(problem), problem, 1, seqlen_q, seqlen_k)
    assert verdict.ok, str(verdict)


@needs_numsim
def test_a_skipped_rescale_gives_wrong_results(monkeypatch, tmp_path):
    # correction stops multiplying O by the rows' scale: the loud first keys, visited last,
    # move every row's reference by far more than the threshold
    copy = planted(_sm100_kernel, "o_reg[i] = o_reg[i] * acc_scale[0]", "o_reg[i] = o_reg[i]",
                   tmp_path)
    monkeypatch.setattr(_sm100_kernel, "make_kernel", copy.make_kernel)
    problem = attention(False, False)
    verdict = sim.validate(default_config(problem), problem, 1, 256, 256)
    assert not verdict.ok and verdict.skipped is None and verdict.error > 0.1, str(verdict)


@needs_numsim
@pytest.mark.slow
def test_a_skipped_p_wait_is_a_race(monkeypatch, tmp_path):
    """The MMA warp no longer waits for P before P V: racecheck sees the TMEM race."""
    copy = planted(_sm100_kernel, "p_full.wait(q, p_ps.phase)\n", "\n", tmp_path)
    monkeypatch.setattr(_sm100_kernel, "make_kernel", copy.make_kernel)
    problem = attention(False, False)
    prim_func, inputs, _ = sim.simulation_case(default_config(problem), problem, 1, 256, 256)
    report = numsim.check("racecheck", prim_func, inputs)
    assert report.verdict == "error", report.text


@needs_numsim
@pytest.mark.parametrize("tool", numsim.CHECK_TOOLS)
def test_default_passes_synccheck_and_racecheck(tool):
    """synccheck found the first protocol's overtakable wait (correction's wait for a task's last
    P V could see the next task's first P V finish first); this keeps it found."""
    problem = attention(True, True)
    prim_func, inputs, _ = sim.simulation_case(default_config(problem), problem, 1, 256, 256)
    report = numsim.check(tool, prim_func, inputs)
    assert report.clean, report.text


def test_the_inputs_are_poisoned_and_make_the_rescale_work():
    problem = attention(True, True)
    inputs, (q, k, v) = sim.simulation_inputs(problem, 1, 384, 384)
    assert {name: a.shape for name, a in inputs.items()} == {
        "Q": (1, 384, 4, 128), "K": (1, 384, 1, 128), "V": (1, 384, 1, 128),
        "O": (1, 384, 4, 128), "LSE": (1, 4, 384)}
    assert np.isnan(numsim.bf16_value(inputs["O"])).all() and np.isnan(inputs["LSE"]).all()
    # the first block's keys are loud: their scores dwarf the rest's
    assert np.abs(k[:, :sim.LOUD_KEYS]).mean() > 3 * np.abs(k[:, sim.LOUD_KEYS:]).mean()
