"""Measure, in one run on the current GPU, per shape: our kernel alone (the config the dispatcher
picks, "tuned"), the hand-tuned default and the vendor op - each validated against the
reference first, then timed with the tuner's protocol (runner/protocol.py: the very function
and input policy a study's trials and final round use), in interleaved rounds - and what
dispatch delivers (that kernel, or the vendor op where dispatch routes the shape there).

Why interleaved: each round times every variant once, in a rotated order, so that clock and
temperature drift hit all alike; a variant's time is its median round. The protocol itself
keeps the GPU busy before each timing (protocol.WARM_MS) and times a one-second window (its
mean), over which the clock's cycle after an idle spell (a kernel build, a large input draw)
averages out: timed in a short burst after idle, a variant ran at another clock (H100, session
4: up to 8x slower on a 20 us kernel, still ramping up from idle; 2026-11-23: 3-12% faster, at
boost; 2026-11-24: the ~1 Hz cycle, studies/2026-11-24-h100-gemm-s11/steady)."""

from __future__ import annotations

from ..dispatch import Dispatcher
from ..dispatch.first_use import SOURCE, is_first_use
from ..dispatch.rules import EXACT
from ..runner.protocol import input_sets, median_times
from ..runner.validate import validated_binders
from ..spaces.base import Problem
from .report import Measurement


def measure(op: Dispatcher, problem: Problem, *, seed: int = 0, rounds: int = 10,
            block: bool = False) -> Measurement:
    """`block`: also time each variant inside a decoder-like CUDA graph (block.py)."""
    import torch

    space = op.space
    inputs = space.make_inputs(problem, seed=seed, device="cuda")
    sets = input_sets(inputs)
    notes = []
    op.settle(problem)  # first-use tuning, where the dispatcher does it
    picked = op.pick(problem)
    default = space.default_config(problem)
    # where the tuner kept the default, one kernel plays both roles: timing it twice would
    # show run-to-run spread (up to 4% on the H100) as a tuned/default gap
    tuned_is_default = bool(picked) and picked[0].config == default
    variants = [("tuned", picked[1] if picked else None)]
    if not tuned_is_default:
        variants.append(("default", op.provider.get(problem, default)
                         if space.is_legal(default, problem) is not False else None))
    binders, refused = validated_binders({v: k for v, k in variants if k is not None},
                                         space, problem, sets)
    for variant, kernel in variants:  # the notes in the variants' order
        if kernel is None:
            notes.append(f"no {variant} kernel")
        elif variant in refused:
            notes.append(f"{variant} {refused[variant]}")
    binders["vendor"] = lambda s: space.vendor(problem, s)
    others = list(space.op.other_vendors(problem, sets[0])) if space.op else []
    for name in others:  # more baselines, e.g. attention's FlashAttention-2
        binders[name] = lambda s, n=name: space.op.other_vendors(problem, s)[n]
    vendor_why, recorded = None, None
    if picked:
        choice = picked[0]
        exact = op.selector.entries[problem.key] if choice.reason == EXACT else None
        notes.insert(0, f"{choice.reason} ({choice.tuned})" if choice.tuned and not exact
                     else SOURCE if exact and is_first_use(exact) else choice.reason)
        vendor_why = op.selector.vendor_faster(problem, choice.config)
        if vendor_why:
            notes.append(f"dispatch: vendor op ({vendor_why})")
        if exact:
            recorded = exact.time_ms
    times = median_times(binders, sets, rounds)
    in_block = None
    if block:
        from .block import Block

        in_block = Block(space, problem).times(binders, max(1, rounds // 3))
    torch.cuda.synchronize()
    for where in filter(None, (times, in_block)):
        if tuned_is_default and "tuned" in where:
            where["default"] = where["tuned"]
        if "tuned" in where:
            where["dispatch"] = where["vendor"] if vendor_why else where["tuned"]
    if tuned_is_default:
        notes.append("tuned is the default")
    return Measurement(problem.key, space.flops(problem), times.get("tuned"),
                       times.get("default"), times["vendor"], note="; ".join(notes),
                       dispatch_ms=times.get("dispatch"), recorded_ms=recorded, block=in_block,
                       others={name: times[name] for name in others},
                       tuned_config=picked[0].config if picked else None)
