"""Carry a store over to the timing protocol (runner/protocol.py) from `autotune compare`'s
tables: compare times each stored shape's config, today's default and the vendor op under the
protocol, side by side; the re-timed entry keeps its config where it beat today's default and
takes the default where it did not (a config tuned against an older default may trail a newer
one: 0.972x at 2048x4096x14336 on an H100, session 15). Its times, `measured` and header's
`timer` are then the protocol's, so a store never mixes timers (merge.py refuses to).

Cheaper than tuning the shapes again (a store of 95 shapes: ~19 minutes of compare on an H100,
against ~60 of 8-trial studies), and what a new timer or a new default needs: the tuned configs
were found by studies, only their times went stale. What the other trials measured stays in
the studies (their trials.csv, under their timer); dispatch weighs the re-timed pair.

Nothing is dropped silently: a stored shape without a row, or whose row timed another config
than the stored one (dispatch served something else, or the row's `tuned_config` is not the
stored config: the store changed since), stops the re-timing with its name."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd

from ..errors import UserError
from ..runner.base import PROTOCOL
from ..spaces.base import SearchSpace
from .format import ConfigStore, Entry, config_id

EXACT_NOTE = "exact"  # compare's note where dispatch served the shape's own stored entry


def _number(value) -> float | None:
    return None if pd.isna(value) else float(value)


def read_tables(paths: list) -> pd.DataFrame:
    """compare's table.csv files as one table by problem, its geomean rows (e.g. "geomean
    M<=256") left out."""
    table = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    table = table[table["problem"].str.match(r"\w+=", na=False)]
    twice = table["problem"][table["problem"].duplicated()].tolist()
    if twice:
        raise UserError(f"the tables time {', '.join(twice)} more than once: which one holds?")
    return table.set_index("problem")


def retimed_entry(entry: Entry, row: pd.Series, default) -> Entry:
    """`entry` as compare's `row` timed it: the stored config if it beat `default` (today's
    default config for the shape), else the default."""
    tuned, default_ms = _number(row.get("tuned_ms")), _number(row.get("default_ms"))
    if entry.config == default:
        default_ms = tuned
    if tuned is None and default_ms is None:
        raise UserError(f"{entry.problem}: compare timed neither its config nor the default")
    measured = {config_id(c): t for c, t in ((entry.config, tuned), (default, default_ms))
                if t is not None}
    keep = tuned is not None and (default_ms is None or tuned <= default_ms)
    config, time_ms = (entry.config, tuned) if keep else (default, default_ms)
    why = "kept" if keep else "lost to today's default"
    return dataclasses.replace(entry, config=config, time_ms=time_ms, default_ms=default_ms,
                               vendor_ms=_number(row.get("vendor_ms")), measured=measured,
                               source=f"re-timed ({why}; was {entry.source})")


def _timed_another(entry: Entry, row: pd.Series) -> bool:
    """Whether compare's `row` timed a config other than `entry`'s: dispatch served something
    else (its note), or the row names another config (a store changed since the table)."""
    if not str(row.get("note")).startswith(EXACT_NOTE):
        return True
    named = row.get("tuned_config")  # absent from tables older than the column
    return isinstance(named, str) and bool(named) and json.loads(named) != entry.config


def stale_keys(store: ConfigStore, space: SearchSpace) -> list[str]:
    """The entries that never timed today's default config for their shape: a default rule
    changed since they were measured, so their `default_ms` (dispatch's evidence where a study
    did not time the default) is another config's time. Compare then `retime --partial` them."""
    return [k for k, e in sorted(store.entries.items())
            if config_id(space.default_config(e.parsed_problem)) not in (e.measured or {})]


def retime(store: ConfigStore, space: SearchSpace, table: pd.DataFrame,
           partial: bool = False) -> ConfigStore:
    """A store of `store`'s shapes with the times of compare's `table` (read_tables) and the
    protocol's timer in its header; UserError naming every shape the table cannot re-time.
    `partial`: only the entries the table holds (e.g. the stale_keys), the others keep their
    recorded times - for a store already under the protocol, so no store mixes timers."""
    if partial and store.header.timer != PROTOCOL:
        raise UserError(f"cannot re-time part of a store timed by {store.header.timer!r}: the "
                        f"entries left out would keep that timer's times under {PROTOCOL!r}; "
                        "re-time every entry")
    listed = [k for k in sorted(store.entries) if k in table.index]
    if partial and not listed:
        raise UserError("the tables time none of the store's shapes")
    missing = [] if partial else [k for k in sorted(store.entries) if k not in table.index]
    served = [k for k in listed if _timed_another(store.entries[k], table.loc[k])]
    if missing or served:
        raise UserError("cannot re-time the store: "
                        + "; ".join(filter(None, (
                            missing and f"no compare row for {', '.join(missing)}",
                            served and f"compare timed another config than the stored one for "
                                       f"{', '.join(served)}"))))
    out = ConfigStore(dataclasses.replace(store.header, timer=PROTOCOL))
    for key, entry in store.entries.items():
        out.entries[key] = entry if key not in listed else retimed_entry(
            entry, table.loc[key], space.default_config(entry.parsed_problem))
    return out
