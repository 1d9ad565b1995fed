"""Merging stores from several studies and machines: per problem the faster entry wins, and no
problem is ever dropped. Stores of different identity (another GPU model or template),
provenance (measured, replayed from a table) or timer are not merged into one: that would mix
times that do not compare."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..errors import UserError
from .compat import IDENTITY_FIELDS
from .format import ConfigStore

PROVENANCE_FIELDS = ("driver", "cuda", "tvm")


class MergeConflict(UserError):
    pass


def _joined(values: list[str]) -> str:
    # Every toolchain that contributed stays on record, e.g. "13.0 | 13.1".
    return " | ".join(sorted({part for v in values for part in v.split(" | ") if part}))


def merge(stores: list[ConfigStore], names: list[str] | None = None) -> ConfigStore:
    """One store holding, per problem, the fastest entry of `stores` (same identity required).

    `names` (e.g. file paths) are only for the error message."""
    if not stores:
        raise ValueError("nothing to merge")
    names = names or [f"store {i}" for i in range(len(stores))]
    first = stores[0].header
    for store, name in zip(stores[1:], names[1:]):
        diff = [f"{f}: {getattr(first, f)!r} vs {getattr(store.header, f)!r}"
                for f in (*IDENTITY_FIELDS, "provenance", "timer")
                if getattr(first, f) != getattr(store.header, f)]
        if diff:
            raise MergeConflict(f"cannot merge {name} into {names[0]}: {'; '.join(diff)}")
    header = dataclasses.replace(first, **{
        f: _joined([getattr(s.header, f) for s in stores]) for f in PROVENANCE_FIELDS})
    merged = ConfigStore(header)
    for store in stores:
        for entry in store.entries.values():
            merged.add(entry)
    return merged


def merge_into(path, incoming: ConfigStore) -> ConfigStore:
    """Merge `incoming` into the store file at `path` (created if missing) and write it."""
    path = Path(path)
    stores, names = [incoming], ["the new results"]
    if path.exists():
        stores, names = [ConfigStore.read(path), incoming], [str(path), "the new results"]
    merged = merge(stores, names)
    merged.write(path)
    return merged

