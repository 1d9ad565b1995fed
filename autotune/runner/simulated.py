"""Devices that replay a recorded table of config -> time or failure (the `simulated` runner):
search strategies can be tested on a CPU against real (or synthetic) measurements, instantly and
reproducibly. Their results are labelled replayed, from which table. A row with a true `vendor`
column holds the vendor op's time for its problem (its knob cells are ignored)."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import time

from ..spaces.base import Config, Problem
from .base import Cause, Job, Provenance, Result, Timing
from .sides import DevicePool, Key

_TIME, _CAUSE, _PROBLEM, _VENDOR = "time_ms", "cause", "problem", "vendor"
_VENDOR_ROW = ("<vendor>",)  # the key of a problem's vendor row


def _key(values) -> tuple[str, ...]:
    return tuple(str(v) for v in values)


def _cell(value):
    """A table cell, None where it is empty (NaN, None or "")."""
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


@dataclasses.dataclass
class RecordedTable:
    """Rows of parameter values with `time_ms`, or a `cause` when the candidate failed. An
    optional `problem` column (Problem.key) holds several shapes in one table."""

    params: list[str]
    rows: dict[tuple[str, tuple[str, ...]], tuple[float | None, str | None]]

    @classmethod
    def from_frame(cls, frame) -> "RecordedTable":
        if _TIME not in frame.columns:
            raise ValueError(f"a recorded table needs a {_TIME!r} column")
        params = [c for c in frame.columns if c not in (_TIME, _CAUSE, _PROBLEM, _VENDOR)]
        rows = {}
        for rec in frame.to_dict("records"):
            t, cause = _cell(rec[_TIME]), _cell(rec.get(_CAUSE))
            cause = None if cause is None else str(cause)
            t = None if t is None else float(t)
            if t is None and cause is None:
                raise ValueError(f"row {rec} has neither a time nor a cause")
            vendor = rec.get(_VENDOR)
            values = _VENDOR_ROW if vendor is True or str(vendor).lower() == "true" \
                else _key(rec[p] for p in params)
            rows[(str(rec.get(_PROBLEM, "")), values)] = (t, cause)
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
                records.append({**t.params, _TIME: t.value, _CAUSE: cause, _PROBLEM: problem,
                                _VENDOR: False})
        if study.user_attrs.get("vendor_ms") is not None:
            records.append({_TIME: study.user_attrs["vendor_ms"], _PROBLEM: problem,
                            _VENDOR: True})
        return cls.from_frame(pd.DataFrame.from_records(records))

    def digest(self) -> str:
        """Hash of the table's rows: which recording a replayed time came from."""
        text = repr((self.params, sorted(self.rows.items(), key=repr)))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def lookup(self, config: Config, problem: Problem,
               vendor: bool = False) -> tuple[float | None, str | None]:
        """(time, None) or (None, cause) of `config` (or the vendor op) on `problem`."""
        values = _VENDOR_ROW if vendor else _key(config.get(p) for p in self.params)
        for problem_key in (problem.key, ""):
            if (problem_key, values) in self.rows:
                return self.rows[(problem_key, values)]
        return None, Cause.NOT_RECORDED.value


class ReplayDevices(DevicePool):
    """Devices that replay a RecordedTable: `slots` at a time, each result `delay_s` after its
    start. `table_name` (e.g. its file) labels the results' provenance."""

    name = "replay"

    def __init__(self, table: RecordedTable, slots: int = 1, delay_s: float = 0.0,
                 table_name: str = "<table>"):
        self.table, self._slots, self.delay_s = table, slots, delay_s
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
        time_ms, cause = self.table.lookup(candidate.config, candidate.problem, candidate.vendor)
        if cause is not None:
            try:
                cause_enum = Cause(cause)
            except ValueError:
                cause_enum = Cause.ERROR
            result = Result(None, cause_enum, f"recorded failure: {cause}")
        else:
            result = Result(None, timing=Timing(time_ms, time_ms, time_ms, rounds=1,
                                                iters_per_round=1, input_sets=1))
        self._running[key] = (time.monotonic() + self.delay_s, result)

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
