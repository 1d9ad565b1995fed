"""The Hopper attention template on the CPU: legality rules, defaults, and compiles for sm_90a
(registers, spills, shared memory, launch description)."""

import dataclasses
import math

import pytest

from kernels.fa4._sm90_config import (
    DEFAULTS,
    SMEM_LIMIT,
    AttentionSm90Config,
    compile_key,
    default_config,
    entry_registers,
    legal_configs,
    smem_bytes,
    violations,
)
from kernels.fa4.problem import AttentionProblem, flops

PROBLEM = AttentionProblem(head_dim=128, heads_q=32, heads_kv=8, causal=True)


def cfg(**kw):
    return AttentionSm90Config(**kw)


@pytest.mark.parametrize("config, problem, rule", [
    (cfg(block_n=200), PROBLEM, "multiple of 16"),
    (cfg(block_n=272), PROBLEM, "multiple of 16"),
    (cfg(consumers=4, consumer_regs=120), PROBLEM, "consumers=4 must be 1, 2 or 3"),
    (cfg(consumers=1, consumer_regs=256), PROBLEM, "pingpong needs at least two"),
    (cfg(stages=1), PROBLEM, "stages=1 must be at least 2"),
    (cfg(q_stages=3), PROBLEM, "q_stages=3 must be 1 or 2"),
    (cfg(q_stages=2, block_n=176), PROBLEM, "(2 Q tile(s) + 2 stages of K and V tiles of 176 x 128)"
     " exceeds the 232448 B"),
    (cfg(consumer_regs=244), PROBLEM, "multiple of 8"),
    (cfg(consumer_regs=160), PROBLEM, "must be 240 or 232"),
    (cfg(consumers=3, consumer_regs=168), PROBLEM, "leave the producer 8"),
    (cfg(block_n=256), PROBLEM, "cannot hold S, P and O fragments"),
    # the sweep's 4 spills: at q_stages 1 this config is legal (test below)
    (cfg(block_n=80, consumers=3, consumer_regs=160, pingpong=False, overlap=False, q_stages=2),
     PROBLEM, "plus 40 for the rest (q_stages=2): need 164"),
    (cfg(block_n=192, stages=3), PROBLEM, "exceeds the 232448 B"),
    (cfg(rescale_threshold=-1.0), PROBLEM, "must be >= 0"),
    (cfg(rescale_threshold=16.0), dataclasses.replace(PROBLEM, dtype="float16"),
     "past float16's largest value"),
    (cfg(order="random"), PROBLEM, "order='random' is not one of"),
    (cfg(ctas_per_sm=3), PROBLEM, "ctas_per_sm=3 must be 1 or 2"),
    (cfg(ctas_per_sm=2, block_n=64), PROBLEM, "must be 104 or 96 for 2 consumer warpgroups and 2"),
    (cfg(ctas_per_sm=2, consumers=1, pingpong=False, consumer_regs=232, block_n=128), PROBLEM,
     "exceeds the 115712 B a block may use with 2 CTA(s) per SM"),
    (cfg(), dataclasses.replace(PROBLEM, head_dim=96), "head_dim=96 is not one of"),
    (cfg(), dataclasses.replace(PROBLEM, heads_kv=6), "heads_q=32 must be a positive multiple"),
    (cfg(), dataclasses.replace(PROBLEM, dtype="float32"), "dtype 'float32' is not one of"),
])
def test_illegal_configs_are_refused_with_the_rule_they_break(config, problem, rule):
    assert any(rule in v for v in violations(config, problem)), violations(config, problem)


def test_a_second_q_stage_alone_makes_the_margin_short():
    one = cfg(block_n=80, consumers=3, consumer_regs=160, pingpong=False, overlap=False)
    assert violations(one, PROBLEM) == []
    assert len(violations(dataclasses.replace(one, q_stages=2), PROBLEM)) == 1


def test_build_refuses_an_illegal_config_before_tracing():
    from kernels.fa4.sm90 import build_attention

    with pytest.raises(ValueError, match="stages=1 must be at least 2"):
        build_attention(PROBLEM, cfg(stages=1))


def test_defaults_are_legal_and_the_space_holds_them():
    for (head_dim, causal), c in DEFAULTS.items():
        for hq, hkv in ((16, 16), (32, 8), (28, 4)):
            p = AttentionProblem(head_dim=head_dim, heads_q=hq, heads_kv=hkv, causal=causal)
            assert violations(c, p) == [] and default_config(p) == c
            assert compile_key(c) in {compile_key(x) for x in legal_configs(p)}


def test_shared_memory_counts_q_and_both_rings():
    c = cfg(block_n=176)
    assert smem_bytes(c, 128) == 1024 + (128 + 2 * 2 * 176) * 128 * 2 <= SMEM_LIMIT
    c = cfg(block_n=128, q_stages=2)
    assert smem_bytes(c, 128) == 1024 + (2 * 128 + 2 * 2 * 128) * 128 * 2 <= SMEM_LIMIT


def test_launch_knobs_share_a_binary():
    a, b = cfg(persistent=False, order="head"), cfg(persistent=True, order="group")
    assert compile_key(a) == compile_key(b) != compile_key(cfg(block_n=64))


def test_flops_count_causal_as_half():
    p = AttentionProblem(head_dim=128, heads_q=16, heads_kv=16, causal=False)
    assert flops(p, 2, 4096, 4096) == 4 * 2 * 16 * 4096 * 4096 * 128
    assert flops(dataclasses.replace(p, causal=True), 2, 4096, 4096) == flops(p, 2, 4096, 4096) / 2


# ---------------------------------------------------------------------------- compiles
@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("fa4_sm90_cache")


def compile_sm90(problem, config, cache):
    import tirx
    from kernels.fa4.sm90 import build_attention

    return tirx.build(build_attention(problem, config), "sm_90a", cache_dir=cache)


SAMPLE = [  # the defaults, and corners of the space: one consumer, three, no overlap, no pingpong
    *((AttentionProblem(head_dim=hd, heads_q=32, heads_kv=8, causal=c), DEFAULTS[(hd, c)])
      for hd, c in DEFAULTS),
    (PROBLEM, cfg(consumers=1, pingpong=False, consumer_regs=256, block_n=192)),
    (PROBLEM, cfg(overlap=False, stages=3, block_n=96)),
    (dataclasses.replace(PROBLEM, causal=False, dtype="float16"),
     cfg(pingpong=False, block_n=176, consumer_regs=232)),
    (PROBLEM, cfg(consumers=1, pingpong=False, consumer_regs=232, ctas_per_sm=2, block_n=96)),
    (PROBLEM, cfg(q_stages=2, rescale_threshold=8.0)),
]


@pytest.mark.parametrize("problem, config", SAMPLE, ids=lambda x: str(x)[:60])
def test_sample_compiles_for_sm90a_without_spills(problem, config, cache):
    art = compile_sm90(problem, config, cache)
    res, launch = art.resources, art.launch
    assert res.spill_bytes == 0 and res.stack_frame_bytes == 0, art.ptxas_log
    # setmaxnreg honored (C7504/C7508 say ignored): every thread starts at the block's cap, and
    # the warpgroups' budgets fit in what they share (an inc past it would wait forever)
    assert "C7504" not in art.ptxas_log and "C7508" not in art.ptxas_log, art.ptxas_log
    C = config.consumers
    assert res.registers == entry_registers(launch.threads, config.ctas_per_sm)
    assert f"__launch_bounds__({launch.threads}, {config.ctas_per_sm})" in art.source
    assert config.producer_regs + C * config.consumer_regs <= (C + 1) * res.registers
    assert launch.block == (128 * (config.consumers + 1), 1, 1)
    assert launch.dynamic_smem == smem_bytes(config, problem.head_dim)
    assert f"setmaxnreg.inc.sync.aligned.u32 {config.consumer_regs}" in art.source
    # runtime sizes: Q, K, V, O, LSE with their named dims, then the two launch knobs
    d, hq, hkv = problem.head_dim, problem.heads_q, problem.heads_kv
    assert [(a.name, a.shape) for a in launch.args] == [
        ("Q", ("B", "SQ", hq, d)), ("K", ("B", "SK", hkv, d)), ("V", ("B", "SK", hkv, d)),
        ("O", ("B", "SQ", hq, d)), ("LSE", ("B", hq, "SQ")), ("max_ctas", ()), ("order", ())]
    assert ("wgmma.mma_async.sync.aligned.m64n{}k16".format(problem.head_dim)) in art.source
    # warp shuffles run on every lane: none may sit in an arm of a ?: (the causal hang of
    # 2026-11-23: a row-max reduction inside the conditional rescale's select)
    assert not [line for line in art.source.splitlines() if "warp_reduce" in line and "?" in line]


def test_the_grid_is_the_tiles_or_the_cta_limit(cache):
    from tirx.symbolic import evaluate
    from kernels.fa4._sm90_config import launch_scalars

    problem, config = SAMPLE[0]
    art = compile_sm90(problem, config, cache)
    shape = type("T", (), {})
    q = shape()
    q.shape = (2, 1000, problem.heads_q, 128)
    tiles = math.ceil(1000 / config.block_m) * problem.heads_q * 2
    for persistent, ctas in ((False, tiles), (True, 132)):
        scalars = launch_scalars(dataclasses.replace(config, persistent=persistent), 132)
        grid = [evaluate(g, (q, None, None, None, None, *scalars)) for g in art.launch.grid]
        assert grid == [ctas, 1, 1]
