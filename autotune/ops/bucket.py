"""How dispatch serves a problem nobody tuned: its bucket (BucketRule), declared by each op.

A bucket keeps the fields that change a kernel's character fixed and rounds the ones that vary
at run time (tokens, sequence length) up to a power of two: a config tuned for a problem may
serve the others of its bucket; the nearest tuned problems of the same dtype are only first
use's candidates (dispatch/rules.py)."""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

from .problem import Problem, Value


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


@dataclasses.dataclass(frozen=True)
class BucketRule:
    same: tuple[str, ...] = ()  # fields a bucket holds fixed (flags too)
    pow2: tuple[str, ...] = ()  # sizes rounded up to a power of two
    # extra fields computed from the problem's (e.g. attention's GQA ratio heads_q / heads_kv)
    derive: Callable[[dict[str, Value]], dict[str, Value]] | None = None

    def features(self, problem: Problem) -> dict[str, Value]:
        values = problem.values
        return {**values, **self.derive(values)} if self.derive else values

    def bucket(self, problem: Problem) -> tuple | None:
        """The problem's bucket, or None when the rule has none (no size varies by bucket)."""
        if not self.pow2:
            return None
        f = self.features(problem)
        return (problem.dtype, tuple(f[k] for k in self.same),
                tuple(next_pow2(f[k]) for k in self.pow2))

    def distance(self, a: Problem, b: Problem) -> float:
        """Sum of |log2| size ratios: 2x in one size is as far as 2x in another (a flag that
        differs counts as 2x)."""
        fa, fb = self.features(a), self.features(b)
        return sum(abs(math.log2(1 + fa.get(k, 0)) - math.log2(1 + fb.get(k, 0)))
                   for k in sorted(set(fa) | set(fb)))
