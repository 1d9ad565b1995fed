"""The Hopper GEMM cost model ranks as the H100 measured, held busy at the power cap (what the
model is for: ranking the seeds a study and first use time first)."""

import pytest

from autotune.spaces.gemm_sm90 import GemmSm90Space

SPACE = GemmSm90Space()
T128x256 = dict(consumers=2, wg_m=64, blk_n=256, stages=4)
T192x192 = dict(consumers=3, wg_m=64, blk_n=192, stages=3)


def _ms(shape, **overrides):
    problem = SPACE.parse_problem(shape)
    config = {**SPACE.default_config(problem), **overrides}
    assert not SPACE.violations(config, problem)
    return SPACE.estimate_ms(config, problem)


def test_a_pair_that_pads_a_tile_row_is_charged_for_it():
    # 7 rows of 192-row tiles: 2x1 pairs launch 8. Measured 2.31 ms (1x2) against 2.60-2.65
    # (studies/2026-11-24-h100-gemm-s9/orient)
    shape = "1300x43008x14336"
    assert _ms(shape, **T192x192, cluster="1x2") < _ms(shape, **T192x192, cluster="2x1")


@pytest.mark.parametrize("shape", ["1300x43008x14336", "3100x8192x22016"])
def test_the_pair_that_multicasts_the_wider_operand_ranks_first(shape):
    # a CTA of a 1x2 pair of 128x256 tiles loads 64 + 256 rows a K step, of a 2x1 pair 128 +
    # 128: measured 1.25x and 1.65x slower despite 2x1's padding row (s9 orient, l2rows)
    assert _ms(shape, **T128x256, cluster="2x1") < _ms(shape, **T128x256, cluster="1x2")
