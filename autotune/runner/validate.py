"""Output checks shared by every evaluator: poison outputs before a run so an unwritten element
shows up as NaN, then compare against the reference by relative error. Works on torch tensors
(on the GPU, without copying them to the host) and on numpy arrays (CPU tests)."""

from __future__ import annotations

import math


def _is_torch(x) -> bool:
    return hasattr(x, "detach")


def poison(outputs: list) -> None:
    """Fill outputs with NaN (floats) or the largest value (integers) before the kernel runs."""
    for out in outputs:
        if _is_torch(out):
            import torch

            fill = float("nan") if out.is_floating_point() else torch.iinfo(out.dtype).max
            out.fill_(fill)
        else:
            import numpy as np

            out.fill(np.nan if np.issubdtype(out.dtype, np.floating) else np.iinfo(out.dtype).max)


def relative_error(out, ref) -> float:
    """||out - ref|| / ||ref||, or inf when `out` holds a NaN or Inf."""
    if _is_torch(out):
        import torch

        out, ref = out.detach().double(), ref.detach().to(out.device).double()
        if not bool(torch.isfinite(out).all()):
            return math.inf
        num, den = torch.linalg.vector_norm(out - ref).item(), torch.linalg.vector_norm(ref).item()
    else:
        import numpy as np

        out, ref = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
        if not np.isfinite(out).all():
            return math.inf
        num, den = float(np.linalg.norm(out - ref)), float(np.linalg.norm(ref))
    return num / den if den > 0 else num


def check_outputs(outputs: list, references: list,
                  tolerance: float) -> tuple[list[float], str | None]:
    """Relative error per output, and a message naming the first bad output (None if all pass)."""
    if len(outputs) != len(references):
        return [], f"{len(outputs)} outputs but {len(references)} references"
    errors = [relative_error(o, r) for o, r in zip(outputs, references)]
    for i, (out, ref, err) in enumerate(zip(outputs, references, errors)):
        if tuple(out.shape) != tuple(ref.shape):
            return errors, f"output {i} has shape {tuple(out.shape)}, reference {tuple(ref.shape)}"
        if math.isinf(err):
            return errors, f"output {i} holds NaN/Inf (unwritten elements or a numeric blow-up)"
        if err > tolerance:
            return errors, f"output {i} relative error {err:.3g} exceeds {tolerance:.3g}"
    return errors, None


def wrong_result(run, space, problem, inputs: list) -> str:
    """Run `run()` (a kernel on `inputs`, the space's parameter order) once with its outputs
    poisoned; "" if they then match the reference, else what is wrong."""
    outputs = [inputs[i] for i in space.output_indices(problem)]
    poison(outputs)
    run()
    _, wrong = check_outputs(outputs, space.reference(problem, inputs), space.tolerance(problem))
    return f"wrong result: {wrong}" if wrong else ""


def validated_binders(kernels: dict, space, problem, sets: list[list]) -> tuple[dict, dict]:
    """Each kernel (key -> launch) checked by wrong_result on `sets[0]`, in order:
    ({key: binder for protocol.median_times}, {key: what is wrong}) - only a correct kernel
    is timed."""
    binders, refused = {}, {}
    for key, kernel in kernels.items():
        why = wrong_result(lambda k=kernel: k(*sets[0]), space, problem, sets[0])
        if why:
            refused[key] = why
        else:
            binders[key] = lambda s, k=kernel: lambda: k(*s)
    return binders, refused
