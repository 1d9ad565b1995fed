"""Kernel timing with CUDA events (torch, imported lazily: this runs only on GPU workers).

Two timers (TIMERS), both over inputs rotated through enough copies that their working set
exceeds L2, so a kernel is not timed on a warm cache it would not see in a real model:
- "rotate": rounds of back-to-back launches; the median round's time per launch.
- "cold": one launch per measurement, each after L2 has been overwritten, as triton's do_bench
  times (the benchmark scripts' protocol): no launch hides behind the previous one's tail.
The median is reported with its spread."""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Callable

from .base import Timing


TIMERS = ("rotate", "cold")


def input_sets_needed(bytes_per_set: int, l2_bytes: int, factor: float = 2.0, cap: int = 64) -> int:
    """How many copies of the inputs make a working set of `factor` x L2."""
    if bytes_per_set <= 0:
        return 1
    return max(1, min(cap, math.ceil(factor * l2_bytes / bytes_per_set)))


def rotated(items: list, r: int) -> list:
    """`items` starting at position r (mod its length): round r's order when several things are
    timed in turn, so none is always the first after an idle spell or the last in a hot one."""
    k = r % len(items)
    return items[k:] + items[:k]


def interleaved(measures: dict, rounds: int) -> dict:
    """Call every measure once per round, rounds in rotated order; {name: [result per round]}.
    Clock and temperature drift then hit every entry alike."""
    out = {name: [] for name in measures}
    for r in range(rounds):
        for name in rotated(list(measures), r):
            out[name].append(measures[name]())
    return out


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


def time_cold(launch: Callable[[int], None], n_sets: int, *, warmup_ms: float = 25.0,
              measure_ms: float = 100.0) -> Timing:
    """Time `launch(i)` alone, one launch per measurement after an L2 flush: triton's do_bench
    (the benchmark scripts' timer), over the rotated input sets."""
    from triton.testing import do_bench

    calls = itertools.count()
    times = do_bench(lambda: launch(next(calls) % n_sets), warmup=warmup_ms, rep=measure_ms,
                     return_mode="all")
    return Timing(median_ms=statistics.median(times), min_ms=min(times), max_ms=max(times),
                  rounds=len(times), iters_per_round=1, input_sets=n_sets)
