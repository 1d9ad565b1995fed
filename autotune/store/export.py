"""Studies -> config store: the best trial of each study of a space, with the default's time.

Runs where the Optuna storage is (optuna imported lazily). Studies do not record which GPU
model they ran on, so the caller names it."""

from __future__ import annotations

from ..spaces.base import SearchSpace
from .compat import Gpu, expected_header
from .format import ConfigStore, Entry


def store_from_studies(storage, space: SearchSpace, gpu: Gpu, tvm_version: str = "") -> ConfigStore:
    """One entry per study of `space` in `storage` that has a successful timed trial."""
    import optuna
    from optuna.trial import TrialState

    store = ConfigStore(expected_header(space, gpu, tvm_version))
    for name in optuna.get_all_study_names(storage):
        study = optuna.load_study(study_name=name, storage=storage)
        attrs = study.user_attrs
        if attrs.get("space") != space.name or not attrs.get("timed", True):
            continue
        complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
        if not complete:
            continue
        best = min(complete, key=lambda t: t.value)
        defaults = [t.value for t in complete if t.user_attrs.get("source") == "default"]
        store.add(Entry(problem=attrs["problem"], config=dict(best.params), time_ms=best.value,
                        default_ms=min(defaults) if defaults else None,
                        vendor_ms=attrs.get("vendor_ms"), source=f"{name} trial {best.number}"))
    return store
