"""The timing protocol: a kernel's time as a model's forward pass sees it (issue 18). Every
time the tuner reports - a study's trials and final round, `autotune compare`, `autotune bench`,
the config store - comes from `time_on_sets(run, input_sets(inputs))`: back-to-back launches
captured in one CUDA graph, over input sets whose tensors together exceed L2 (so weights stream
from device memory, as in a model whose layers each have their own), replayed for a timed window
of at least a second; the time is the window's total over the launches it holds. Its name,
recorded with every study and store, is PROTOCOL.

Chosen by measurement on H100s (studies/2026-11-23-h100-gemm-protocol/README.md) against
the truth, a GEMM's time inside a CUDA graph of decoder-like layers (the previous op writes the
activation, a distinct weight per layer, the next op reads the output), over 44 shapes and ~900
timed configs plus cuBLAS in seven runs on four machines: the config it ranks first was on
average 0.0-3.9% slower in the block than the block's best, per run, and it timed our kernels
within a few % of the block (plus an offset of up to 2 us on one machine, the same for every
config). The Python back-to-back timer read the launch rate of short kernels (+10% at M=1, +31%
for cuBLAS at 256x1000x4096; its pick cost 6.6% on average in the last run); the L2-flushing
timer the write-back of its memset's dirty lines (+20% on M <= 256). A producer op before each
launch, its own time taken out, ranked no better. Limits: back to back, cuBLAS reads 2-11%
faster than after another op; and no isolated timer sees how a kernel's L2 policy speeds up its
neighbours (evict-first weight loads keep a model's activations in L2: in the block they were
faster in 10 of 12 comparisons on large shapes, by up to 20%; in isolation, not faster).

Why a one-second window and its mean (studies/2026-11-24-h100-gemm-s11/steady/): at the 700 W
cap the H100's power controller moves the SM clock in a ~1 s cycle, by up to +-5% in the seconds
after an idle spell (a study's compile pauses) and by ~1% once the GPU has been busy. The median
of ten ~1 ms replays caught one phase of that cycle: the same kernel read up to 8% apart from one
measurement to the next, and a study's final round (after compiles) missed `autotune compare`
(back to back) by over 3% on 12 of 32 unseen shapes (session 10's two runs), 11 of them reading
our large GEMMs 3-9% faster. Over a whole cycle the controller holds the power budget, so the
mean replay over >= 1 s reads the same after idle as after seconds of other kernels: within 1.5%
for 10 kernels (5 shapes, ours and cuBLAS, each after 3 s idle, then back to back twice), where
the median of any window up to 2 s was 4-6% apart. Measured since: study vs compare within 1.3%
on 12 of 12 unseen shapes (studies/2026-11-24-h100-gemm-s11/after).
"""

from __future__ import annotations

import math
import statistics
from typing import Callable

from .base import PROTOCOL, Timing  # noqa: F401  (PROTOCOL: this protocol's name)

GraphTimer = Callable[..., list]  # graph_replays(body, replays, warm) -> ms per replay
# Untimed replays before the timed ones. Why: on an H100 a study's final round, each candidate
# timed alone after seconds of idle (compiles, input draws), read large GEMMs 8-12% and decode
# ones 3-6% faster than `autotune compare`, whose interleaved rounds keep the GPU busy - the
# vendor op alike (studies/2026-11-23-h100-gemm-heldout/): a short burst after idle runs at the
# boost clock, a model's forward pass at the clock a busy GPU holds. 200 ms is what compare
# already warmed up with (an H100 takes ~100 ms to change clocks).
WARM_MS = 200.0
# The timed span: the controller's clock cycle is ~1 s (see above), and a shorter window reads
# a phase of it (the same 10 kernels, from the first replay: 0.8 s read 5.6% apart, 1.0 s 1.8%;
# after the warm-up: 1.0 s 1.5%).
WINDOW_MS = 1000.0
# Interleaved rounds where variants are timed side by side (a study's final round, `autotune
# compare`, first use). Under the median of short replays a kernel's time moved by up to 12%
# between measurements seconds apart, and even 5 rounds left 12 of 32 unseen shapes' study times
# more than 3% off compare's (session 10). The one-second mean repeats within 1.5% after idle or
# busy alike, so the rounds now guard against a stray measurement only: the median of 3.
ROUNDS = 3


def input_sets_needed(bytes_per_set: int, l2_bytes: int, factor: float = 2.0, cap: int = 64) -> int:
    """How many copies of the inputs make a working set of `factor` x L2."""
    if bytes_per_set <= 0:
        return 1
    return max(1, min(cap, math.ceil(factor * l2_bytes / bytes_per_set)))


def input_sets(inputs: list, factor: float = 2.0, cap: int = 64) -> list[list]:
    """`inputs` (torch tensors and scalars, in a kernel's parameter order) and enough clones that
    the tensors of all sets are `factor` x the current GPU's L2."""
    import torch

    set_bytes = sum(t.numel() * t.element_size() for t in inputs if hasattr(t, "numel"))
    l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    n_sets = input_sets_needed(set_bytes, l2, factor, cap)
    return [inputs] + [[t.clone() if hasattr(t, "clone") else t for t in inputs]
                       for _ in range(n_sets - 1)]


def time_on_sets(bind: Callable[[list], Callable[[], None]], sets: list[list], *,
                 window_ms: float = WINDOW_MS, min_graph_ms: float = 1.0,
                 warm_ms: float = WARM_MS, graph_ms: GraphTimer | None = None) -> Timing:
    """The protocol's time of one launch: `bind(inputs)` gives the zero-argument call that runs
    the kernel (or the vendor op) on one input set, on the current stream."""
    calls = [bind(s) for s in sets]
    return time_in_graph(lambda i: calls[i](), len(calls), window_ms=window_ms,
                         min_graph_ms=min_graph_ms, warm_ms=warm_ms, graph_ms=graph_ms)


def median_times(binders: dict[str, Callable[[list], Callable[[], None]]], sets: list[list],
                 rounds: int) -> dict[str, float]:
    """Each binder's protocol time (its median over `rounds` interleaved rounds: runner/timing.py)
    on the same input sets: how variants are compared side by side."""
    from .timing import interleaved

    per_round = interleaved(
        {name: lambda b=b: time_on_sets(b, sets).ms for name, b in binders.items()}, rounds)
    return {name: statistics.median(times) for name, times in per_round.items()}


def passes_per_graph(pass_ms: float, min_graph_ms: float, cap: int = 64) -> int:
    """How many passes over the input sets one graph holds so that a replay lasts at least
    `min_graph_ms` (event resolution is ~0.5 us; a decode GEMM takes ~5-15 us)."""
    if pass_ms <= 0:
        return cap
    return max(1, min(cap, math.ceil(min_graph_ms / pass_ms)))


def per_launch(replays_ms: list, launches: int, input_sets: int) -> Timing:
    """Timing of one launch from the replay times of a graph that holds `launches`: the mean
    over the window (a clock cycle's fast and slow phases alike), the fastest and slowest
    replay beside it."""
    each = [t / launches for t in replays_ms]
    return Timing(ms=statistics.fmean(each), min_ms=min(each), max_ms=max(each),
                  rounds=len(each), iters_per_round=launches, input_sets=input_sets)


def warm_replays(replay_ms: float, warm_ms: float) -> int:
    """How many untimed replays keep the GPU busy for `warm_ms` before the timed ones."""
    if replay_ms <= 0:
        return 2
    return max(2, math.ceil(warm_ms / replay_ms))


def timed_replays(replay_ms: float, window_ms: float) -> int:
    """How many timed replays fill `window_ms` (at least 3)."""
    if replay_ms <= 0:
        return 3
    return max(3, math.ceil(window_ms / replay_ms))


def time_in_graph(launch: Callable[[int], None], n_sets: int, *, window_ms: float = WINDOW_MS,
                  min_graph_ms: float = 1.0, warm_ms: float = WARM_MS,
                  graph_ms: GraphTimer | None = None) -> Timing:
    """Time `launch(i)` (one kernel on input set i, on the current stream) as a forward pass
    runs it: captured in a CUDA graph, back to back over the n_sets input sets in turn (so no
    Python launch cost sits between kernels), as many passes as make a replay last
    `min_graph_ms`; after `warm_ms` of untimed replays, the mean over the replays that fill
    `window_ms`."""
    graph_ms = graph_ms or graph_replays

    def passes(n: int):
        def run():
            for _ in range(n):
                for i in range(n_sets):
                    launch(i)
        return run

    estimate = statistics.median(graph_ms(passes(1), 3))
    n = passes_per_graph(estimate, min_graph_ms)
    warm = warm_replays(n * estimate, warm_ms)
    replays = timed_replays(n * estimate, window_ms)
    return per_launch(graph_ms(passes(n), replays, warm), n * n_sets, n_sets)


def capture_graph(body: Callable[[], None]):
    """`body` (kernel launches on the current stream) captured in a CUDA graph, after one run
    outside the capture (libraries pick their kernels and workspaces there)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    return graph


def graph_replays(body: Callable[[], None], replays: int, warm: int = 2) -> list:
    """Capture `body` (kernel launches on the current stream) in a CUDA graph and return the
    time of each of `replays` replays in ms, after one run outside the capture (libraries pick
    their kernels and workspaces there) and `warm` replays of warm-up."""
    import torch

    graph = capture_graph(body)
    for _ in range(warm):
        graph.replay()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(replays)]
    for start, end in events:
        start.record()
        graph.replay()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in events]
