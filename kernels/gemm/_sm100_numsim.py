"""Numerical validation of one sm_100a GEMM config without a Blackwell GPU: simulate it in
NumSim (tirx/numsim.py) at a small shape that still exercises the whole machinery, and compare
with a float64 reference of the rounded inputs.

Two shapes, each on a grid of two clusters:
- "tiles": two cluster-tile rows less 64 (an M tail), two tile columns, three K stages: every
  cluster runs two tiles (the accumulator barriers flip phase), the A/B ring wraps, the M tail
  is zero-filled on load and clipped on store;
- "tails": half a cluster tile of M plus 8 (with two CTAs or consumers, some of them own no
  valid row at all), one tile column plus an 8-column one, two K stages plus 64 (a K tail when
  blk_k is 128): every tile is partial.
"""

from __future__ import annotations

import numpy as np

from tirx import numsim

from .sm100 import GemmConfig, build

TOLERANCE = {"float16": 1e-2, "bfloat16": 2e-2}  # the plugin's (SearchSpace.tolerance)


SHAPES = ("tiles", "tails")


def simulation_shape(cfg: GemmConfig, shape: str = "tiles") -> tuple[int, int, int]:
    """(M, N, K) of one of the SHAPES for this config."""
    if shape == "tiles":
        return 2 * cfg.tile_m - 64, 2 * cfg.tile_n, 3 * cfg.blk_k
    if shape == "tails":
        return cfg.tile_m // 2 + 8, cfg.tile_n + 8, 2 * cfg.blk_k + 64
    raise ValueError(f"unknown simulation shape {shape!r}; one of {', '.join(SHAPES)}")


def simulation_case(cfg: GemmConfig, group_m: int, dtype: str = "bfloat16", seed: int = 0,
                    shape: str = "tiles"):
    """(PrimFunc, inputs by buffer name, float64 reference of D) for one simulated launch."""
    M, N, K = simulation_shape(cfg, shape)
    rng = np.random.default_rng(seed)
    a, a_val = numsim.operand(rng, (M, K), dtype)
    b, b_val = numsim.operand(rng, (N, K), dtype)
    inputs = {"A": a, "B": b, "D": numsim.poisoned((M, N), dtype)}
    prim_func = build(cfg, M, N, K, dtype, sm_count=2 * cfg.cluster, fixed_group_m=group_m)
    # NumSim binds buffers only: drop the (unused) launch argument from the signature.
    prim_func = prim_func.specialize({prim_func.params[3]: group_m})
    return prim_func, inputs, a_val.astype(np.float64) @ b_val.astype(np.float64).T


def validate(cfg: GemmConfig, group_m: int, dtype: str = "bfloat16", seed: int = 0,
             shape: str = "tiles", cache_dir: str | None = None) -> numsim.Verdict:
    """Simulate `cfg` (a legal config) launched with `group_m` at one of the SHAPES and
    compare; a skipped Verdict when NumSim can't run, a failed one when the kernel does not
    complete."""
    reason = numsim.unavailable_reason()
    if reason is not None:
        return numsim.Verdict(skipped=reason)
    prim_func, inputs, expected = simulation_case(cfg, group_m, dtype, seed, shape)
    return numsim.run_and_compare(prim_func, inputs, {"D": expected}, TOLERANCE[dtype],
                                  cache_dir=cache_dir)
