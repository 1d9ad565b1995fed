"""Which config serves a shape, and when the vendor op serves it instead.

Order of configs (the dispatcher takes the first legal one with a kernel):
  1. exact: the entry tuned for this very problem;
  2. bucket: the configs of other tuned entries of the problem's bucket (the op's BucketRule:
     e.g. GEMM keeps N, K and the dtype and rounds M up to a power of two: the same weights at
     a nearby batch) - each only if the studies' records show that it generalises (below);
  3. default: the plugin's hand-tuned config, legal for every legal shape.

A config tuned elsewhere generalises to a problem P when, on the tuned shapes of P's class
(its peers: those whose hand-tuned default is P's default, and those of P's shape class,
classes.py, e.g. a GEMM's M regime x waves x K/N), it was timed (Entry.measured) faster than
each peer's own default by more than NOISE on at least MIN_WINS of them, and slower than it on
none. Why: the nearest tuned shape's config, taken blindly, made an untuned shape 0.59x its own
default on an H100 (issue 18), while the defaults generalise (1.00-1.03x cuBLAS in the block on
shapes their rules were not written from, studies/2026-11-23-h100-gemm-fewtile/). With no such
evidence, the default serves.

Configs of the nearest tuned shapes outside the bucket (NEAREST, log-size distance, the same
evidence asked) are only candidates for first use (`choices(..., nearest=True)`), which times
them on the shape before any serves; dispatch never serves them untimed. Why: served so, with
that evidence, they lost to the shape's own default on 14 of 17 unseen shapes timed on an H100
over four sessions (0.69-0.95x; 0.89x geomean over the 17) and won by more than 1% on one:
their wins on the peers were mostly on the shapes they had been tuned for (the `judge0` runs of
studies/2026-11-24-h100-gemm-s11, -s12, -s13 and 2026-11-25-h100-gemm-s17).

The vendor op serves instead (VENDOR_FASTER) when the records say it is faster beyond noise:
for a tuned problem, its vendor_ms is under (1 - NOISE) x the entry's time; for an untuned one,
on the peers that timed both, the vendor beat what P would run (the borrowed config; for P's
default, each peer's own default) by more than NOISE on at least MIN_WINS and lost to it on
none. No recorded vendor time on the peers: no vendor route.

NOISE: under the protocol (runner/protocol.py) a config's time moved by a median 0.2% from one
run to the next on an H100, 98% of them by less than 3%
(studies/2026-11-23-h100-gemm-protocol/, the `rules` runs).
"""

from __future__ import annotations

import math
from typing import Callable, Hashable, Mapping, NamedTuple

from ..ops.bucket import BucketRule
from ..spaces.base import Config, Problem
from ..store.format import Entry, config_id
from .classes import gemm_class

EXACT, BUCKET, NEAREST, DEFAULT = "exact", "bucket", "nearest", "default"
NOISE = 0.03
MIN_WINS = 2


class Choice(NamedTuple):
    config: Config
    reason: str  # EXACT, BUCKET, NEAREST or DEFAULT
    tuned: str | None  # the entry's problem key; None for the default
    evidence: str = ""  # for a config tuned elsewhere: the records that let it serve


def _tally(pairs: list[tuple[float, float]]) -> tuple[int, int, float]:
    """(wins, losses, geomean speed-up) of `challenger` over `incumbent` times, pairs of
    (incumbent_ms, challenger_ms): a win is faster by more than NOISE, a loss any slower."""
    wins = sum(c < i * (1 - NOISE) for i, c in pairs)
    lost = sum(c > i for i, c in pairs)
    gain = math.exp(sum(math.log(i / c) for i, c in pairs) / len(pairs)) if pairs else 1.0
    return wins, lost, gain


class Selector:
    """Ranks the stored entries for a problem. Runs once per new shape (the dispatcher caches
    the outcome), so linear scans over entries are fine."""

    def __init__(self, entries: Mapping[str, Entry], rule: BucketRule,
                 default_config: Callable[[Problem], Config],
                 shape_class: Callable[[Problem], Hashable | None] | None = gemm_class,
                 tolerate_losses: bool = False):
        """shape_class: a problem's class beyond its default (None: same default only).
        tolerate_losses: evidence may include losses if the wins outnumber them - only to
        measure what the no-loss rule buys (loso.py); dispatch never sets it."""
        self.rule, self.default_config = rule, default_config
        self.tolerate_losses = tolerate_losses
        self.shape_class = shape_class or (lambda problem: None)
        self.entries, self.problems, self._defaults, self._classes = {}, {}, {}, {}
        for entry in entries.values():
            self.add(entry)

    def add(self, entry: Entry) -> None:
        """Take `entry` as its problem's tuned entry (e.g. one first-use tuning just made)."""
        problem = entry.parsed_problem
        self.entries[entry.problem], self.problems[entry.problem] = entry, problem
        self._defaults[entry.problem] = self.default_config(problem)
        self._classes[entry.problem] = self.shape_class(problem)

    def peers(self, problem: Problem) -> list[Entry]:
        """The tuned entries of the problem's class (same dtype; same hand-tuned default or
        same shape class), the problem's own excepted."""
        default, cls = self.default_config(problem), self.shape_class(problem)
        return [self.entries[k] for k, p in self.problems.items()
                if k != problem.key and p.dtype == problem.dtype
                and (self._defaults[k] == default or (cls is not None and self._classes[k] == cls))]

    def default_ms(self, entry: Entry) -> float | None:
        """The entry's time of today's default for its shape: the study's record of that config
        where it timed it, else the default time the study recorded (a study made before the
        default rules changed timed another default: its `default_ms` is that one's)."""
        current = (entry.measured or {}).get(config_id(self._defaults[entry.problem]))
        return current or entry.default_ms

    def evidence(self, problem: Problem, config: Config) -> str | None:
        """Why `config` may serve `problem` though tuned elsewhere, or None if the records do
        not show that it generalises (see the module's docstring)."""
        cid = config_id(config)
        won = self._won_on_peers(problem, lambda e: (self.default_ms(e),
                                                     (e.measured or {}).get(cid)))
        if won is None:
            return None
        wins, shapes, gain = won
        return (f"beat the default on {wins} of {shapes} tuned shapes of its class "
                f"({gain:.3f}x geomean)")

    def _won_on_peers(self, problem: Problem, times: Callable[[Entry], tuple]) -> tuple | None:
        """(wins, shapes, geomean speed-up) of a challenger over an incumbent on the tuned shapes
        of the problem's class that timed both (`times(entry)`: (incumbent_ms, challenger_ms)),
        or None unless it won on MIN_WINS of them and lost on none."""
        pairs = [t for t in map(times, self.peers(problem)) if all(t)]
        wins, lost, gain = _tally(pairs)
        refused = lost >= wins if self.tolerate_losses else lost
        return None if wins < MIN_WINS or refused else (wins, len(pairs), gain)

    def choices(self, problem: Problem, nearest: bool = False) -> list[Choice]:
        """The configs that may serve `problem`, in the module's order; with `nearest`, also
        the nearest tuned shapes' configs (after the bucket's): candidates for first use."""
        out = []
        exact = self.entries.get(problem.key)
        if exact is not None:
            out.append(Choice(exact.config, EXACT, exact.problem))
        bucket = self.rule.bucket(problem)
        others = [k for k, p in self.problems.items()
                  if k != problem.key and p.dtype == problem.dtype]
        in_bucket = [k for k in others
                     if bucket is not None and self.rule.bucket(self.problems[k]) == bucket]

        def by_distance(keys):  # every stored shape only where first use asks for the nearest
            return sorted(keys, key=lambda k: (self.rule.distance(problem, self.problems[k]), k))

        ranked = [(k, BUCKET) for k in by_distance(in_bucket)]
        if nearest:
            ranked += [(k, NEAREST) for k in by_distance(set(others) - set(in_bucket))]
        default = self.default_config(problem)
        tried = [default]
        for key, reason in ranked:
            config = self.entries[key].config
            if config in tried:
                continue
            tried.append(config)
            why = self.evidence(problem, config)
            if why:
                out.append(Choice(config, reason, key, why))
        out.append(Choice(default, DEFAULT, None))
        return out

    def vendor_faster(self, problem: Problem, config: Config) -> str | None:
        """Why the vendor op should serve `problem` instead of `config`, or None."""
        exact = self.entries.get(problem.key)
        if exact is not None and exact.config == config:
            if exact.vendor_ms and exact.vendor_ms < exact.time_ms * (1 - NOISE):
                return f"the vendor op timed {exact.time_ms / exact.vendor_ms:.3f}x faster here"
            return None
        if config == self.default_config(problem):  # on each peer, its own default
            won = self._won_on_peers(problem, lambda e: (self.default_ms(e), e.vendor_ms))
        else:
            cid = config_id(config)
            won = self._won_on_peers(problem, lambda e: ((e.measured or {}).get(cid), e.vendor_ms))
        if won is None:
            return None
        wins, shapes, gain = won
        return (f"the vendor op beat this config on {wins} of {shapes} tuned shapes of its class "
                f"({gain:.3f}x geomean)")
