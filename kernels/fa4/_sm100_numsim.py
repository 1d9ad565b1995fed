"""Numerical validation of one sm_100a FA4 config without a Blackwell GPU: simulate it in NumSim
(tirx/numsim.py) on a small attention problem and compare O and LSE with the float64 reference
(kernels/fa4/reference.py) of the rounded inputs.

The inputs make the online softmax work: the keys of the first block (visited last) are scaled
up, so their scores exceed the running reference by more than any rescale threshold and the
correction warpgroup has to rescale O in TMEM. With a grid of one persistent CTA, that CTA runs
every task in turn and every barrier goes through several phases.
"""

from __future__ import annotations

import numpy as np

from tirx import numsim

from . import reference
from .problem import AttentionProblem
from .sm100 import DEFAULT_RESCALE_THRESHOLD, Fa4Config, build

TOLERANCE = {"float16": 1e-2, "bfloat16": 2e-2}  # relative error of O and of LSE
LOUD_KEYS = 64  # keys whose scores are scaled up (at the start of the sequence)
LOUD_FACTOR = 4.0


def simulation_inputs(problem: AttentionProblem, batch: int, seqlen_q: int, seqlen_k: int,
                      seed: int = 0):
    """(inputs by buffer name, float32 values of q, k, v) with poisoned outputs."""
    rng = np.random.default_rng(seed)
    d, dtype = problem.head_dim, problem.dtype
    q, q_val = numsim.operand(rng, (batch, seqlen_q, problem.heads_q, d), dtype)
    kv_shape = (batch, seqlen_k, problem.heads_kv, d)
    loud = np.ones((1, seqlen_k, 1, 1), dtype=np.float32)
    loud[:, :LOUD_KEYS] = LOUD_FACTOR
    k, k_val = _as_dtype(rng.standard_normal(kv_shape).astype(np.float32) * loud, dtype)
    v, v_val = numsim.operand(rng, kv_shape, dtype)
    inputs = {
        "Q": q, "K": k, "V": v,
        "O": numsim.poisoned(q.shape, dtype),
        "LSE": numsim.poisoned((batch, problem.heads_q, seqlen_q), "float32"),
    }
    return inputs, (q_val, k_val, v_val)


def _as_dtype(x: np.ndarray, dtype: str):
    if dtype == "bfloat16":
        bits = numsim.bf16_bits(x)
        return bits, numsim.bf16_value(bits)
    half = x.astype(np.float16)
    return half, half.astype(np.float32)


def simulation_case(cfg: Fa4Config, problem: AttentionProblem, batch: int, seqlen_q: int,
                    seqlen_k: int, threshold: int = DEFAULT_RESCALE_THRESHOLD, seed: int = 0,
                    sm_count: int = 1):
    """(PrimFunc, inputs by buffer name, references {"O", "LSE"}) for one simulated launch;
    the sizes are runtime, so NumSim binds them from the arrays."""
    inputs, (q, k, v) = simulation_inputs(problem, batch, seqlen_q, seqlen_k, seed)
    prim_func = build(cfg, problem, sm_count=sm_count, fixed_threshold=threshold)
    # NumSim binds buffers only: drop the (unused) launch argument from the signature.
    prim_func = prim_func.specialize({prim_func.params[5]: threshold})
    o, lse = reference.attention(q, k, v, problem.causal, problem.scale)
    return prim_func, inputs, {"O": o, "LSE": lse}


def validate(cfg: Fa4Config, problem: AttentionProblem, batch: int, seqlen_q: int,
             seqlen_k: int, threshold: int = DEFAULT_RESCALE_THRESHOLD, seed: int = 0,
             sm_count: int = 1, cache_dir: str | None = None) -> numsim.Verdict:
    """Simulate `cfg` (legal for `problem`) at these sizes and compare O and LSE; a skipped
    Verdict when NumSim can't run, a failed one when the kernel does not complete."""
    reason = numsim.unavailable_reason()
    if reason is not None:
        return numsim.Verdict(skipped=reason)
    prim_func, inputs, expected = simulation_case(cfg, problem, batch, seqlen_q, seqlen_k,
                                                  threshold, seed, sm_count)
    return numsim.run_and_compare(prim_func, inputs, expected, TOLERANCE[problem.dtype],
                                  cache_dir=cache_dir)
