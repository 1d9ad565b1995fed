"""Kernel timing with CUDA events (torch, imported lazily: this runs only on GPU workers).

Inputs are rotated over enough copies that their working set exceeds L2, so a kernel is not
timed on a warm cache it would not see in a real model; the median over rounds is reported with
its spread."""

from __future__ import annotations

import math
import statistics
from typing import Callable

from .base import Timing


def input_sets_needed(bytes_per_set: int, l2_bytes: int, factor: float = 2.0, cap: int = 64) -> int:
    """How many copies of the inputs make a working set of `factor` x L2."""
    if bytes_per_set <= 0:
        return 1
    return max(1, min(cap, math.ceil(factor * l2_bytes / bytes_per_set)))


def time_launches(launch: Callable[[int], None], n_sets: int, *, warmup_ms: float = 25.0,
                  rounds: int = 10, min_round_ms: float = 2.0) -> Timing:
    """Time `launch(i)` (which enqueues one kernel on input set i on the current stream)."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def run(iters: int, offset: int = 0) -> float:
        start.record()
        for i in range(iters):
            launch((offset + i) % n_sets)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / iters

    estimate = run(1)  # also the first launch: module load, lazy init
    estimate = max(run(n_sets), 1e-4)
    warmup_iters = max(1, math.ceil(warmup_ms / estimate))
    run(warmup_iters)
    iters = max(n_sets, math.ceil(min_round_ms / estimate))
    per_round = [run(iters, offset=r) for r in range(rounds)]
    return Timing(median_ms=statistics.median(per_round), min_ms=min(per_round),
                  max_ms=max(per_round), rounds=rounds, iters_per_round=iters, input_sets=n_sets)
