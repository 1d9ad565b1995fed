"""A check of the timing protocol against the truth it stands for: a GEMM's time inside a CUDA
graph that looks like a decoder block (`autotune compare --block`). The protocol was chosen by
this measure on H100s (studies/2026-11-23-h100-gemm-protocol/); running it beside the
protocol's times shows where the two part (e.g. cuBLAS reads 2-11% faster back to back, and
only here does a kernel's L2 policy speed up its neighbours).

L layers, each: A = x * g (the previous op writes the activation), D = A @ W_l^T with a weight of
its own (L x weight bytes >= 3 x L2, so every weight streams from HBM), then y = x + D[:, :w]
(the next op reads D). A variant's time: (replay time - replay time of the same graph without
it) / L, median over interleaved rounds."""

from __future__ import annotations

import math
import statistics

from ..errors import UserError
from ..runner.protocol import time_in_graph
from ..runner.timing import interleaved

MIN_LAYERS, MAX_LAYERS = 8, 64


class Block:
    """The decoder-like block of one GEMM problem (inputs A (M x K), B (N x K), D (M x N))."""

    def __init__(self, space, problem, seed: int = 7):
        import torch

        if space.kernel != "gemm":
            raise UserError(f"--block times GEMMs inside a decoder-like graph; {space.name} "
                            f"computes {space.kernel}")
        M, N, K = problem["M"], problem["N"], problem["K"]
        dtype = getattr(torch, problem.dtype)
        l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        self.layers = min(MAX_LAYERS, max(MIN_LAYERS, math.ceil(3 * l2 / (2 * N * K))))
        gen = torch.Generator(device="cuda").manual_seed(seed)

        def draw(*shape):
            return torch.randn(*shape, generator=gen, device="cuda").to(dtype)

        self.weights = [draw(N, K) for _ in range(self.layers)]
        self.x = draw(M, K)
        self.g = (torch.rand(K, generator=gen, device="cuda") + 0.5).to(dtype)
        self.a, self.d = torch.empty_like(self.x), torch.empty(M, N, device="cuda", dtype=dtype)
        self.w = min(N, K)
        self.y = torch.empty(M, self.w, device="cuda", dtype=dtype)

    def _replay_ms(self, calls) -> float:
        import torch

        def body():
            for layer in range(self.layers):
                torch.mul(self.x, self.g, out=self.a)
                if calls:
                    calls[layer]()
                torch.add(self.x[:, :self.w], self.d[:, :self.w], out=self.y)

        return time_in_graph(lambda i: body(), 1).ms

    def times(self, binders: dict, rounds: int) -> dict[str, float]:
        """{variant: in-block ms} for binders (inputs -> zero-argument call), as the protocol's."""
        calls = {v: [bind([self.a, w, self.d]) for w in self.weights]
                 for v, bind in binders.items()}
        measures = {v: (lambda c=c: self._replay_ms(c)) for v, c in calls.items()}
        measures[None] = lambda: self._replay_ms(None)
        per_round = interleaved(measures, rounds)
        base = per_round.pop(None)
        return {v: statistics.median((t - b) / self.layers for t, b in zip(ts, base))
                for v, ts in per_round.items()}
