"""Numerical validation of one sm_100a GEMM config without a Blackwell GPU: simulate it in
NumSim (tirx/numsim.py) at a small shape that still exercises the whole machinery, and compare
with a float64 reference of the rounded inputs.

The shape: two cluster-tile rows plus an M tail, two cluster-tile columns, three K stages, and
a grid of two clusters, so every cluster runs two tiles (the accumulator barriers flip phase),
the A/B ring wraps, and the M tail is zero-filled on load and clipped on store.

    python -m kernels.gemm._sm100_numsim       # the defaults of the plugin's suite shapes
"""

from __future__ import annotations

import numpy as np
import tvm

from tirx import numsim

from .sm100 import GemmConfig, build

TOLERANCE = {"float16": 1e-2, "bfloat16": 2e-2}  # the plugin's (SearchSpace.tolerance)


def simulation_shape(cfg: GemmConfig) -> tuple[int, int, int]:
    return 2 * cfg.tile_m - 64, 2 * cfg.tile_n, 3 * cfg.blk_k


def _operand(rng, shape, dtype):
    """(what the kernel is given, the value it represents as float32)."""
    x = rng.standard_normal(shape).astype(np.float32)
    if dtype == "bfloat16":
        bits = numsim.bf16_bits(x)
        return bits, numsim.bf16_value(bits)
    half = x.astype(np.float16)
    return half, half.astype(np.float32)


def _poisoned_output(shape, dtype):
    # NaN everywhere: an element the kernel never writes fails the comparison.
    if dtype == "bfloat16":
        return np.full(shape, 0x7FC0, dtype=np.uint16)
    return np.full(shape, np.nan, dtype=np.float16)


def validate(cfg: GemmConfig, group_m: int, dtype: str = "bfloat16", seed: int = 0,
             cache_dir: str | None = None) -> numsim.Verdict:
    """Simulate `cfg` (a legal config) launched with `group_m` and compare; a skipped Verdict
    when NumSim can't run."""
    reason = numsim.unavailable_reason()
    if reason is not None:
        return numsim.Verdict(skipped=reason)
    M, N, K = simulation_shape(cfg)
    rng = np.random.default_rng(seed)
    a, a_val = _operand(rng, (M, K), dtype)
    b, b_val = _operand(rng, (N, K), dtype)
    d = _poisoned_output((M, N), dtype)
    prim_func = build(cfg, M, N, K, dtype, sm_count=2 * cfg.cluster, fixed_group_m=group_m)
    # NumSim binds buffers only: drop the (unused) launch argument from the signature.
    prim_func = prim_func.specialize({prim_func.params[3]: tvm.tirx.IntImm("int32", group_m)})
    out = numsim.simulate(prim_func, {"A": a, "B": b, "D": d}, outputs=["D"], cache_dir=cache_dir)
    expected = a_val.astype(np.float64) @ b_val.astype(np.float64).T
    return numsim.Verdict(error=numsim.relative_error(out["D"], expected),
                          tolerance=TOLERANCE[dtype])


def main() -> int:
    from autotune.spaces.gemm_sm100 import GemmSm100Space, kernel_config

    space = GemmSm100Space()
    failed = 0
    for problem in space.default_problems():
        config = space.default_config(problem)
        verdict = validate(kernel_config(config), config["group_m"])
        print(f"{problem.key}: default config: {verdict}")
        if verdict.skipped is not None:
            return 0
        failed += not verdict.ok
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
