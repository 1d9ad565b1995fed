"""Shape classes wider than "same hand-tuned default": which tuned shapes count as an untuned
shape's peers when dispatch weighs the studies' records (rules.py).

Why: on 14 unseen shapes no tuned shape shared an unseen shape's default config exactly, so no
record could serve any of them (studies/2026-11-23-h100-gemm-s3/). A GEMM's class is what decides
how a config behaves on it: the M regime (decode, skinny, mid, large), how many waves of
128x128 tiles it fills on the GPU, and whether K or N dominates. Peers of a class were each tuned
with their own default; evidence is a config beating *its peer's* default (rules.py)."""

from __future__ import annotations

import math
from typing import Hashable

from ..spaces.base import Problem

M_TOPS = (16, 64, 256, 1024)  # M regimes: <= 16 (decode), <= 64, <= 256, <= 1024, larger
SMS = 132  # H100 / H200 SXM: the class needs only the wave count's order, not the exact SMs
TILE = 128
MAX_WAVES = 3  # 3 waves and more behave alike (the last wave's tail matters less)


def gemm_class(problem: Problem) -> Hashable | None:
    """(dtype, M regime, waves of 128x128 tiles (capped), K/N regime), or None for a problem
    that is not a GEMM (its peers are then only the shapes of its own default)."""
    values = problem.values
    if not {"M", "N", "K"} <= set(values):
        return None
    m, n, k = values["M"], values["N"], values["K"]
    regime = sum(m > top for top in M_TOPS)
    waves = math.ceil(math.ceil(m / TILE) * math.ceil(n / TILE) / SMS)
    ratio = "deep" if k >= 2 * n else "wide" if 2 * k <= n else "square"
    return problem.dtype, regime, min(waves, MAX_WAVES), ratio
