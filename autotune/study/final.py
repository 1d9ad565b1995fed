"""The final round of a study: its fastest few configs, the default and the vendor op (cuBLAS /
cuDNN through torch: a candidate as in Inductor's max-autotune), timed again side by side in
interleaved rounds; the fastest median among the configs that beat the default in every round
wins (the default if none does) and is what the study hands on, with the vendor's median beside
it (the config store's `vendor_ms`; dispatch decides between the two).

Why: the minimum over a study is a biased pick. Among configs within the timer's noise (1-3% per
measurement on an H100), the one that drew a lucky round wins and regresses when measured again
(the winner's curse; session 3's benchmark found tuned configs up to 5% behind the default they
had beaten in the study). Timing the finalists in turn, round after round, lets clock and
temperature drift hit them alike, and the median over rounds discards one lucky draw.

The outcome is a study user attr (`FINAL_ATTR`): finished trials cannot be changed in Optuna,
and their first measurement stays the sampler's evidence. `chosen` reads it back, and ignores it
once trials newer than the round have completed (a later session extended the study)."""

from __future__ import annotations

import statistics
from typing import Callable

import optuna
from optuna.trial import FrozenTrial, TrialState

from ..runner.base import Candidate, Runner
from ..runner.protocol import ROUNDS
from ..runner.timing import rotated
from ..spaces.base import Problem, SearchSpace

FINAL_ROUNDS = ROUNDS  # as many as `autotune compare` and first use take
FINAL_ATTR = "final"
VENDOR_ATTR = "vendor_ms"  # the vendor op's median in the latest final round
VENDOR = "vendor"  # the vendor op's entry in a final round


def _complete(study: optuna.Study) -> list[FrozenTrial]:
    return [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))]


def finalists(study: optuna.Study, top: int) -> list[FrozenTrial]:
    """The `top` fastest distinct configs of the study, and its default if not among them."""
    seen, out = set(), []
    for t in sorted(_complete(study), key=lambda t: t.value):
        key = tuple(sorted(t.params.items()))
        if key not in seen:
            seen.add(key)
            out.append(t)
    picked = out[:top]
    default = next((t for t in out if t.user_attrs.get("source") == "default"), None)
    if default is not None and default not in picked:
        picked.append(default)
    return picked


def is_current(study: optuna.Study) -> bool:
    """Whether the study has a final round and no trial completed after it."""
    final = study.user_attrs.get(FINAL_ATTR)
    return bool(final) and all(t.number <= final["last_trial"] for t in _complete(study))


def run_final(study: optuna.Study, space: SearchSpace, problem: Problem, runner: Runner,
              top: int = 3, rounds: int = FINAL_ROUNDS,
              on_round: Callable[[int], None] | None = None) -> dict | None:
    """Time the finalists and the vendor op `rounds` times each, in a rotated order per round;
    record and return the outcome (the vendor's median also as the study attr `vendor_ms`).
    None (and nothing recorded) when no trial completed."""
    picked = finalists(study, top)
    if not picked or rounds < 1:
        return None
    entries = [t.number for t in picked] + [VENDOR]
    params = {t.number: dict(t.params) for t in picked}
    times: dict = {n: [] for n in entries}
    failed: dict = {}
    for r in range(rounds):
        for n in rotated(entries, r):
            if n not in failed:
                runner.submit(Candidate(space, params.get(n, {}), problem, tag=("final", n),
                                        vendor=n == VENDOR))
        while runner.in_flight:
            for result in runner.collect(timeout=1.0):
                n = result.tag[1]
                if result.ok and result.timing is not None:
                    times[n].append(result.time_ms)
                else:  # it passed once; failing now disqualifies it (flaky is not a winner)
                    failed[n] = (result.cause.value if result.cause else "untimed")
        if on_round:
            on_round(r + 1)
    vendor_times = times.pop(VENDOR)
    vendor_ms = statistics.median(vendor_times) if vendor_times and VENDOR not in failed else None
    medians = {n: statistics.median(ts) for n, ts in times.items() if ts and n not in failed}
    if not medians:
        return None
    default = next((t.number for t in picked if t.user_attrs.get("source") == "default"), None)
    winner = _winner(medians, times, default)
    final = {"last_trial": max(t.number for t in _complete(study)), "rounds": rounds,
             "timer": runner.timer, "times_ms": {str(n): ts for n, ts in times.items()},
             "medians_ms": {str(n): m for n, m in medians.items()},
             "failed": {str(n): c for n, c in failed.items()},
             "winner": winner, "winner_ms": medians[winner], "default": default,
             "vendor_times_ms": vendor_times, "vendor_ms": vendor_ms}
    study.set_user_attr(FINAL_ATTR, final)
    if vendor_ms is not None:
        study.set_user_attr(VENDOR_ATTR, vendor_ms)
    return final


def _winner(medians: dict[int, float], times: dict[int, list[float]], default: int | None) -> int:
    """The fastest median among the finalists that beat the default in every round they ran
    (their slowest round under its median); the default if none does. The default is the
    hand-tuned prior: under the short-replay timer an H100's rounds spread by up to 10% on large
    shapes (power and clocks), more than the configs there differ; under the one-second window
    ~1.5%, still as much as many configs differ, so a challenger that wins only on its median is
    as likely noise as a gain."""
    if default not in medians:
        return min(medians, key=medians.get)
    beat = [n for n in medians if n != default and max(times[n]) < medians[default]]
    return min(beat, key=medians.get) if beat else default


def chosen(study: optuna.Study) -> tuple[FrozenTrial, float, float | None] | None:
    """The study's pick: (trial, time_ms, default_ms). The final round's winner at its median
    when the round is current; otherwise the fastest trial at its own time. None if no trial
    completed."""
    complete = _complete(study)
    if not complete:
        return None
    defaults = [t.value for t in complete if t.user_attrs.get("source") == "default"]
    default_ms = min(defaults) if defaults else None
    if is_current(study):
        final = study.user_attrs[FINAL_ATTR]
        by_number = {t.number: t for t in complete}
        # Decided again from the recorded rounds, so a study keeps the current rule.
        medians = {int(n): m for n, m in final["medians_ms"].items()}
        times = {int(n): ts for n, ts in final["times_ms"].items()}
        default = final.get("default")
        number = _winner(medians, times, default)
        if number in by_number:
            return by_number[number], medians[number], medians.get(default, default_ms)
    best = min(complete, key=lambda t: t.value)
    return best, best.value, default_ms
