"""Fixed parameters (`--fix`, or `fixed=` of the Python API): checked before a study starts,
so a typo or an impossible pin is one error naming it, not a study that ignores it or burns its
proposals on illegal configs."""

from __future__ import annotations

import random

from ..errors import UserError
from ..spaces.base import Config, Problem, SearchSpace
from ..spaces.sampling import random_config

LEGAL_SEARCH = 2000  # random configs tried for one that is legal with the fixed values


def _contains(dist, value) -> bool:
    from optuna.distributions import CategoricalDistribution

    if isinstance(dist, CategoricalDistribution):
        return value in dist.choices
    try:
        return dist._contains(dist.to_internal_repr(value))
    except (TypeError, ValueError):
        return False


def check_fixed(space: SearchSpace, problems: list[Problem], fixed: Config) -> None:
    """UserError unless every fixed parameter is a knob of the space with a value it offers, and
    every problem has a legal config with them (the default, else one of LEGAL_SEARCH draws)."""
    rng = random.Random(0)
    for problem in problems:
        params = space.parameters(problem)
        for name, value in fixed.items():
            if name not in params:
                raise UserError(f"fixed {name}={value!r}: {space.name} has no parameter {name!r} "
                                f"(parameters: {', '.join(params)})")
            if not _contains(params[name], value):
                offered = getattr(params[name], "choices", None)
                raise UserError(f"fixed {name}={value!r}: the value is not one of "
                                f"{list(offered)}" if offered is not None else
                                f"fixed {name}={value!r}: the value is outside "
                                f"[{params[name].low}, {params[name].high}]")
        reasons = space.violations({**space.default_config(problem), **fixed}, problem)
        draws = ({**random_config(params, rng), **fixed} for _ in range(LEGAL_SEARCH))
        if reasons and all(space.violations(c, problem) for c in draws):
            raise UserError(f"illegal fixed parameters for {problem.key}: " + "; ".join(reasons))
