"""What an attention kernel is compiled for, shared by the Hopper and Blackwell templates (plain
Python, no TVM).

Layout is FlashAttention's: q (batch, seqlen_q, heads_q, head_dim), k and v (batch, seqlen_k,
heads_kv, head_dim), o like q, and the log-sum-exp lse (batch, heads_q, seqlen_q) in float32.
Batch and the sequence lengths are runtime sizes: one binary serves them all. A binary is
compiled for the head dim, the head counts, the dtype and causality. Query head h reads
key/value head h // (heads_q // heads_kv) (GQA; MHA when the counts are equal).

Causal masking with seqlen_q != seqlen_k is aligned to the bottom right, as FlashAttention's:
query i sees key j iff j <= i + seqlen_k - seqlen_q (the queries are the last seqlen_q
positions of a sequence whose first seqlen_k - seqlen_q keys are cached). A query row that sees
no key gets o = 0 and lse = +inf.
"""

from __future__ import annotations

import dataclasses

DTYPES = ("bfloat16", "float16")


@dataclasses.dataclass(frozen=True)
class AttentionProblem:
    head_dim: int
    heads_q: int
    heads_kv: int
    causal: bool
    dtype: str = "bfloat16"
    softmax_scale: float | None = None  # None: 1 / sqrt(head_dim)

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.heads_q // self.heads_kv

    @property
    def scale(self) -> float:
        return self.softmax_scale if self.softmax_scale is not None else self.head_dim ** -0.5

    def errors(self) -> list[str]:
        """Why this problem is not an attention problem; [] when it is."""
        out = []
        if self.dtype not in DTYPES:
            out.append(f"dtype {self.dtype!r} is not one of {DTYPES}")
        if self.heads_q < 1 or self.heads_kv < 1 or self.heads_q % self.heads_kv:
            out.append(f"heads_q={self.heads_q} must be a positive multiple of "
                       f"heads_kv={self.heads_kv}: each key/value head serves a group")
        if self.head_dim < 1:
            out.append(f"head_dim={self.head_dim} must be positive")
        return out


def flops(problem: AttentionProblem, batch: int, seqlen_q: int, seqlen_k: int) -> float:
    """Matmul FLOPs of the forward pass as FlashAttention and cuDNN count them: 4 * b * h * sq *
    sk * d (Q K^T and P V), halved when causal whatever the lengths."""
    f = 4.0 * batch * problem.heads_q * seqlen_q * seqlen_k * problem.head_dim
    return f / 2 if problem.causal else f

