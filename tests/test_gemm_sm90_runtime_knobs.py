"""The Hopper GEMM's tile order (raster, group) is a launch parameter: configs that differ only
there share one binary, which takes the order at launch. CPU only (TVM lowers, nothing runs)."""

from __future__ import annotations

import pytest

from autotune.runner import Candidate
from autotune.runner.compile import CompileMemo
from autotune.spaces.gemm_sm90 import GemmSm90Space

SPACE = GemmSm90Space()
PROBLEM = SPACE.parse_problem("2048x4096x4096")
DEFAULT = SPACE.default_config(PROBLEM)
ORDERS = [{"raster": r, "group": g} for r in ("m", "n") for g in (1, 2, 4, 8, 16)]


def test_raster_and_group_are_runtime_knobs_passed_as_codes():
    assert SPACE.runtime_knobs == ("raster", "group")
    assert SPACE.launch_scalars({**DEFAULT, "raster": "n", "group": 16}) == [1, 16]
    assert SPACE.launch_scalars({**DEFAULT, "raster": "m", "group": 2}) == [0, 2]


def test_the_ten_orders_of_a_config_are_one_compile():
    configs = [{**DEFAULT, **order} for order in ORDERS]
    assert all(not SPACE.violations(c, PROBLEM) for c in configs)
    assert len({SPACE.compile_key(c) for c in configs}) == 1
    keys = {CompileMemo.key(Candidate(SPACE, c, PROBLEM)) for c in configs}
    assert len(keys) == 1
    assert SPACE.compile_key({**DEFAULT, "stages": 3}) != SPACE.compile_key(DEFAULT)


def test_the_kernel_takes_the_order_at_launch_and_ignores_the_configs_values():
    script = SPACE.build(SPACE.compile_config(DEFAULT), PROBLEM).script()
    assert script == SPACE.build({**DEFAULT, "raster": "n", "group": 1}, PROBLEM).script()
    assert "raster: T.int32" in script and "group: T.int32" in script


@pytest.mark.parametrize("order", [{"raster": "n", "group": 4}, {"raster": "m", "group": 16}])
def test_the_fixed_variant_compiles_the_order_in(order):
    fixed = SPACE.build_fixed({**DEFAULT, **order}, PROBLEM).script()
    other = SPACE.build_fixed({**DEFAULT, "raster": "m", "group": 1}, PROBLEM).script()
    assert fixed != other  # the order is in the code, not read from the parameters
    assert fixed != SPACE.build(SPACE.compile_config(DEFAULT), PROBLEM).script()
