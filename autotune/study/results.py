"""Study results as pandas tables: every trial of a study, and the best config per shape."""

from __future__ import annotations

import optuna
import pandas as pd
from optuna.trial import TrialState

from .driver import ILLEGAL, counts
from .final import chosen, is_current


def trials_table(study: optuna.Study) -> pd.DataFrame:
    """One row per stored trial: number, state, value (ms), params_*, user_attrs_* (outcome,
    cause...). Illegal proposals are not stored, only counted (StudySummary.outcomes)."""
    return study.trials_dataframe(attrs=("number", "value", "state", "params", "user_attrs",
                                         "duration", "datetime_complete"))


# Outcomes of trials that never reached a device (or reused another trial's result).
_OFF_DEVICE = {ILLEGAL, "compile", "resources", "compiled", ""}


def device_trials_per_min(study: optuna.Study) -> tuple[int, float | None]:
    """Trials that ran on a device (timed, or failed there), and how many a minute finished in
    steady state: between the first and the last of their completions (start-up excluded)."""
    done = sorted(t.datetime_complete for t in study.get_trials(deepcopy=False)
                  if t.state.is_finished() and t.datetime_complete
                  and t.user_attrs.get("outcome", "") not in _OFF_DEVICE
                  and "duplicate_of" not in t.user_attrs)
    if len(done) < 2:
        return len(done), None
    span = (done[-1] - done[0]).total_seconds()
    return len(done), (len(done) - 1) / span * 60 if span > 0 else None


def best_configs(storage, space: str | None = None) -> pd.DataFrame:
    """The pick of every study in `storage` (of one space, if given): one row per shape. The pick
    is the final round's winner at its median when the round is current (`final` True), else
    the fastest trial."""
    rows = []
    for name in optuna.get_all_study_names(storage):
        study = optuna.load_study(study_name=name, storage=storage)
        attrs = study.user_attrs
        if space is not None and attrs.get("space") != space:
            continue
        # Trials that spent the budget: not illegal proposals (old studies stored them),
        # duplicates, or trials failed by a dead driver's heartbeat (re-queued, no result).
        trials = [t for t in study.get_trials(deepcopy=False) if counts(t)]
        pick = chosen(study)
        best, time_ms = pick[:2] if pick else (None, None)
        flops = attrs.get("flops")
        rows.append({
            "space": attrs.get("space"), "problem": attrs.get("problem", name),
            "arch": attrs.get("arch"), "timed": attrs.get("timed", True),
            "trials": sum(t.state.is_finished() for t in trials),
            "failed": sum(t.state == TrialState.FAIL for t in trials),
            "time_ms": time_ms,
            "tflops": flops / time_ms / 1e9 if flops and time_ms else None,
            "final": is_current(study),
            "device_trials": device_trials_per_min(study)[0],
            "trials_per_min": device_trials_per_min(study)[1],
            "trial": best.number if best else None,
            "config": dict(best.params) if best else None,
        })
    return pd.DataFrame(rows, columns=["space", "problem", "arch", "timed", "trials", "failed",
                                       "time_ms", "tflops", "final", "device_trials",
                                       "trials_per_min", "trial", "config"])
