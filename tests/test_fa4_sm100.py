"""The sm_100a FA4 template's config and legality rules (no compiling): every rule a config
breaks is refused with a sentence naming it, the default is legal where the template applies,
and the resource arithmetic matches the kernel's allocations."""

import dataclasses

import pytest

from kernels import registers
from kernels.fa4 import sm100
from kernels.fa4.problem import AttentionProblem
from kernels.fa4.sm100 import Fa4Config, config_violations, default_config, legal_configs

GQA = AttentionProblem(128, 32, 8, causal=True)
MHA = AttentionProblem(128, 16, 16, causal=False)


@pytest.mark.parametrize("problem", [
    GQA, MHA, AttentionProblem(64, 8, 1, causal=False, dtype="float16"),
    AttentionProblem(128, 128, 1, causal=True), AttentionProblem(64, 4, 4, True, softmax_scale=0.1),
])
def test_the_default_is_legal(problem):
    cfg = default_config(problem)
    assert config_violations(cfg, problem) == []
    assert cfg.scheduler == ("lpt" if problem.causal else "linear")


def test_the_defaults_resources():
    cfg = default_config(MHA)
    # Q and O staging for two stages, three K/V stages, the mailbox, the barriers
    assert cfg.smem_bytes(128) == 1024 + 2 * 2 * 128 * 256 + 3 * 128 * 256 + 2 * 128 * 4 == 231424
    assert cfg.tmem_columns(128) == 512 and cfg.threads == 512 and cfg.warpgroups == 4
    # two softmax warpgroups, correction, the issue warpgroup: the CTA's whole register pool
    assert 2 * cfg.softmax_regs + cfg.correction_regs + sm100.ISSUE_REGS == registers.pool(4) == 512


def one_rule(cfg, problem=MHA, threshold=8):
    out = config_violations(cfg, problem, threshold)
    assert len(out) == 1, out
    return out[0]


def test_each_rule_is_a_sentence():
    assert one_rule(Fa4Config(s_stages=2)).startswith(
        "TMEM: q_stages*(s_stages*blk_n + head_dim) = 768 fp32 columns exceeds 512")
    assert one_rule(Fa4Config(kv_stages=4)).startswith("shared memory 264192 B")
    assert "leave the correction warpgroup 8 of the 512 per-thread pool, fewer than 56" in one_rule(
        Fa4Config(softmax_regs=208))
    assert one_rule(Fa4Config(q_stages=3)) == "q_stages=3 must be one of (1, 2)"
    assert one_rule(Fa4Config(scheduler="random")) == (
        "scheduler='random' must be one of ('linear', 'lpt')")
    fp16 = dataclasses.replace(MHA, dtype="float16")
    assert "overflows fp16 P" in one_rule(Fa4Config(), fp16, threshold=16)
    assert config_violations(Fa4Config(), MHA, 16) == []  # bf16 P reaches 2^16 safely
    assert "must be in [0, 30]" in one_rule(Fa4Config(), MHA, threshold=-1)
    assert "softmax_regs=176 is below the 184 that holds without spilling at blk_n=128" in (
        one_rule(Fa4Config(softmax_regs=176)))
    assert config_violations(Fa4Config(softmax_regs=176, blk_n=64), MHA) == []


def test_problems_the_template_does_not_take():
    assert "head_dim=96 must be 64 or 128" in one_rule(Fa4Config(), AttentionProblem(96, 8, 8, False))
    assert "group heads_q/heads_kv=3 must divide 128" in one_rule(
        Fa4Config(), AttentionProblem(128, 6, 2, False))
    assert "multiple of" in one_rule(Fa4Config(), AttentionProblem(128, 6, 4, False))
    assert "dtype" in one_rule(Fa4Config(), AttentionProblem(128, 8, 8, False, dtype="float32"))


def test_legal_configs_are_exactly_the_rule_abiding_ones():
    configs = legal_configs(GQA)
    assert default_config(GQA) in configs
    assert all(config_violations(c, GQA) == [] for c in configs)
    total = 1
    for values in sm100.KNOBS.values():
        total *= len(values)
    assert len(configs) == 336 < total
    # one query stage frees registers and TMEM: every softmax budget and S depth is legal there
    assert {c.softmax_regs for c in configs if c.q_stages == 1} == set(sm100.KNOBS["softmax_regs"])


def test_template_files_exist_and_cover_the_kernel():
    names = [f.rsplit("/", 1)[-1] for f in sm100.template_files()]
    assert names == ["sm100.py", "_sm100_kernel.py", "problem.py", "registers.py"]
