"""A runner that replays a recorded table of config -> time or failure: search strategies can be
tested on a CPU against real (or synthetic) measurements, instantly and reproducibly."""

from __future__ import annotations

import collections
import dataclasses
import math
import time

from ..spaces.base import Config, Problem
from .base import Candidate, Cause, Result, Runner, Timing

_TIME, _CAUSE, _PROBLEM = "time_ms", "cause", "problem"


def _key(values) -> tuple[str, ...]:
    return tuple(str(v) for v in values)


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
        params = [c for c in frame.columns if c not in (_TIME, _CAUSE, _PROBLEM)]
        rows = {}
        for rec in frame.to_dict("records"):
            t = rec[_TIME]
            cause = rec.get(_CAUSE)
            cause = None if cause is None or (isinstance(cause, float) and math.isnan(cause)) or cause == "" else str(cause)
            t = None if t is None or (isinstance(t, float) and math.isnan(t)) else float(t)
            if t is None and cause is None:
                raise ValueError(f"row {rec} has neither a time nor a cause")
            rows[(str(rec.get(_PROBLEM, "")), _key(rec[p] for p in params))] = (t, cause)
        return cls(params, rows)

    @classmethod
    def from_csv(cls, path: str) -> "RecordedTable":
        import pandas as pd

        return cls.from_frame(pd.read_csv(path))

    @classmethod
    def from_study(cls, study) -> "RecordedTable":
        """Record a finished study (e.g. measured on a GPU) for replay."""
        import pandas as pd

        from optuna.trial import TrialState

        records = []
        for t in study.get_trials(deepcopy=False):
            cause = t.user_attrs.get("cause")
            if t.state == TrialState.COMPLETE or (t.state == TrialState.FAIL and cause):
                records.append({**t.params, _TIME: t.value, _CAUSE: cause,
                                _PROBLEM: study.user_attrs.get("problem", "")})
        return cls.from_frame(pd.DataFrame.from_records(records))

    def lookup(self, config: Config, problem: Problem) -> tuple[float | None, str | None]:
        values = _key(config.get(p) for p in self.params)
        for problem_key in (problem.key, ""):
            if (problem_key, values) in self.rows:
                return self.rows[(problem_key, values)]
        return None, Cause.NOT_RECORDED.value


class SimulatedRunner(Runner):
    """Serves results from a RecordedTable, `slots` at a time, in submission order."""

    mode = "simulated"

    def __init__(self, table: RecordedTable, slots: int = 1, delay_s: float = 0.0):
        self.table, self._slots, self.delay_s = table, slots, delay_s
        self._queue: collections.deque[Candidate] = collections.deque()
        self.measured: list[Config] = []  # every config served, in order

    @property
    def slots(self) -> int:
        return self._slots

    @property
    def in_flight(self) -> int:
        return len(self._queue)

    def submit(self, candidate: Candidate) -> None:
        self._queue.append(candidate)

    def collect(self, timeout: float | None = None) -> list[Result]:
        if not self._queue:
            return []
        candidate = self._queue.popleft()
        if self.delay_s:
            time.sleep(self.delay_s)
        self.measured.append(dict(candidate.config))
        time_ms, cause = self.table.lookup(candidate.config, candidate.problem)
        if cause is not None:
            try:
                cause_enum = Cause(cause)
            except ValueError:
                cause_enum = Cause.ERROR
            return [Result(candidate.tag, cause_enum, f"recorded failure: {cause}")]
        timing = Timing(time_ms, time_ms, time_ms, rounds=1, iters_per_round=1, input_sets=1)
        return [Result(candidate.tag, timing=timing)]
