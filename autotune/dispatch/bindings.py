"""How a kernel meets torch tensors: the problem a call describes, and a per-shape launcher.

A launcher is built once per new call shape and does only what the shape does not fix, so the
steady-state call is a dict lookup plus this closure. No torch import here: tensors are used
through their methods (CPU tests pass look-alikes)."""

from __future__ import annotations

import math
from typing import Callable, Hashable

from ..spaces.base import Problem

Launcher = Callable[[tuple, object], object]  # (args, out) -> result


def dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


class GemmBinding:
    """op(a, b, out=None) = a @ b.T, a: (..., K), b: (N, K) - the layout of torch.nn.Linear's
    weight, so `op(x, linear.weight)` is `F.linear(x, linear.weight)`."""

    kernel = "gemm"

    @staticmethod
    def call_key(args: tuple) -> Hashable:
        a, b = args
        return (a.shape, b.shape, a.dtype, b.dtype)

    @staticmethod
    def problem(args: tuple) -> Problem:
        """The call's problem; ValueError for a call no GEMM can serve."""
        if len(args) != 2:
            raise ValueError(f"gemm takes (a, b), got {len(args)} tensors")
        a, b = args
        if len(b.shape) != 2 or len(a.shape) < 1 or a.shape[-1] != b.shape[1]:
            raise ValueError(f"gemm: a {tuple(a.shape)} and b {tuple(b.shape)} do not multiply as "
                             "a @ b.T (a: (..., K), b: (N, K))")
        if a.dtype != b.dtype:
            raise ValueError(f"gemm: a is {dtype_name(a.dtype)}, b is {dtype_name(b.dtype)}")
        M = math.prod(a.shape[:-1])
        return Problem.of(dtype_name(a.dtype), M=M, N=b.shape[0], K=b.shape[1])

    @staticmethod
    def launcher(args: tuple, problem: Problem, kernel) -> Launcher:
        """Run the TIRx kernel (buffers a, b, d in the template's order)."""
        M, N, K = problem["M"], problem["N"], problem["K"]
        out_shape = (*args[0].shape[:-1], N)
        flat = len(args[0].shape) != 2

        def launch(args, out):
            a, b = args
            if flat:
                a = a.reshape(M, K)
            if not a.is_contiguous():
                a = a.contiguous()
            if not b.is_contiguous():
                b = b.contiguous()
            d = a.new_empty((M, N)) if out is None else out
            kernel(a, b, d, check=False)  # shape and dtype are fixed by the route's key
            return d.view(out_shape) if flat else d

        return launch

    @staticmethod
    def vendor_launcher(args: tuple, problem: Problem) -> Launcher:
        """torch's own GEMM (cuBLAS): the last resort when no kernel exists for the shape."""

        def launch(args, out):
            a, b = args
            d = a @ b.T
            if out is None:
                return d
            out.copy_(d)
            return out

        return launch


BINDINGS = {"gemm": GemmBinding}
