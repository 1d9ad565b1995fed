"""Random configs drawn from a space's Optuna distributions, and legal ones: for checking a
fixed parameter (the CLI), the conformance kit, `autotune validate`'s sample and `autotune
record`'s uniform sample and neighbourhoods."""

from __future__ import annotations

import dataclasses
import math
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
                attempts: int = 50, params: Mapping | None = None) -> list[Config]:
    """Up to `n` legal random configs, from at most `n * attempts` draws of `params` (default:
    the space's parameters for `problem`)."""
    params, out = params or space.parameters(problem), []
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
        params = space.parameters(problem)
        for i in range(per_problem):
            # beside free draws, draws with one unseen value pinned: a value that few legal
            # configs take (a wide tile, a rare cluster) would seldom come up otherwise
            pool = _pinned_draws(space, problem, params, unseen, rng, 16)
            pool += legal_draws(space, problem, rng, 64)
            if not pool:
                break
            best = max(pool, key=lambda c: len({(k, repr(v)) for k, v in c.items()} & unseen))
            unseen -= {(k, repr(v)) for k, v in best.items()}
            out.append((problem, f"s{i + 1}", best))
    return out


def _pinned_draws(space: SearchSpace, problem: Problem, params: Mapping, unseen: set,
                  rng: random.Random, n: int) -> list[Config]:
    """Up to `n` legal random configs with one of the `unseen` (knob, repr(value)) pairs this
    problem offers pinned (picked at random); none when it offers none."""
    from optuna.distributions import CategoricalDistribution

    offered = sorted((k, repr(v), v) for k, d in params.items()
                     if isinstance(d, CategoricalDistribution) for v in d.choices
                     if (k, repr(v)) in unseen)
    if not offered:
        return []
    knob, _, value = rng.choice(offered)
    return legal_draws(space, problem, rng, n,
                       params={**params, knob: CategoricalDistribution([value])})


def config_key(config: Config) -> tuple:
    """A config's identity, whatever the order of its knobs."""
    return tuple(sorted((k, repr(v)) for k, v in config.items()))


def _choices(space: SearchSpace, problem: Problem, fixed: Mapping | None) -> dict[str, list]:
    """Every knob's values, `fixed` ones pinned; refuses knobs that are not a finite list."""
    from optuna.distributions import CategoricalDistribution

    out = {}
    for name, dist in space.parameters(problem).items():
        if fixed and name in fixed:
            out[name] = [fixed[name]]
        elif isinstance(dist, CategoricalDistribution):
            out[name] = list(dist.choices)
        elif getattr(dist, "step", None) and not getattr(dist, "log", False):
            out[name] = list(range(dist.low, dist.high + 1, dist.step))
        else:
            raise ValueError(f"knob {name} ({type(dist).__name__}) is not a finite list of values")
    return out


@dataclasses.dataclass
class UniformSample:
    """Distinct legal configs drawn uniformly, and what drawing them says about the space."""

    configs: list[Config]
    draws: int  # configs drawn from the knob product
    legal_draws: int  # of which legal (repeats included)
    product: int  # size of the knob product (fixed knobs pinned)

    @property
    def legal_estimate(self) -> tuple[int, int]:
        """The legal space's size estimated from the acceptance rate, and its 95% margin."""
        if not self.draws:
            return 0, self.product
        p = self.legal_draws / self.draws
        margin = 1.96 * math.sqrt(p * (1 - p) / self.draws)
        return round(p * self.product), round(margin * self.product)


def uniform_legal(space: SearchSpace, problem: Problem, n: int, rng: random.Random,
                  fixed: Mapping | None = None, max_draws: int | None = None) -> UniformSample:
    """Up to `n` distinct legal configs, uniform over the legal space (`fixed` knobs pinned), in
    the order drawn: each knob drawn uniformly, the config kept if legal and new. The knob
    product is never listed (gemm_sm90's holds 1.2-2.5 M configs, ~8-10% of them legal; listing
    them takes up to a minute per shape, drawing 2,000 legal ones under a second). Gives up after
    `max_draws` (default 1000 x n) draws: a space with fewer legal configs than `n`."""
    values = _choices(space, problem, fixed)
    product = math.prod(len(v) for v in values.values())
    seen, configs, draws, legal = set(), [], 0, 0
    limit = max_draws if max_draws is not None else 1000 * max(n, 1)
    while len(configs) < n and draws < limit:
        config = {k: rng.choice(v) for k, v in values.items()}
        draws += 1
        if space.violations(config, problem):
            continue
        legal += 1
        key = config_key(config)
        if key not in seen:
            seen.add(key)
            configs.append(config)
    return UniformSample(configs, draws, legal, product)


def neighbours(space: SearchSpace, problem: Problem, config: Config,
               fixed: Mapping | None = None) -> list[Config]:
    """Every legal config that differs from `config` in exactly one knob (`fixed` knobs
    excepted), knob by knob in the space's order, values in theirs."""
    out = []
    for name, vals in _choices(space, problem, fixed).items():
        for value in vals:
            if value != config.get(name):
                candidate = {**config, name: value}
                if not space.violations(candidate, problem):
                    out.append(candidate)
    return out
