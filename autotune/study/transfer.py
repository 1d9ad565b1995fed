"""What a study of a new shape can take from other shapes' measurements: a cost model calibrated
on them (the warm start of `guided`, and the candidates it measures first).

Another shape's best configs do not transfer as configs (on the recorded H100 shapes, each
shape's best is 2-600% behind on every other). What does transfer is how far the plugin's cost
model is off, knob by knob: e.g. that it under-rates a deeper ring or the L2 policy on every
shape. So the calibrated score of a config on a problem is a ridge fit, over the other shapes'
measured configs, of log(time) on log(the plugin's estimate) and one indicator per knob value,
with a free constant per shape (only the order within a shape is learnt: a shape's absolute
speed says nothing about another's). It ranks, it does not time."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from ..spaces.base import Config, Problem, SearchSpace

RIDGE = 10.0  # strong enough that a knob value seen a few times moves the score little


class CalibratedModel:
    def __init__(self, space: SearchSpace, columns: dict[tuple[str, str], int],
                 weights: np.ndarray):
        self.space, self.columns, self.weights = space, columns, weights

    @classmethod
    def fit(cls, space: SearchSpace,
            measured: Iterable[tuple[Problem, Sequence[Config], Sequence[float]]],
            ridge: float = RIDGE) -> "CalibratedModel":
        """`measured`: per shape, its problem, configs and measured times (inf or NaN: failed,
        left out). Needs a cost model (`space.estimate_ms`) and at least one measured config."""
        shapes = []
        for problem, configs, times in measured:
            times = np.asarray(times, dtype=float)
            ok = np.isfinite(times)
            if ok.any():
                shapes.append((problem, [c for c, good in zip(configs, ok) if good], times[ok]))
        if not shapes:
            raise ValueError("no measured config to calibrate the cost model on")
        if space.estimate_ms(shapes[0][1][0], shapes[0][0]) is None:
            raise ValueError(f"{space.name} has no cost model to calibrate")
        columns: dict[tuple[str, str], int] = {}
        for _, configs, _ in shapes:
            for config in configs:
                for item in cls._values(config):
                    columns.setdefault(item, len(columns) + 1)  # column 0: log estimate
        model = cls(space, columns, np.zeros(len(columns) + 1))
        xs, ys = [], []
        for problem, configs, times in shapes:  # centred per shape: a free constant each
            x = np.array([model._features(c, problem) for c in configs])
            y = np.log(times)
            xs.append(x - x.mean(0))
            ys.append(y - y.mean())
        x, y = np.vstack(xs), np.concatenate(ys)
        model.weights = np.linalg.solve(x.T @ x + ridge * np.eye(x.shape[1]), x.T @ y)
        return model

    @staticmethod
    def _values(config: Config) -> list[tuple[str, str]]:
        return [(k, repr(v)) for k, v in sorted(config.items())]

    def _features(self, config: Config, problem: Problem) -> np.ndarray:
        row = np.zeros(len(self.columns) + 1)
        row[0] = math.log(self.space.estimate_ms(config, problem))
        for item in self._values(config):
            if item in self.columns:  # a value no other shape measured: no correction
                row[self.columns[item]] = 1.0
        return row

    def estimate_ms(self, config: Config, problem: Problem) -> float:
        """A score in the plugin's estimate's place (lower: faster); comparable only within
        one problem."""
        return float(math.exp(self._features(config, problem) @ self.weights))

    def knob_effects(self) -> dict[tuple[str, str], float]:
        """The fitted factor on the estimate of each knob value (1.10: 10% slower than the
        model says, other things equal), for reading what transferred."""
        return {item: math.exp(self.weights[i]) for item, i in self.columns.items()}


def best_candidates(model: CalibratedModel, problem: Problem, around: Sequence[Config],
                    count: int, seed: int | None = None, fixed: Config | None = None,
                    pool: int = 1000) -> list[Config]:
    """The `count` legal configs the calibrated model ranks fastest among what a study knows
    before measuring anything: the one-knob neighbours of `around` (the default and the
    seeds) and a uniform legal pool; `around` itself excluded (the study measures it anyway)."""
    import random

    from ..spaces.sampling import config_key, neighbours, uniform_legal

    space = model.space
    candidates = {config_key(c): c for start in around
                  for c in neighbours(space, problem, start, fixed)}
    rng = random.Random(f"{seed}|{problem.key}|transfer")
    candidates.update((config_key(c), c)
                      for c in uniform_legal(space, problem, pool, rng, fixed).configs)
    for start in around:
        candidates.pop(config_key(start), None)
    return sorted(candidates.values(), key=lambda c: model.estimate_ms(c, problem))[:count]
