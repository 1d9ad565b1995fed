"""The production evaluator: load a tirx artifact, validate it on fresh random inputs against the
space's reference, then time it. Runs inside a GPU worker process; torch and tirx.Kernel (cuda-
bindings) are imported there, never in the driver."""

from __future__ import annotations

import dataclasses

from .base import Cause, Evaluator, Job, Result
from .timing import TIMERS, input_sets_needed, time_cold, time_launches
from .validate import check_outputs, poison


_CUDA_ERROR_MARKS = ("CUDA error", "CUDA_ERROR", "cudaError", "illegal memory access",
                     "illegal address", "unspecified launch failure")


def cause_of_exception(exc: BaseException) -> tuple[Cause, bool]:
    """The cause of an exception raised while running a candidate, and whether the worker must
    restart (a CUDA error poisons the context: every later launch in the process fails)."""
    text = str(exc)
    if type(exc).__name__ == "LaunchError" or any(m in text for m in _CUDA_ERROR_MARKS):
        return Cause.CUDA_ERROR, True
    return Cause.ERROR, False


def run_checked(kernel, space, problem, config, seed: int) -> tuple[list, list[float], str | None]:
    """Launch `kernel` once on fresh random inputs (outputs poisoned first) and compare with the
    space's reference: (the inputs, relative error per output, what is wrong or None)."""
    import torch

    inputs = space.make_inputs(problem, seed=seed, device="cuda")
    references = space.reference(problem, inputs)
    outputs = [inputs[i] for i in space.output_indices(problem)]
    poison(outputs)
    stream = torch.cuda.current_stream()
    kernel(*inputs, *space.launch_scalars(config), stream=stream.cuda_stream)
    stream.synchronize()
    errors, wrong = check_outputs(outputs, references, space.tolerance(problem))
    return inputs, errors, wrong


def rotated_sets(inputs: list, l2_factor: float = 2.0, cap: int = 64) -> list[list]:
    """`inputs` and enough clones that their working set is `l2_factor` x the GPU's L2."""
    import torch

    set_bytes = sum(t.numel() * t.element_size() for t in inputs if hasattr(t, "numel"))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    n_sets = input_sets_needed(set_bytes, l2, l2_factor, cap)
    return [inputs] + [[t.clone() if hasattr(t, "clone") else t for t in inputs]
                       for _ in range(n_sets - 1)]


@dataclasses.dataclass
class CudaEvaluator(Evaluator):
    """Validate on `checks` fresh input draws, then (if `timed`) time with `timer`."""

    warmup_ms: float = 25.0
    rounds: int = 10
    min_round_ms: float = 2.0
    l2_factor: float = 2.0  # working set of rotated inputs, in multiples of L2
    max_input_sets: int = 64
    timer: str = "rotate"  # see timing.TIMERS
    timed: bool = True
    checks: int = 1

    def __post_init__(self):
        if self.timer not in TIMERS:
            raise ValueError(f"unknown timer {self.timer!r} (choose from {', '.join(TIMERS)})")

    def setup(self, device: int | None) -> None:
        import torch

        # Workers are pinned to one GPU with CUDA_VISIBLE_DEVICES (Ray does it for actors).
        torch.cuda.set_device(0)
        torch.cuda.init()

    def evaluate(self, job: Job) -> Result:
        import torch

        import tirx

        space, problem, config = job.candidate.space, job.candidate.problem, job.candidate.config
        tag, compiled = job.candidate.tag, job.compiled
        try:
            kernel = tirx.Kernel(tirx.Artifact.load(compiled.artifact_path))
            errors: list[float] = []
            for n in range(self.checks):
                inputs, errs, wrong = run_checked(kernel, space, problem, config, job.seed + n)
                errors = [max(pair) for pair in zip(errors, errs)] if errors else errs
                if wrong:
                    return Result(tag, Cause.VALIDATION, wrong, rel_errors=errors,
                                  resources=compiled.resources)
            if not self.timed:
                return Result(tag, rel_errors=errors, resources=compiled.resources)
            sets = rotated_sets(inputs, self.l2_factor, self.max_input_sets)
            scalars = space.launch_scalars(config)
            stream = torch.cuda.current_stream()

            def launch(i):
                kernel(*sets[i], *scalars, stream=stream.cuda_stream)

            if self.timer == "cold":
                timing = time_cold(launch, len(sets), warmup_ms=self.warmup_ms)
            else:
                timing = time_launches(launch, len(sets), warmup_ms=self.warmup_ms,
                                       rounds=self.rounds, min_round_ms=self.min_round_ms)
            return Result(tag, timing=timing, rel_errors=errors, resources=compiled.resources)
        except Exception as exc:
            cause, fatal = cause_of_exception(exc)
            return Result(tag, cause, f"{type(exc).__name__}: {exc}",
                          resources=compiled.resources, fatal=fatal)
