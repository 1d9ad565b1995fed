"""Optuna samplers by name, with the settings that suit kernel tuning, and ours (`guided`)."""

from __future__ import annotations

import importlib.util
import warnings

import optuna

from ..errors import UserError

SAMPLERS = ("tpe", "tpe-univariate", "random", "gp", "cmaes", "guided", "brute")
_NEEDS = {"gp": ("torch", "scipy"), "cmaes": ("cmaes",)}


def make_sampler(name: str, seed: int | None = None, fixed: dict | None = None, *,
                 space=None, problem=None, estimate=None,
                 allowed=None) -> optuna.samplers.BaseSampler:
    """`fixed` pins parameters to values for every trial (optuna's PartialFixedSampler).
    `guided` searches one problem of one space: it needs both; `estimate` replaces its cost
    model (study/transfer.py), `allowed` filters its proposals (the configs prebuilt for a
    machine without a compiler; the other samplers cannot be told, so there a config not
    prebuilt fails its trial)."""
    if name not in SAMPLERS:
        raise UserError(f"unknown sampler {name!r} (choose from {', '.join(SAMPLERS)})")
    missing = [m for m in _NEEDS.get(name, ()) if importlib.util.find_spec(m) is None]
    if missing:
        raise UserError(f"sampler {name!r} needs {' and '.join(missing)}: "
                        f"pip install {' '.join(missing)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if name in ("tpe", "tpe-univariate"):
            # Multivariate: tile sizes interact. Constant liar: trials in flight on other GPUs
            # count as bad guesses, so parallel asks do not all land on the same config.
            sampler = optuna.samplers.TPESampler(seed=seed, multivariate=name == "tpe",
                                                 constant_liar=True)
        elif name == "random":
            sampler = optuna.samplers.RandomSampler(seed=seed)
        elif name == "gp":
            sampler = optuna.samplers.GPSampler(seed=seed, deterministic_objective=False)
        elif name == "cmaes":
            sampler = optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
        elif name == "guided":
            if space is None or problem is None:
                raise UserError("sampler 'guided' searches one problem of one space: "
                                "make_sampler needs space= and problem=")
            from .guided import GuidedSampler

            sampler = GuidedSampler(space, problem, seed, fixed, estimate=estimate,
                                    allowed=allowed)
        else:
            sampler = optuna.samplers.BruteForceSampler(seed=seed)
        if fixed:
            sampler = optuna.samplers.PartialFixedSampler(fixed, sampler)
    return sampler
