"""Studies -> config store: the pick of each study of a space (its final round's winner, else its
fastest trial), with the default's time.

Runs where the Optuna storage is (optuna imported lazily). Studies do not record which GPU
model they ran on, so the caller names it."""

from __future__ import annotations

from ..spaces.base import SearchSpace
from .compat import Gpu, expected_header
from .format import ConfigStore, Entry


def store_from_studies(storage, space: SearchSpace, gpu: Gpu, tvm_version: str = "") -> ConfigStore:
    """One entry per study of `space` in `storage` that has a successful timed trial."""
    import optuna

    from ..study.final import chosen

    store = ConfigStore(expected_header(space, gpu, tvm_version))
    for name in optuna.get_all_study_names(storage):
        study = optuna.load_study(study_name=name, storage=storage)
        attrs = study.user_attrs
        if attrs.get("space") != space.name or not attrs.get("timed", True):
            continue
        pick = chosen(study)
        if pick is None:
            continue
        best, time_ms, default_ms = pick
        store.add(Entry(problem=attrs["problem"], config=dict(best.params), time_ms=time_ms,
                        default_ms=default_ms,
                        vendor_ms=attrs.get("vendor_ms"), source=f"{name} trial {best.number}"))
    return store
