"""Measure, in one run on the current GPU, per shape: the kernel the dispatcher picks (tuned),
the hand-tuned default, and the vendor op - each validated against the reference first, then
timed with the tuner's own method (CUDA events, inputs rotated past L2, median of rounds)."""

from __future__ import annotations

from ..dispatch import Dispatcher
from ..dispatch.dispatcher import is_legal
from ..runner.timing import input_sets_needed, time_launches
from ..runner.validate import check_outputs, poison
from ..spaces.base import Problem
from .report import Measurement


def _time_kernel(kernel, space, problem, sets, rounds) -> tuple[float | None, str]:
    inputs = sets[0]
    outputs = [inputs[i] for i in space.output_indices(problem)]
    poison(outputs)
    kernel(*inputs)
    _, wrong = check_outputs(outputs, space.reference(problem, inputs), space.tolerance(problem))
    if wrong:
        return None, f"wrong result: {wrong}"
    timing = time_launches(lambda i: kernel(*sets[i]), len(sets), rounds=rounds)
    return timing.median_ms, ""


def measure(op: Dispatcher, problem: Problem, *, seed: int = 0, rounds: int = 10) -> Measurement:
    import torch

    space = op.space
    inputs = space.make_inputs(problem, seed=seed, device="cuda")
    set_bytes = sum(t.numel() * t.element_size() for t in inputs)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    sets = [inputs] + [[t.clone() for t in inputs]
                       for _ in range(input_sets_needed(set_bytes, l2) - 1)]
    notes = []
    times = {}
    picked = op.pick(problem)
    default = space.default_config(problem)
    default_kernel = op.provider.get(problem, default) if is_legal(space, default, problem) is not False else None
    for variant, kernel in (("tuned", picked[1] if picked else None), ("default", default_kernel)):
        if kernel is None:
            times[variant] = None
            notes.append(f"no {variant} kernel")
            continue
        times[variant], why = _time_kernel(kernel, space, problem, sets, rounds)
        if why:
            notes.append(f"{variant} {why}")
    if picked:
        choice = picked[0]
        notes.insert(0, f"{choice.reason} ({choice.tuned})" if choice.tuned and
                     choice.reason != "exact" else choice.reason)
    vendor = [space.vendor(problem, s) for s in sets]
    times["vendor"] = time_launches(lambda i: vendor[i](), len(sets), rounds=rounds).median_ms
    torch.cuda.synchronize()
    return Measurement(problem.key, space.flops(problem), times["tuned"], times["default"],
                       times["vendor"], note="; ".join(notes))
