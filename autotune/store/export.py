"""Studies -> config store: the pick of each study of a space (its final round's winner, else its
fastest trial), with the default's and the vendor op's times, and every config the study timed
(the evidence dispatch weighs for shapes nobody tuned).

Runs where the Optuna storage is (optuna imported lazily). The caller names the GPU model the
store is for; studies measured on another model are refused, and replayed ones label the store
as replayed from their table."""

from __future__ import annotations

import dataclasses

from ..errors import UserError
from ..spaces.base import SearchSpace
from .compat import Gpu, expected_header
from .format import ConfigStore, Entry, config_id


def store_from_studies(storage, space: SearchSpace, gpu: Gpu, tvm_version: str = "") -> ConfigStore:
    """One entry per study of `space` in `storage` that has a successful timed trial."""
    import optuna

    from ..study.final import VENDOR_ATTR, chosen

    header = expected_header(space, gpu, tvm_version)
    store, provenances, timers = ConfigStore(header), set(), set()
    for name in optuna.get_all_study_names(storage):
        study = optuna.load_study(study_name=name, storage=storage)
        attrs = study.user_attrs
        if attrs.get("space") != space.name or not attrs.get("timed", True):
            continue
        provenances.add(_provenance(attrs.get("provenance") or {}, gpu.device, name))
        timers.add(attrs.get("timer", "rotate"))  # studies from before the choice: rotate
        for kind, seen in (("provenance", provenances), ("timers", timers)):
            if len(seen) > 1:
                raise UserError(f"the studies of {space.name} in this storage hold times of "
                                f"different {kind} ({'; '.join(sorted(seen))}): export them apart")
        pick = chosen(study)
        if pick is None:
            continue
        best, time_ms, default_ms = pick
        store.add(Entry(problem=attrs["problem"], config=dict(best.params), time_ms=time_ms,
                        default_ms=default_ms, vendor_ms=attrs.get(VENDOR_ATTR),
                        source=f"{name} trial {best.number}", measured=measured(study)))
    if provenances:
        store.header = dataclasses.replace(header, provenance=provenances.pop(),
                                           timer=timers.pop())
    return store


def measured(study) -> dict[str, float]:
    """config_id -> ms of every config the study timed: the final round's median where the
    config was a finalist of a current round, else its trial's time (the fastest, if several
    trials timed it)."""
    from optuna.trial import TrialState

    from ..study.final import FINAL_ATTR, is_current

    out: dict[str, float] = {}
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        cid = config_id(dict(t.params))
        out[cid] = min(out.get(cid, t.value), t.value)
    if is_current(study):
        final = study.user_attrs[FINAL_ATTR]
        by_number = {t.number: t for t in study.get_trials(deepcopy=False)}
        for number, ms in final["medians_ms"].items():
            out[config_id(dict(by_number[int(number)].params))] = ms
    return out


def _provenance(attrs: dict, device: str, study: str) -> str:
    """A store header's provenance for a study's: replayed times say from which table; measured
    ones must be of the GPU model the store is labelled with."""
    if attrs.get("kind") == "replayed":
        return f"replayed from {attrs.get('table')} ({attrs.get('sha256')})"
    measured_on = attrs.get("devices") or []
    if measured_on and device not in measured_on:
        raise UserError(f"study {study} was measured on {', '.join(measured_on)}, not {device!r}")
    return "measured"
