"""Measure, in one run on the current GPU, per shape: the kernel the dispatcher picks (tuned),
the hand-tuned default, and the vendor op - each validated against the reference first, then
timed with the tuner's own method (CUDA events, inputs rotated past L2), in interleaved rounds.

Why interleaved: timed one after the other, the first variant measured after an idle spell (a
kernel build, a large input draw) ran at a GPU clock still ramping up from idle, and lost up to
8x on a 20 us kernel (H100, session 4). Now the GPU is kept busy for WARM_MS first, and each
round times every variant once, in a rotated order; a variant's time is its median round."""

from __future__ import annotations

import statistics
import time

from ..dispatch import Dispatcher
from ..dispatch.dispatcher import is_legal
from ..runner.timing import input_sets_needed, interleaved, time_launches
from ..runner.validate import check_outputs, poison
from ..spaces.base import Problem
from .report import Measurement

WARM_MS = 200.0  # of launches before timing: an H100 takes ~100 ms to leave its idle clock


def _validate(kernel, space, problem, inputs) -> str:
    outputs = [inputs[i] for i in space.output_indices(problem)]
    poison(outputs)
    kernel(*inputs)
    _, wrong = check_outputs(outputs, space.reference(problem, inputs), space.tolerance(problem))
    return f"wrong result: {wrong}" if wrong else ""


def _keep_busy(launch, n_sets: int, ms: float) -> None:
    import torch

    deadline = time.perf_counter() + ms / 1e3
    i = 0
    while time.perf_counter() < deadline:
        launch(i % n_sets)
        i += 1
        if i % 64 == 0:
            torch.cuda.synchronize()  # keep the queue short: the deadline is wall time
    torch.cuda.synchronize()


def measure(op: Dispatcher, problem: Problem, *, seed: int = 0, rounds: int = 10) -> Measurement:
    import torch

    space = op.space
    inputs = space.make_inputs(problem, seed=seed, device="cuda")
    set_bytes = sum(t.numel() * t.element_size() for t in inputs)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    sets = [inputs] + [[t.clone() for t in inputs]
                       for _ in range(input_sets_needed(set_bytes, l2) - 1)]
    notes = []
    launches = {}
    picked = op.pick(problem)
    default = space.default_config(problem)
    # where the tuner kept the default, one kernel plays both roles: timing it twice would
    # show run-to-run spread (up to 4% on the H100) as a tuned/default gap
    tuned_is_default = bool(picked) and picked[0].config == default
    variants = [("tuned", picked[1] if picked else None)]
    if not tuned_is_default:
        variants.append(("default", op.provider.get(problem, default)
                         if is_legal(space, default, problem) is not False else None))
    for variant, kernel in variants:
        if kernel is None:
            notes.append(f"no {variant} kernel")
            continue
        why = _validate(kernel, space, problem, sets[0])
        if why:
            notes.append(f"{variant} {why}")
            continue
        launches[variant] = lambda i, k=kernel: k(*sets[i])
    if picked:
        choice = picked[0]
        notes.insert(0, f"{choice.reason} ({choice.tuned})" if choice.tuned and
                     choice.reason != "exact" else choice.reason)
    vendor = [space.vendor(problem, s) for s in sets]
    launches["vendor"] = lambda i: vendor[i]()
    others = [space.op.other_vendors(problem, s) if space.op else {} for s in sets]
    for name in others[0]:  # more baselines, e.g. attention's FlashAttention-2
        launches[name] = lambda i, n=name: others[i][n]()
    _keep_busy(launches["vendor"], len(sets), WARM_MS)
    per_round = interleaved(
        {v: lambda f=f: time_launches(f, len(sets), rounds=1, warmup_ms=5.0).median_ms
         for v, f in launches.items()}, rounds)
    torch.cuda.synchronize()
    times = {v: statistics.median(ts) for v, ts in per_round.items()}
    if tuned_is_default and "tuned" in times:
        times["default"] = times["tuned"]
        notes.append("tuned is the default")
    return Measurement(problem.key, space.flops(problem), times.get("tuned"), times.get("default"),
                       times["vendor"], note="; ".join(notes),
                       others={name: times[name] for name in others[0]})
