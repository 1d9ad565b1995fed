"""The fa4_sm100 plugin: the spaces conformance kit (its default compiles for sm_100a), and what
the plugin adds to the template (kernels/fa4/sm100.py): the template's rules as the space's
violations, its default, the rescale threshold as a launch scalar, one binary per (heads,
head_dim, causal, dtype), the proxy shape NumSim validates at."""

import dataclasses

import pytest

from autotune.ops.attention import ATTENTION, fa4_problem
from autotune.runner.base import Candidate
from autotune.runner.compile import CompileMemo
from autotune.spaces.fa4_sm100 import PROXY_SEQLEN, Fa4Sm100Space, kernel_config, proxy
from kernels.fa4 import sm100 as template
from tests.attention_kit import AttentionSpaceKit

SPACE = Fa4Sm100Space()


class TestFa4Sm100Conformance(AttentionSpaceKit):
    space = SPACE


def test_violations_are_the_template_rules_sentences():
    p = SPACE.parse_problem("1x4096/16/128")
    config = {**SPACE.default_config(p), "s_stages": 2, "kv_stages": 4}  # TMEM and smem overflow
    reasons = SPACE.violations(config, p)
    assert reasons == template.config_violations(kernel_config(config), fa4_problem(p), 8)
    assert any(r.startswith("TMEM:") for r in reasons)
    assert any(r.startswith("shared memory") for r in reasons)
    assert SPACE.violations({**config, "blk_n": 96}, p) == [
        f"blk_n=96 is not one of {template.KNOBS['blk_n']}"]
    assert any("knob rescale_threshold is missing" in r for r in SPACE.violations(
        {k: v for k, v in config.items() if k != "rescale_threshold"}, p))


def test_the_threshold_rule_is_the_templates():
    p = SPACE.parse_problem("1x256/2/128", dtype="float16")
    base = SPACE.default_config(p)
    assert SPACE.violations({**base, "rescale_threshold": 12}, p) == []
    assert template.config_violations(kernel_config(base), fa4_problem(p), 16) == [
        "rescale_threshold=16 overflows fp16 P (it reaches 2^threshold; fp16 stops at 65504): "
        "at most 15"]


@pytest.mark.parametrize("causal", [False, True])
def test_default_is_the_template_default_at_threshold_8(causal):
    p = SPACE.parse_problem("2x1000/16:4/128" + ("/causal" if causal else ""))
    default = SPACE.default_config(p)
    assert kernel_config(default) == template.default_config(fa4_problem(p))
    assert default["rescale_threshold"] == 8 and default["scheduler"] == ("lpt" if causal else "linear")


def test_problems_the_template_cannot_run_are_refused_by_its_rules():
    with pytest.raises(ValueError, match="head_dim=96 must be 64 or 128"):
        SPACE.parse_problem("1x128/8/96")
    with pytest.raises(ValueError, match="GQA group heads_q/heads_kv=3 must divide 128"):
        SPACE.parse_problem("1x128/6:2/128")


def test_the_threshold_is_the_kernels_launch_scalar_and_shares_a_binary():
    p = SPACE.parse_problem("1x4096/16/128/causal")
    base = SPACE.default_config(p)
    assert SPACE.launch_scalars({**base, "rescale_threshold": 4}) == [4]
    assert SPACE.compile_key({**base, "rescale_threshold": 0}) == SPACE.compile_key(base)
    prim_func = SPACE.build(base, p)
    assert [param.name for param in prim_func.params] == [
        "Q", "K", "V", "O", "LSE", "rescale_threshold"]


def test_the_runner_compiles_once_per_heads_head_dim_causal_and_dtype():
    def memo_key(text):
        p = SPACE.parse_problem(text)
        return CompileMemo.key(Candidate(SPACE, SPACE.default_config(p), p))

    assert len({memo_key(t) for t in ("16x1024/16/128", "1x16384/16/128", "3x1000x2000/16/128")}) == 1
    assert len({memo_key(t) for t in ("1x1024/16/128", "1x1024/16:4/128", "1x1024/16/64",
                                      "1x1024/16/128/causal")}) == 4


def test_seed_configs_are_legal_neighbours_of_the_default():
    for text in SPACE.default_shapes:
        p = SPACE.parse_problem(text)
        base, seeds = SPACE.default_config(p), SPACE.seed_configs(p)
        assert len(seeds) >= 4 and base not in seeds
        for config in seeds:
            assert SPACE.violations(config, p) == []
            changed = {k for k in base if config[k] != base[k]}
            assert 1 <= len(changed) <= 2, changed


@pytest.mark.parametrize("text, heads, lengths", [
    ("1x4096/32:8/128/causal", (4, 1), (PROXY_SEQLEN, PROXY_SEQLEN)),
    ("16x1024/16/64", (2, 2), (PROXY_SEQLEN, PROXY_SEQLEN)),
    ("64x1x4096/32:8/128", (4, 1), (1, PROXY_SEQLEN)),
    ("2x100x300/4/128/causal", (2, 2), (100, 300)),
])
def test_the_proxy_keeps_the_problem_class_at_a_small_size(text, heads, lengths):
    p = SPACE.parse_problem(text)
    small, batch, seqlen_q, seqlen_k = proxy(p)
    assert (small.heads_q, small.heads_kv) == heads and (batch, seqlen_q, seqlen_k) == (1, *lengths)
    assert dataclasses.replace(small, heads_q=p["heads_q"], heads_kv=p["heads_kv"]) == fa4_problem(p)
    assert PROXY_SEQLEN % (2 * template.BLK_M)  # a ragged last query tile


def test_the_attention_op_is_shared_with_the_hopper_plugin():
    from autotune.spaces.fa4_sm90 import Fa4Sm90Space

    assert SPACE.op is ATTENTION is Fa4Sm90Space.op
    assert SPACE.parse_problem("4x1000/16/64") == Fa4Sm90Space().parse_problem("4x1000/16/64")
