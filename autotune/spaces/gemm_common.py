"""What every GEMM space shares, whatever the template: D = A @ B^T with A (M x K) and B (N x K)
K-major as in a linear layer, its inputs, its reference, its vendor baseline and its cost."""

from __future__ import annotations

from .base import Problem


class GemmProblem:
    """Mixin for SearchSpace subclasses whose kernel takes (A, B, D)."""

    def flops(self, problem: Problem) -> float:
        return 2.0 * problem["M"] * problem["N"] * problem["K"]

    def bytes_moved(self, problem: Problem) -> float:
        M, N, K = problem["M"], problem["N"], problem["K"]
        return 2.0 * (M * K + N * K + M * N)

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
