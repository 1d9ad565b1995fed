"""One recorded shape as a sampler benchmark replays it (bench/samplers.py): its configs (as
the space's values), their recorded median times, the replay table with their spread, and the
projection of any config onto the nearest recorded one.

Why a projection: a recording is a sample (gemm_sm90: ~2,000 of 120-190 k legal configs per
shape), so most legal configs a sampler proposes have no recorded time. Counting them as lost
trials would measure the recording's density, not the sampler; inventing their times would
replay what no GPU measured. So a proposal is measured as the recorded config nearest to it
(fewest knobs changed, ordered knobs by how far along their values; ties to the one recorded
first): every trial replays a real measurement, each recorded config stands for the legal
configs around it, and a uniform sample's configs each stand for about as many. Proposals that
were not themselves recorded are counted (`misses`)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from ..record.dataset import choices_by_text, row_config
from ..runner.simulated import RecordedTable
from ..spaces.base import Config, Problem, SearchSpace


def _is_ordered(choices) -> bool:
    return all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in choices)


@dataclasses.dataclass
class Landscape:
    space: SearchSpace
    problem: Problem
    rows: pd.DataFrame  # the recording's rows kept (legal, values of the space)
    configs: list[Config]
    medians: np.ndarray  # recorded median per row; inf for a failure
    table: RecordedTable
    dropped: dict  # rows not replayable, by reason
    fixed: Config  # knobs the recording pinned (the benchmark's samplers pin them too)

    @classmethod
    def of(cls, space: SearchSpace, problem: Problem, rows: pd.DataFrame,
           fixed: Config | None = None) -> "Landscape":
        by_text = choices_by_text(space, problem)
        configs, keep, dropped = [], [], {}
        for i, row in rows.iterrows():
            config = row_config(by_text, row, space.added_knobs)
            if config is None:
                dropped["values not in the space"] = dropped.get("values not in the space", 0) + 1
                continue
            if space.violations(config, problem):
                dropped["illegal now"] = dropped.get("illegal now", 0) + 1
                continue
            configs.append(config)
            keep.append(i)
        kept = rows.loc[keep].reset_index(drop=True)
        if not configs:
            raise ValueError(f"no replayable row for {problem.key} ({dropped})")
        medians = kept["time_ms"].to_numpy(dtype=float)
        medians = np.where(np.isnan(medians), np.inf, medians)
        table = RecordedTable.from_frame(kept.assign(problem=problem.key))
        land = cls(space, problem, kept, configs, medians, table, dropped, dict(fixed or {}))
        land._encode()
        return land

    def _encode(self) -> None:
        params = self.space.parameters(self.problem)
        self._knobs = list(params)
        self._index = {k: {repr(c): i for i, c in enumerate(params[k].choices)} for k in params}
        self._scale = np.array([1 / max(1, len(params[k].choices) - 1)
                                if _is_ordered(params[k].choices) else 0.0 for k in params])
        self._codes = np.array([self._code(c) for c in self.configs])

    def _code(self, config: Config) -> np.ndarray:
        return np.array([self._index[k][repr(config[k])] for k in self._knobs], dtype=float)

    @property
    def best_ms(self) -> float:
        return float(self.medians.min())

    def nearest(self, config: Config) -> tuple[int, bool]:
        """The recorded config a proposal is measured as, and whether it is the proposal."""
        diff = np.abs(self._codes - self._code(config))
        ordered = self._scale > 0
        distance = (diff[:, ordered] * self._scale[ordered]).sum(1) + (diff[:, ~ordered] > 0).sum(1)
        i = int(np.argmin(distance))
        return i, bool(distance[i] == 0)

    def ranked(self) -> list[Config]:
        """Recorded configs that ran, fastest first."""
        order = np.argsort(self.medians, kind="stable")
        return [self.configs[i] for i in order if math.isfinite(self.medians[i])]

    def sources(self, *names: str) -> list[Config]:
        """Recorded configs of the given sources (e.g. the default and the seeds), in order."""
        if "source" not in self.rows:
            return []
        return [c for c, s in zip(self.configs, self.rows["source"]) if s in names]

    def shape_distance(self, other: "Landscape") -> float:
        """How far apart two problems' sizes are (sum of |log2| ratios of their fields)."""
        mine, theirs = self.problem.sizes, other.problem.sizes
        return sum(abs(math.log2(max(1, v) / max(1, theirs.get(k, v)))) for k, v in mine.items())
