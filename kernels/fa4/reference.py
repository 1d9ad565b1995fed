"""Reference attention in numpy (float64), the oracle both FA4 templates are checked against.

Conventions (kernels/fa4/problem.py): q (batch, seqlen_q, heads_q, head_dim), k and v
(batch, seqlen_k, heads_kv, head_dim), as FlashAttention lays them out; query head h reads kv
head h // (heads_q // heads_kv); the softmax scale is 1/sqrt(head_dim) unless given; causal
masking is aligned bottom-right (query i sees key j iff j <= i + seqlen_k - seqlen_q). Returns
o in q's layout and the natural-log log-sum-exp of the scaled scores, (batch, heads_q,
seqlen_q). A row that sees no key gets o = 0 and lse = +inf, FlashAttention's convention.
"""

from __future__ import annotations

import numpy as np


def visible(seqlen_q: int, seqlen_k: int, causal: bool) -> np.ndarray:
    """(seqlen_q, seqlen_k) boolean mask of the keys each query may attend to."""
    if not causal:
        return np.ones((seqlen_q, seqlen_k), dtype=bool)
    rows = np.arange(seqlen_q)[:, None]
    cols = np.arange(seqlen_k)[None, :]
    return cols <= rows + (seqlen_k - seqlen_q)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False,
              scale: float | None = None):
    """(o, lse) in float64 for float inputs in the layout above."""
    batch, seqlen_q, heads_q, head_dim = q.shape
    _, seqlen_k, heads_kv, _ = k.shape
    if heads_q % heads_kv:
        raise ValueError(f"heads_q={heads_q} is not a multiple of heads_kv={heads_kv}")
    group = heads_q // heads_kv
    qh = q.astype(np.float64).transpose(0, 2, 1, 3)  # (b, hq, sq, d)
    kh = np.repeat(k.astype(np.float64).transpose(0, 2, 1, 3), group, axis=1)
    vh = np.repeat(v.astype(np.float64).transpose(0, 2, 1, 3), group, axis=1)
    scale = head_dim ** -0.5 if scale is None else scale
    scores = qh @ kh.transpose(0, 1, 3, 2) * scale
    scores = np.where(visible(seqlen_q, seqlen_k, causal), scores, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    empty = np.isneginf(row_max)
    weights = np.exp(scores - np.where(empty, 0.0, row_max))
    row_sum = weights.sum(axis=-1, keepdims=True)
    o = (weights @ vh) / np.where(empty, 1.0, row_sum)
    lse = np.where(empty, np.inf, np.log(np.where(empty, 1.0, row_sum)) + row_max)[..., 0]
    return o.transpose(0, 2, 1, 3), lse
