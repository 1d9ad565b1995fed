"""Studies -> config store: the pick of each study of a space (its final round's winner, else its
fastest trial), with the default's time.

Runs where the Optuna storage is (optuna imported lazily). The caller names the GPU model the
store is for; studies measured on another model are refused, and replayed ones label the store
as replayed from their table."""

from __future__ import annotations

import dataclasses

from ..errors import UserError
from ..spaces.base import SearchSpace
from .compat import Gpu, expected_header
from .format import ConfigStore, Entry


def store_from_studies(storage, space: SearchSpace, gpu: Gpu, tvm_version: str = "") -> ConfigStore:
    """One entry per study of `space` in `storage` that has a successful timed trial."""
    import optuna

    from ..study.final import chosen

    header = expected_header(space, gpu, tvm_version)
    store, provenances = ConfigStore(header), set()
    for name in optuna.get_all_study_names(storage):
        study = optuna.load_study(study_name=name, storage=storage)
        attrs = study.user_attrs
        if attrs.get("space") != space.name or not attrs.get("timed", True):
            continue
        provenances.add(_provenance(attrs.get("provenance") or {}, gpu.device, name))
        if len(provenances) > 1:
            raise UserError(f"the studies of {space.name} in this storage hold times of different "
                            f"provenance ({'; '.join(sorted(provenances))}): export them apart")
        pick = chosen(study)
        if pick is None:
            continue
        best, time_ms, default_ms = pick
        store.add(Entry(problem=attrs["problem"], config=dict(best.params), time_ms=time_ms,
                        default_ms=default_ms,
                        vendor_ms=attrs.get("vendor_ms"), source=f"{name} trial {best.number}"))
    if provenances:
        store.header = dataclasses.replace(header, provenance=provenances.pop())
    return store


def _provenance(attrs: dict, device: str, study: str) -> str:
    """A store header's provenance for a study's: replayed times say from which table; measured
    ones must be of the GPU model the store is labelled with."""
    if attrs.get("kind") == "replayed":
        return f"replayed from {attrs.get('table')} ({attrs.get('sha256')})"
    measured_on = attrs.get("devices") or []
    if measured_on and device not in measured_on:
        raise UserError(f"study {study} was measured on {', '.join(measured_on)}, not {device!r}")
    return "measured"
