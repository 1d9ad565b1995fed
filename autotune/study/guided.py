"""`guided`: our sampler, a best-first local search over legal configs whose moves are ranked by
the plugin's cost model. What it knows that Optuna's samplers do not:
- legality: it proposes legal configs only (`SearchSpace.violations`);
- neighbourhood: a config's one-knob changes (tile sizes, stages, split, cluster...) are its
  likeliest improvements once it is good;
- the plugin's cost model (`SearchSpace.estimate_ms`, e.g. tile counts, waves and
  shared-memory traffic for gemm_sm90) to try the predicted fastest candidate first.

Each proposal: the untried one-knob neighbour the model ranks fastest of the fastest measured
config, else of the next fastest, and so on (best first); every EXPLORE_EVERY-th proposal, and
when no measurement or neighbour is left, the untried config ranked fastest of a uniform legal
pool (a space with no model: the pool in drawn order). It learns nothing beyond the order of
the measured times: cheap, deterministic for a seed, and as good as the model's ranking of
near neighbours. With `allowed` (a GPU machine without a compiler: the configs prebuilt for it)
it proposes only configs that pass it; its pool is drawn as anywhere for the seed, so a
compile-only study of the same seed elsewhere prebuilds the pool's best-ranked."""

from __future__ import annotations

import random
from collections.abc import Callable

import optuna
from optuna.trial import TrialState

from ..spaces.base import Config, Problem, SearchSpace
from ..spaces.sampling import config_key, neighbours, uniform_legal

POOL = 1000
EXPLORE_EVERY = 4


class GuidedSampler(optuna.samplers.BaseSampler):
    def __init__(self, space: SearchSpace, problem: Problem, seed: int | None = None,
                 fixed: Config | None = None, pool: int = POOL,
                 explore_every: int = EXPLORE_EVERY,
                 estimate: Callable[[Config, Problem], float | None] | None = None,
                 allowed: Callable[[Config], bool] | None = None):
        """`estimate` ranks candidates in place of the plugin's cost model (e.g. that model
        calibrated on other shapes' measurements: study/transfer.py); `allowed` filters every
        proposal."""
        self.space, self.problem, self.fixed = space, problem, dict(fixed or {})
        self.allowed = allowed or (lambda config: True)
        self.estimate = estimate or space.estimate_ms
        self.seed, self.pool_size, self.explore_every = seed, pool, explore_every
        self._pool: list[Config] | None = None
        self._config: tuple[int, Config] | None = None  # (trial number, its config)

    # Optuna asks parameter by parameter: the whole config is chosen at the first one.
    def infer_relative_search_space(self, study, trial) -> dict:
        return {}

    def sample_relative(self, study, trial, search_space) -> dict:
        return {}

    def sample_independent(self, study, trial, param_name, param_distribution):
        if self._config is None or self._config[0] != trial.number:
            self._config = (trial.number, self.propose(study, trial.number))
        return self._config[1][param_name]

    def propose(self, study: optuna.Study, number: int) -> Config:
        trials = [t for t in study.get_trials(deepcopy=False) if t.number != number]
        tried = {config_key(t.params) for t in trials}
        measured = sorted((t for t in trials if t.state == TrialState.COMPLETE),
                          key=lambda t: t.value)
        if measured and (number + 1) % self.explore_every:
            for incumbent in measured:
                moves = [c for c in neighbours(self.space, self.problem, incumbent.params,
                                               self.fixed)
                         if config_key(c) not in tried and self.allowed(c)]
                if moves:
                    return min(moves, key=self._estimate)
        fresh = next((c for c in self._ranked_pool() if config_key(c) not in tried), None)
        if fresh is not None:
            return fresh
        rng = random.Random(f"{self.seed}|{number}")  # all tried: any legal one (a duplicate)
        drawn = [c for c in uniform_legal(self.space, self.problem, 1, rng, self.fixed).configs
                 if self.allowed(c)]
        pool = self._ranked_pool() or self._drawn_pool()
        return drawn[0] if drawn else pool[0]

    def _estimate(self, config: Config) -> float:
        estimate = self.estimate(config, self.problem)
        return 0.0 if estimate is None else estimate  # no model: the order given (stable sort)

    def _ranked_pool(self) -> list[Config]:
        """The pool's allowed configs, the model's fastest first."""
        if self._pool is None:
            self._pool = sorted(filter(self.allowed, self._drawn_pool()), key=self._estimate)
        return self._pool

    def _drawn_pool(self) -> list[Config]:
        rng = random.Random(f"{self.seed}|{self.problem.key}|pool")
        return uniform_legal(self.space, self.problem, self.pool_size, rng, self.fixed).configs
