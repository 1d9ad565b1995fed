"""Validation in a simulator where no GPU of the space's arch is: the `numsim` runner.

Each candidate is compiled and resource-checked for its arch as usual (the builder), then its
kernel is simulated in NumSim (tirx/numsim.py: sm_100a on the CPU) at a small proxy shape of the
same problem class - the space's `validate_numsim(config, problem, seed)`, which builds the
PrimFunc at that shape, runs it and compares with the reference - and nothing is timed: results
carry Provenance "validated", studies store such trials PRUNED with outcome "validated", and
the config store takes no entry from them (it keeps timed studies only).

A NumSim run builds the kernel's Rust with cargo (cached by kernel source under
NUMSIM_CACHE_DIR; the first one also builds the simulator's engine, minutes on 2 cores), so a
simulated candidate gets at least SIMULATION_TIMEOUT_S, and one simulation runs at a time:
cargo and the simulator's threads use every core.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import socket
from typing import Callable

from ..errors import UserError
from ..spaces.base import Config, Problem, SearchSpace
from .base import Cause, Evaluator, Job, Provenance, Result
from .cuda_eval import cause_of_exception
from .pools import WorkerPool
from .scheduler import Scheduler

SIMULATION_TIMEOUT_S = 900.0  # the first candidate builds NumSim's engine (2-3 min, 2 cores)
Validate = Callable[[SearchSpace, Config, Problem, int], object]  # -> a tirx.numsim.Verdict


def validate_in_numsim(space: SearchSpace, config: Config, problem: Problem, seed: int):
    """The space's own simulated validation (its kernel at a proxy shape, in NumSim)."""
    return space.validate_numsim(config, problem, seed)


def result_of(verdict, tag=None) -> Result:
    """A Verdict as an untimed Result: passed, wrong (VALIDATION: also a kernel that did not
    complete, e.g. a deadlock NumSim reports), or not run (ERROR: NumSim unavailable)."""
    if verdict.skipped is not None:
        return Result(tag, Cause.ERROR, str(verdict))
    errors = [verdict.error] if verdict.error is not None else None
    if not verdict.ok:
        return Result(tag, Cause.VALIDATION, str(verdict), rel_errors=errors)
    return Result(tag, rel_errors=errors)


class SimulatedValidator(Evaluator):
    """Validates a compiled candidate by `validate` (default: the space's NumSim validation);
    never times it."""

    timer = "none"

    def __init__(self, validate: Validate = validate_in_numsim):
        self.validate = validate

    def evaluate(self, job: Job) -> Result:
        c = job.candidate
        if c.vendor:  # the vendor op (cuBLAS/cuDNN) has no simulated kernel:
            return Result(c.tag)  # it is the trusted baseline, here neither run nor timed
        try:
            verdict = self.validate(c.space, c.config, c.problem, job.seed)
        except Exception as exc:
            cause, fatal = cause_of_exception(exc)
            return Result(c.tag, cause, f"{type(exc).__name__}: {exc}", fatal=fatal)
        return result_of(verdict, c.tag)


def simulator_pool(validate: Validate = validate_in_numsim, workers: int = 1) -> WorkerPool:
    """`workers` isolated simulator processes; their results are labelled validated."""
    try:
        harness = f"tirx-harness {importlib.metadata.version('tirx-harness')}"
    except importlib.metadata.PackageNotFoundError:
        harness = "none"
    provenance = Provenance("validated", {"runner": "numsim", "simulator": harness,
                                          "host": socket.gethostname()})
    return WorkerPool(SimulatedValidator(validate), [None] * workers, provenance,
                      names=[f"NumSim ({harness})"] * workers)


def numsim(space: SearchSpace, options) -> Scheduler:
    """Compile and resource-check here; validate each candidate in NumSim at a proxy shape;
    time nothing. Refused, naming why, for a space with no simulated validation or where
    NumSim cannot run."""
    from tirx.numsim import unavailable_reason

    from .kinds import _closing, _scheduler

    if not callable(getattr(space, "validate_numsim", None)):
        raise UserError(f"{space.name} has no simulated validation (validate_numsim): the numsim "
                        "runner validates sm_100a spaces that define one")
    reason = unavailable_reason()
    if reason is not None:
        raise UserError(f"NumSim cannot run here: {reason}")
    options = dataclasses.replace(options, timeout_s=max(options.timeout_s, SIMULATION_TIMEOUT_S))
    builder = options.builder()
    pool = _closing(simulator_pool, builder)
    return _scheduler(builder, pool, "numsim", options)
