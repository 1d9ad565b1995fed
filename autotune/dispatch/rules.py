"""Which tuned config serves a shape that was not tuned.

Order (first legal one with a kernel wins; the dispatcher walks the list):
  1. exact: the entry tuned for this very problem;
  2. bucket: entries in the problem's bucket (the op's BucketRule: e.g. GEMM keeps N, K and the
     dtype and rounds M up to a power of two), nearest first;
  3. nearest: every other tuned entry of the same dtype, nearest first (log-size distance);
  4. default: the plugin's hand-tuned config, legal for every legal shape.
"""

from __future__ import annotations

from typing import Callable, Mapping, NamedTuple

from ..ops.bucket import BucketRule
from ..spaces.base import Config, Problem
from ..store.format import Entry

EXACT, BUCKET, NEAREST, DEFAULT = "exact", "bucket", "nearest", "default"


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
