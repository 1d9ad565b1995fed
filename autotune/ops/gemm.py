"""GEMM, whatever the template: D = A @ B^T with A (M x K) and B (N x K) K-major as in a linear
layer; its problem, inputs, reference, vendor baseline and cost, and its torch binding:
op(a, b, out=None) = a @ b.T with a: (..., K), b: (N, K) - torch.nn.Linear's weight layout, so
`op(x, linear.weight)` is `F.linear(x, linear.weight)`. Tensors are used through their methods
(no torch import at module level: CPU tests pass look-alikes)."""

from __future__ import annotations

import math
import re

from .problem import Problem
from .base import Launcher, Op, dtype_name
from .bucket import BucketRule


class Gemm(Op):
    name = "gemm"
    fields = {"M": int, "N": int, "K": int}
    # Same N, K and dtype; M (the tokens) in the same power-of-two bucket.
    bucket = BucketRule(same=("N", "K"), pow2=("M",))
    # Spelled out: torch's schema inference cannot read postponed annotations.
    schema = "(Tensor a, Tensor b) -> Tensor"

    # -- problems -------------------------------------------------------------------------
    def parse(self, text: str, dtype: str = "bfloat16") -> Problem:
        if "=" in (text or ""):
            return super().parse(text, dtype)
        m = re.fullmatch(r"\s*(\d+)\s*[xX,]\s*(\d+)\s*[xX,]\s*(\d+)\s*", text)
        if not m:
            raise ValueError(f"GEMM shape {text!r} is not of the form MxNxK (e.g. 4096x4096x4096)")
        M, N, K = (int(g) for g in m.groups())
        for name, size in (("M", M), ("N", N), ("K", K)):
            if size < 1:
                raise ValueError(f"GEMM {text}: {name} must be >= 1 (sizes must be positive)")
        return self.problem(dtype, M=M, N=N, K=K)

    def flops(self, problem: Problem) -> float:
        return 2.0 * problem["M"] * problem["N"] * problem["K"]

    def bytes_moved(self, problem: Problem) -> float:
        M, N, K = problem["M"], problem["N"], problem["K"]
        return 2.0 * (M * K + N * K + M * N)

    # -- checking -------------------------------------------------------------------------
    def make_inputs(self, problem: Problem, seed: int, device: str = "cuda") -> list:
        import torch

        dtype = getattr(torch, problem.dtype)
        # drawn where they are used: a CPU draw of the largest suite shapes takes seconds
        gen = torch.Generator(device=device).manual_seed(seed)
        M, N, K = problem["M"], problem["N"], problem["K"]
        a = torch.randn(M, K, generator=gen, device=device).to(dtype=dtype)
        b = torch.randn(N, K, generator=gen, device=device).to(dtype=dtype)
        d = torch.empty(M, N, dtype=dtype, device=device)
        return [a, b, d]

    def output_indices(self, problem: Problem) -> list[int]:
        return [2]

    def reference(self, problem: Problem, inputs: list) -> list:
        a, b, _ = inputs
        return [a.float() @ b.float().T]  # fp32: the kernel's own rounding is what is measured

    def vendor(self, problem: Problem, inputs: list):
        import torch

        a, b, d = inputs
        return lambda: torch.matmul(a, b.T, out=d)  # writes its output, as the kernel does

    # -- the torch binding ----------------------------------------------------------------
    def call_problem(self, args: tuple) -> Problem:
        if len(args) != 2:
            raise ValueError(f"gemm takes (a, b), got {len(args)} tensors")
        a, b = args
        if len(b.shape) != 2 or len(a.shape) < 1 or a.shape[-1] != b.shape[1]:
            raise ValueError(f"gemm: a {tuple(a.shape)} and b {tuple(b.shape)} do not multiply as "
                             "a @ b.T (a: (..., K), b: (N, K))")
        if a.dtype != b.dtype:
            raise ValueError(f"gemm: a is {dtype_name(a.dtype)}, b is {dtype_name(b.dtype)}")
        return self.problem(dtype_name(a.dtype), M=math.prod(a.shape[:-1]), N=b.shape[0],
                            K=b.shape[1])

    def launcher(self, args: tuple, problem: Problem, kernel) -> Launcher:
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

    def vendor_launcher(self, args: tuple, problem: Problem) -> Launcher:
        """torch's own GEMM (cuBLAS)."""

        def launch(args, out):
            a, b = args
            d = a @ b.T
            if out is None:
                return d
            out.copy_(d)
            return out

        return launch

    def fake(self, a, b):
        return a.new_empty((*a.shape[:-1], b.shape[0]))


GEMM = Gemm()
