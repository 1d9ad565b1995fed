"""Devices that replay a recorded table of config -> time or failure (the `simulated` runner):
search strategies can be tested on a CPU against real (or synthetic) measurements, instantly and
reproducibly. Their results are labelled replayed, from which table. A row with a true `vendor`
column holds the vendor op's time for its problem (its knob cells are ignored).

Noise is replayed honestly: a row that records its spread (`min_ms`, `max_ms` over the rounds
that measured it, as `autotune record-ingest` writes) is replayed as a time drawn within that
spread, triangular around the recorded median, so a search sees the noise a GPU would have shown
it. The draws are seeded by (seed, problem, config, how many times it was served before): the
same run replays the same times, whatever else it asks in between."""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import math
import random
import time
from collections.abc import Mapping

from ..spaces.base import Config, Problem
from .base import Cause, Job, Provenance, Result, Timing
from .sides import DevicePool, Key

_TIME, _CAUSE, _PROBLEM, _VENDOR = "time_ms", "cause", "problem", "vendor"
_MIN, _MAX = "min_ms", "max_ms"
# Columns that describe a row, not a knob: its time and spread, and what a recording notes.
_NOT_KNOBS = (_TIME, _CAUSE, _PROBLEM, _VENDOR, _MIN, _MAX, "rounds", "warm_ms", "source")
_VENDOR_ROW = ("<vendor>",)  # the key of a problem's vendor row


def _key(values) -> tuple[str, ...]:
    return tuple(str(v) for v in values)


def _cell(value):
    """A table cell, None where it is empty (NaN, None or "")."""
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def _number(value) -> float | None:
    value = _cell(value)
    return None if value is None else float(value)


@dataclasses.dataclass(frozen=True)
class Recorded:
    """One row: the median time and its spread (none recorded: always the median), or the
    cause of the failure."""

    time_ms: float | None
    cause: str | None = None
    min_ms: float | None = None
    max_ms: float | None = None

    def draw(self, rng: random.Random) -> float:
        """A time within the recorded spread, most likely near the median."""
        lo, hi = self.min_ms, self.max_ms
        if lo is None or hi is None or hi <= lo:
            return self.time_ms
        return rng.triangular(lo, hi, self.time_ms)


@dataclasses.dataclass
class RecordedTable:
    """Rows of parameter values with `time_ms` (and optionally its spread, `min_ms` and
    `max_ms`), or a `cause` when the candidate failed. An optional `problem` column
    (Problem.key) holds several shapes in one table; `rounds`, `warm_ms` and `source` are notes."""

    params: list[str]
    rows: dict[tuple[str, tuple[str, ...]], Recorded]

    @classmethod
    def from_frame(cls, frame) -> "RecordedTable":
        if _TIME not in frame.columns:
            raise ValueError(f"a recorded table needs a {_TIME!r} column")
        params = [c for c in frame.columns if c not in _NOT_KNOBS]
        rows = {}
        for rec in frame.to_dict("records"):
            t, cause = _number(rec[_TIME]), _cell(rec.get(_CAUSE))
            lo, hi = _number(rec.get(_MIN)), _number(rec.get(_MAX))
            cause = None if cause is None else str(cause)
            if t is None and cause is None:
                raise ValueError(f"row {rec} has neither a time nor a cause")
            if t is not None and (lo is None) != (hi is None):
                raise ValueError(f"row {rec} has one of {_MIN} and {_MAX} without the other")
            if t is not None and lo is not None and not lo <= t <= hi:
                raise ValueError(f"row {rec}: {_TIME} is outside [{_MIN}, {_MAX}]")
            vendor = rec.get(_VENDOR)
            values = _VENDOR_ROW if vendor is True or str(vendor).lower() == "true" \
                else _key(rec[p] for p in params)
            rows[(str(_cell(rec.get(_PROBLEM)) or ""), values)] = Recorded(t, cause, lo, hi)
        return cls(params, rows)

    @classmethod
    def from_csv(cls, path: str) -> "RecordedTable":
        import pandas as pd

        # As text: a vendor row's empty knob cells must not turn integer columns into floats.
        return cls.from_frame(pd.read_csv(path, dtype=str, keep_default_na=False))

    @classmethod
    def from_study(cls, study) -> "RecordedTable":
        """Record a finished study (e.g. measured on a GPU) for replay, with its vendor time."""
        import pandas as pd

        from optuna.trial import TrialState

        problem = study.user_attrs.get("problem", "")
        records = []
        for t in study.get_trials(deepcopy=False):
            cause = t.user_attrs.get("cause")
            if t.state == TrialState.COMPLETE or (t.state == TrialState.FAIL and cause):
                spread = {}
                timing = t.user_attrs.get("timing")
                if t.state == TrialState.COMPLETE and timing:  # a re-timed value may lie outside
                    spread = {_MIN: min(timing["min_ms"], t.value),
                              _MAX: max(timing["max_ms"], t.value)}
                records.append({**t.params, _TIME: t.value, _CAUSE: cause, **spread,
                                _PROBLEM: problem, _VENDOR: False})
        if study.user_attrs.get("vendor_ms") is not None:
            records.append({_TIME: study.user_attrs["vendor_ms"], _PROBLEM: problem,
                            _VENDOR: True})
        return cls.from_frame(pd.DataFrame.from_records(records))

    def digest(self) -> str:
        """Hash of the table's rows: which recording a replayed time came from."""
        text = repr((self.params, sorted(self.rows.items(), key=repr)))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def lookup(self, config: Config, problem: Problem, vendor: bool = False,
               added_knobs: Mapping[str, object] | None = None) -> Recorded:
        """The row of `config` (or the vendor op) on `problem`. A knob the table lacks that
        the space gained after the recording (`added_knobs`) was measured at its earlier value
        only: a config with another value of it was not recorded."""
        if not vendor and any(k not in self.params and config[k] != v
                              for k, v in (added_knobs or {}).items() if k in config):
            return Recorded(None, Cause.NOT_RECORDED.value)
        values = _VENDOR_ROW if vendor else _key(config.get(p) for p in self.params)
        for problem_key in (problem.key, ""):
            if (problem_key, values) in self.rows:
                return self.rows[(problem_key, values)]
        return Recorded(None, Cause.NOT_RECORDED.value)


class ReplayDevices(DevicePool):
    """Devices that replay a RecordedTable: `slots` at a time, each result `delay_s` after its
    start, its time drawn within the row's spread (seeded by `seed`). `table_name` (e.g. its
    file) labels the results' provenance."""

    name = "replay"

    def __init__(self, table: RecordedTable, slots: int = 1, delay_s: float = 0.0,
                 table_name: str = "<table>", seed: int = 0):
        self.table, self._slots, self.delay_s, self.seed = table, slots, delay_s, seed
        self._served: collections.Counter = collections.Counter()
        self._provenance = Provenance("replayed", {"table": table_name, "sha256": table.digest()})
        self._running: dict[Key, tuple[float, Result]] = {}
        self.measured: list[Config] = []  # every config served, in order
        self.vendor_served = 0  # how often the vendor op was

    provenance = property(lambda self: self._provenance)
    slots = property(lambda self: self._slots)
    busy = property(lambda self: len(self._running))

    def start(self, key: Key, job: Job) -> None:
        candidate = job.candidate
        if candidate.vendor:
            self.vendor_served += 1
        else:
            self.measured.append(dict(candidate.config))
        row = self.table.lookup(candidate.config, candidate.problem, candidate.vendor,
                                candidate.space.added_knobs)
        if row.cause is not None:
            try:
                cause_enum = Cause(row.cause)
            except ValueError:
                cause_enum = Cause.ERROR
            result = Result(None, cause_enum, f"recorded failure: {row.cause}")
        else:
            time_ms = row.draw(self._rng(candidate))
            result = Result(None, timing=Timing(time_ms, time_ms, time_ms, rounds=1,
                                                iters_per_round=1, input_sets=1))
        self._running[key] = (time.monotonic() + self.delay_s, result)

    def _rng(self, candidate) -> random.Random:
        """The noise of this config's n-th replay: independent of the order of other replays
        (a str seed is hashed with SHA-512, the same in every process)."""
        values = _VENDOR_ROW if candidate.vendor else \
            _key(candidate.config.get(p) for p in self.table.params)
        key = (candidate.problem.key, values)
        n = self._served[key]
        self._served[key] += 1
        return random.Random(f"{self.seed}|{key}|{n}")

    def harvest(self):
        now = time.monotonic()
        done = [(k, r) for k, (at, r) in self._running.items() if at <= now]
        for k, _ in done:
            del self._running[k]
        return done

    def next_event_s(self) -> float | None:
        if not self._running:
            return None
        return max(0.0, min(at for at, _ in self._running.values()) - time.monotonic())

    def kill(self, key: Key) -> None:
        del self._running[key]
