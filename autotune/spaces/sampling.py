"""Random configs drawn from a space's Optuna distributions, and legal ones: for checking a
fixed parameter (the CLI), the conformance kit and `autotune validate`'s sample."""

from __future__ import annotations

import random
from typing import Mapping

from .base import Config, Problem, SearchSpace


def random_config(params: Mapping, rng: random.Random) -> Config:
    """One value per knob, uniformly: categorical choices, integers in range, floats."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    config = {}
    for name, dist in params.items():
        if isinstance(dist, CategoricalDistribution):
            config[name] = rng.choice(dist.choices)
        elif isinstance(dist, IntDistribution):
            config[name] = rng.randrange(dist.low, dist.high + 1, dist.step)
        else:
            config[name] = rng.uniform(dist.low, dist.high)
    return config


def legal_draws(space: SearchSpace, problem: Problem, rng: random.Random, n: int,
                attempts: int = 50) -> list[Config]:
    """Up to `n` legal random configs, from at most `n * attempts` draws."""
    params, out = space.parameters(problem), []
    for _ in range(n * attempts):
        config = random_config(params, rng)
        if not space.violations(config, problem):
            out.append(config)
            if len(out) == n:
                break
    return out


def covering_sample(space: SearchSpace, problems: list[Problem], per_problem: int,
                    seed: int) -> list[tuple[Problem, str, Config]]:
    """Per problem its default and `per_problem` legal configs, each drawn to show knob values
    the sample has not shown yet (over the whole sample), so every value of every categorical
    knob runs somewhere. Deterministic for a seed: (problem, tag, config) triples."""
    from optuna.distributions import CategoricalDistribution

    rng = random.Random(seed)
    unseen = {(k, repr(v)) for p in problems for k, d in space.parameters(p).items()
              if isinstance(d, CategoricalDistribution) for v in d.choices}
    out = []
    for problem in problems:
        out.append((problem, "default", space.default_config(problem)))
        unseen -= {(k, repr(v)) for k, v in out[-1][2].items()}
        for i in range(per_problem):
            pool = legal_draws(space, problem, rng, 64)
            if not pool:
                break
            best = max(pool, key=lambda c: len({(k, repr(v)) for k, v in c.items()} & unseen))
            unseen -= {(k, repr(v)) for k, v in best.items()}
            out.append((problem, f"s{i + 1}", best))
    return out
