"""The fa4_sm90 plugin: the spaces conformance kit, and what the plugin adds to the template's
config module (kernels/fa4/_sm90_config.py): its rules as the space's violations, its defaults,
launch scalars for the runtime knobs, one binary per (heads, head_dim, causal, dtype)."""

import pytest

from autotune.ops.attention import ATTENTION, fa4_problem
from autotune.spaces.fa4_sm90 import Fa4Sm90Space, sm_count
from kernels.fa4 import _sm90_config as rules
from kernels.fa4._sm90_config import AttentionSm90Config
from tests.attention_kit import AttentionSpaceKit

SPACE = Fa4Sm90Space()


class TestFa4Sm90Conformance(AttentionSpaceKit):
    space = SPACE


def test_violations_are_the_template_rules_sentences():
    p = SPACE.parse_problem("1x4096/16/128")
    config = {**SPACE.default_config(p), "consumers": 1, "pingpong": True, "consumer_regs": 160}
    reasons = SPACE.violations(config, p)
    assert reasons == rules.violations(AttentionSm90Config.from_dict(config), fa4_problem(p))
    assert any("pingpong needs at least two consumer warpgroups" in r for r in reasons)
    assert SPACE.violations({**config, "block_n": 200}, p) == [
        f"block_n=200 is not one of {rules.KNOBS['block_n']}"]
    assert any("knob stages is missing" in r for r in
               SPACE.violations({k: v for k, v in config.items() if k != "stages"}, p))


@pytest.mark.parametrize("d, causal", [(128, False), (128, True), (64, False), (64, True)])
def test_default_is_the_template_default(d, causal):
    p = SPACE.parse_problem(f"2x1000/16:4/{d}" + ("/causal" if causal else ""))
    assert SPACE.default_config(p) == rules.DEFAULTS[(d, causal)].as_dict()
    assert SPACE.violations(SPACE.default_config(p), p) == []


def test_a_head_dim_the_template_lacks_is_refused_for_tuning_and_named_for_dispatch():
    with pytest.raises(ValueError, match="head_dim=96 is not one of"):
        SPACE.parse_problem("1x128/8/96")
    p = ATTENTION.parse("1x128/8/96")  # a call dispatch meets: the default must name the rule
    assert any("head_dim=96" in r for r in SPACE.violations(SPACE.default_config(p), p))


def test_runtime_knobs_become_the_kernels_launch_scalars():
    p = SPACE.parse_problem("1x4096/16/128/causal")
    base = SPACE.default_config(p)
    assert SPACE.launch_scalars({**base, "persistent": True, "order": "lpt"}) == [sm_count(), 1]
    assert SPACE.launch_scalars({**base, "persistent": False, "order": "head"}) == [
        rules.NO_CTA_LIMIT, 0]
    assert SPACE.compile_key({**base, "persistent": True}) == SPACE.compile_key(
        {**base, "persistent": False, "order": "head"})


def test_one_binary_per_heads_head_dim_causal_and_dtype():
    a, b = SPACE.parse_problem("16x1024/16/128"), SPACE.parse_problem("1x16384/16/128")
    assert SPACE.binary_problem(a) == SPACE.binary_problem(b)
    for other in ("1x1024/16:4/128", "1x1024/16/64", "1x1024/16/128/causal"):
        assert SPACE.binary_problem(SPACE.parse_problem(other)) != SPACE.binary_problem(a)


def test_seed_configs_are_legal_neighbours_of_the_default():
    for text in SPACE.default_shapes:
        p = SPACE.parse_problem(text)
        base, seeds = SPACE.default_config(p), SPACE.seed_configs(p)
        assert seeds and base not in seeds
        for config in seeds:
            assert SPACE.violations(config, p) == []
            assert 1 <= sum(config[k] != base[k] for k in base) <= 1
