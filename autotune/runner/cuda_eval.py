"""The production evaluator: load a tirx artifact (or take the space's vendor op), validate it on
fresh random inputs against the space's reference, then time it with the protocol (protocol.py).
Runs inside a GPU worker process; torch and tirx.Kernel (cuda-bindings) are imported there,
never in the driver."""

from __future__ import annotations

import dataclasses

from .base import PROTOCOL, Cause, Evaluator, Job, Result
from .protocol import WINDOW_MS, input_sets, time_on_sets
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


def run_checked(bind, space, problem, seed: int,
                inputs: list | None = None) -> tuple[list, list[float], str | None]:
    """Run `bind(inputs)()` once on `inputs` (default: a fresh random draw; outputs poisoned
    first) and compare with the space's reference: (the inputs, relative error per output, what
    is wrong or None)."""
    import torch

    if inputs is None:
        inputs = space.make_inputs(problem, seed=seed, device="cuda")
    references = space.reference(problem, inputs)
    outputs = [inputs[i] for i in space.output_indices(problem)]
    poison(outputs)
    bind(inputs)()
    torch.cuda.current_stream().synchronize()
    errors, wrong = check_outputs(outputs, references, space.tolerance(problem))
    return inputs, errors, wrong


def binder(candidate, compiled):
    """inputs -> the zero-argument call that runs the candidate on them (the current stream):
    its compiled kernel with the config's runtime knobs, or the space's vendor op."""
    space, problem = candidate.space, candidate.problem
    if candidate.vendor:
        return lambda inputs: space.vendor(problem, inputs)
    import tirx

    kernel = tirx.Kernel(tirx.Artifact.load(compiled.artifact_path))
    scalars = space.launch_scalars(candidate.config)
    return lambda inputs: lambda: kernel(*inputs, *scalars)


@dataclasses.dataclass
class CudaEvaluator(Evaluator):
    """Validate on `checks` fresh input draws, then (if `timed`) time with the protocol."""

    window_ms: float = WINDOW_MS  # timed span of graph replays (protocol.time_in_graph)
    min_graph_ms: float = 1.0  # each replay lasts at least this long
    l2_factor: float = 2.0  # working set of the input sets, in multiples of L2
    max_input_sets: int = 64
    timed: bool = True
    checks: int = 1
    timer = PROTOCOL  # not a field: there is one protocol; provenance records its name

    def setup(self, device: int | None) -> None:
        import torch

        # Workers are pinned to one GPU with CUDA_VISIBLE_DEVICES (Ray does it for actors).
        torch.cuda.set_device(0)
        torch.cuda.init()

    def evaluate(self, job: Job) -> Result:
        candidate, compiled = job.candidate, job.compiled
        space, problem, tag = candidate.space, candidate.problem, candidate.tag
        try:
            bind = binder(candidate, compiled)
            errors: list[float] = []
            sets = None
            for n in range(self.checks):
                inputs = space.make_inputs(problem, seed=job.seed + n, device="cuda")
                if self.timed and n == self.checks - 1:
                    # The timing sets are cloned before the check allocates its reference, as
                    # `autotune compare` does: cloned after, into the reference's freed blocks,
                    # an H100 timed a decode GEMM 2.7% faster than in compare's order
                    # (1x4096x4096, studies/2026-11-23-h100-gemm-s3/ probe), and compare's time
                    # is the one a decoder-like graph sees (within 0.4% at 1x4608x3584).
                    sets = input_sets(inputs, self.l2_factor, self.max_input_sets)
                _, errs, wrong = run_checked(bind, space, problem, job.seed + n, inputs)
                errors = [max(pair) for pair in zip(errors, errs)] if errors else errs
                if wrong:
                    return Result(tag, Cause.VALIDATION, wrong, rel_errors=errors,
                                  resources=compiled.resources)
            if not self.timed:
                return Result(tag, rel_errors=errors, resources=compiled.resources)
            timing = time_on_sets(bind, sets, window_ms=self.window_ms,
                                  min_graph_ms=self.min_graph_ms)
            return Result(tag, timing=timing, rel_errors=errors, resources=compiled.resources)
        except Exception as exc:
            cause, fatal = cause_of_exception(exc)
            return Result(tag, cause, f"{type(exc).__name__}: {exc}",
                          resources=compiled.resources, fatal=fatal)
