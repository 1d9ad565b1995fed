"""Rounds: when several things are timed in turn (a study's final round, `autotune compare`,
`autotune bench`), each round times every entry once, in an order rotated from round to round,
so that clock and temperature drift hit every entry alike. The timer itself is the protocol's
(protocol.py)."""

from __future__ import annotations


def rotated(items: list, r: int) -> list:
    """`items` starting at position r (mod its length): round r's order when several things are
    timed in turn, so none is always the first after an idle spell or the last in a hot one."""
    k = r % len(items)
    return items[k:] + items[:k]


def interleaved(measures: dict, rounds: int) -> dict:
    """Call every measure once per round, rounds in rotated order; {name: [result per round]}.
    Clock and temperature drift then hit every entry alike."""
    out = {name: [] for name in measures}
    for r in range(rounds):
        for name in rotated(list(measures), r):
            out[name].append(measures[name]())
    return out
