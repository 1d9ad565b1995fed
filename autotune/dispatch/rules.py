"""Which tuned config serves a shape that was not tuned.

Order (first legal one with a kernel wins; the dispatcher walks the list):
  1. exact: the entry tuned for this very problem;
  2. bucket: entries in the problem's bucket, nearest first. A bucket keeps the sizes that
     change a kernel's character fixed and rounds the one that varies at run time (tokens) up
     to a power of two. GEMM: same N, K, dtype; M in the same power-of-two bucket.
     Attention: same head_dim, causal and GQA ratio; sequence length in the same bucket;
  3. nearest: every other tuned entry of the same dtype, nearest first (log-size distance);
  4. default: the plugin's hand-tuned config, legal for every legal shape.

Rules live here, keyed by the plugin's `kernel`, rather than on the SearchSpace contract,
so plugins need not change; a plugin with no rule gets exact -> nearest -> default.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping, NamedTuple

from ..spaces.base import Config, Problem
from ..store.format import Entry

EXACT, BUCKET, NEAREST, DEFAULT = "exact", "bucket", "nearest", "default"


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


@dataclasses.dataclass(frozen=True)
class BucketRule:
    same: tuple[str, ...] = ()  # sizes a bucket holds fixed
    pow2: tuple[str, ...] = ()  # sizes rounded up to a power of two
    derive: Callable[[dict[str, int]], dict[str, int]] | None = None  # extra sizes (GQA ratio)

    def features(self, problem: Problem) -> dict[str, int]:
        sizes = problem.sizes
        return {**sizes, **self.derive(sizes)} if self.derive else sizes

    def bucket(self, problem: Problem) -> tuple | None:
        """The problem's bucket, or None when the rule has none (no size varies by bucket)."""
        if not self.pow2:
            return None
        f = self.features(problem)
        return (problem.dtype, tuple(f[k] for k in self.same),
                tuple(next_pow2(f[k]) for k in self.pow2))

    def distance(self, a: Problem, b: Problem) -> float:
        """Sum of |log2| size ratios: 2x in one size is as far as 2x in another."""
        fa, fb = self.features(a), self.features(b)
        return sum(abs(math.log2(1 + fa.get(k, 0)) - math.log2(1 + fb.get(k, 0)))
                   for k in sorted(set(fa) | set(fb)))


def _gqa_ratio(sizes: dict[str, int]) -> dict[str, int]:
    heads = sizes.get("H", 1)
    return {"gqa": heads // max(1, sizes.get("H_kv", heads))}


GEMM_RULE = BucketRule(same=("N", "K"), pow2=("M",))
# Names follow the attention plugin's Problem: B, H, H_kv, S, D, causal (adjust when it lands).
ATTENTION_RULE = BucketRule(same=("D", "causal", "gqa"), pow2=("S",), derive=_gqa_ratio)
NEAREST_ONLY = BucketRule()
RULES: dict[str, BucketRule] = {"gemm": GEMM_RULE, "attention": ATTENTION_RULE}


def rule_for(kernel: str) -> BucketRule:
    return RULES.get(kernel, NEAREST_ONLY)


class Choice(NamedTuple):
    config: Config
    reason: str  # EXACT, BUCKET, NEAREST or DEFAULT
    tuned: str | None  # the entry's problem key; None for the default


class Selector:
    """Ranks the stored entries for a problem. Runs once per new shape (the dispatcher caches
    the outcome), so a linear scan over entries is fine."""

    def __init__(self, entries: Mapping[str, Entry], rule: BucketRule,
                 default_config: Callable[[Problem], Config]):
        self.rule, self.default_config = rule, default_config
        self.entries = dict(entries)
        self.problems = {key: e.parsed_problem for key, e in self.entries.items()}

    def choices(self, problem: Problem) -> list[Choice]:
        out = []
        exact = self.entries.get(problem.key)
        if exact is not None:
            out.append(Choice(exact.config, EXACT, exact.problem))
        bucket = self.rule.bucket(problem)
        others = sorted(
            (key for key, p in self.problems.items() if key != problem.key and p.dtype == problem.dtype),
            key=lambda key: (self.rule.distance(problem, self.problems[key]), key))
        for key in others:
            if bucket is not None and self.rule.bucket(self.problems[key]) == bucket:
                out.append(Choice(self.entries[key].config, BUCKET, key))
        for key in others:
            if bucket is None or self.rule.bucket(self.problems[key]) != bucket:
                out.append(Choice(self.entries[key].config, NEAREST, key))
        out.append(Choice(self.default_config(problem), DEFAULT, None))
        return out
