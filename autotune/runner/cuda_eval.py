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


@dataclasses.dataclass
class CudaEvaluator(Evaluator):
    warmup_ms: float = 25.0
    rounds: int = 10
    min_round_ms: float = 2.0
    l2_factor: float = 2.0  # working set of rotated inputs, in multiples of L2
    max_input_sets: int = 64
    timer: str = "rotate"  # see timing.TIMERS

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

        space, problem = job.candidate.space, job.candidate.problem
        tag, compiled = job.candidate.tag, job.compiled
        try:
            kernel = tirx.Kernel(tirx.Artifact.load(compiled.artifact_path))
            inputs = space.make_inputs(problem, seed=job.seed, device="cuda")
            out_idx = space.output_indices(problem)
            references = space.reference(problem, inputs)
            outputs = [inputs[i] for i in out_idx]
            poison(outputs)
            scalars = space.launch_scalars(job.candidate.config)  # runtime knobs, after tensors
            stream = torch.cuda.current_stream()
            kernel(*inputs, *scalars, stream=stream.cuda_stream)
            stream.synchronize()
            errors, problem_text = check_outputs(outputs, references, space.tolerance(problem))
            if problem_text:
                return Result(tag, Cause.VALIDATION, problem_text, rel_errors=errors,
                              resources=compiled.resources)
            del references

            set_bytes = sum(t.numel() * t.element_size() for t in inputs if hasattr(t, "numel"))
            l2 = torch.cuda.get_device_properties(0).L2_cache_size
            n_sets = input_sets_needed(set_bytes, l2, self.l2_factor, self.max_input_sets)
            sets = [inputs] + [[t.clone() if hasattr(t, "clone") else t for t in inputs]
                               for _ in range(n_sets - 1)]
            def launch(i):
                kernel(*sets[i], *scalars, stream=stream.cuda_stream)

            if self.timer == "cold":
                timing = time_cold(launch, n_sets, warmup_ms=self.warmup_ms)
            else:
                timing = time_launches(launch, n_sets, warmup_ms=self.warmup_ms,
                                       rounds=self.rounds, min_round_ms=self.min_round_ms)
            return Result(tag, timing=timing, rel_errors=errors, resources=compiled.resources)
        except Exception as exc:
            cause, fatal = cause_of_exception(exc)
            return Result(tag, cause, f"{type(exc).__name__}: {exc}",
                          resources=compiled.resources, fatal=fatal)
