"""The final round: the study's fastest configs and its default are timed again side by side, and
the lowest median is the study's pick (in its summary, its results table and the exported
store), not a config that drew one lucky measurement."""

from __future__ import annotations

import collections

from autotune.cli import _summary_lines
from autotune.runner import RecordedTable, ReplayDevices, Scheduler, compile_nothing
from autotune.runner.builders import InlineBuilder
from autotune.runner.base import Cause, Result, Timing
from autotune.store.compat import Gpu
from autotune.store.export import store_from_studies
from autotune.study import best_configs, make_sampler, open_storage, tune_problem
from autotune.study.final import FINAL_ATTR, FINAL_ROUNDS, chosen
from autotune.testing.synthetic import SyntheticSpace

LUCKY = {"block_m": 32, "block_n": 32, "stages": 2}  # 0.8 ms once, then 1.2 ms
STEADY = {"block_m": 64, "block_n": 32, "stages": 2}  # 0.9 ms every time


class TwoSeedSpace(SyntheticSpace):
    def seed_configs(self, problem):
        return [dict(LUCKY), dict(STEADY)]


SPACE = TwoSeedSpace()
PROBLEM = SPACE.parse_problem("128x48x32")
DEFAULT = SPACE.default_config(PROBLEM)


def _k(config) -> tuple:
    return tuple(sorted(config.items()))


class ScriptedDevices(ReplayDevices):
    """The recorded table, except that scripted configs take their n-th time from a list (the
    last repeats); a time of None fails that measurement."""

    def __init__(self, script: dict[tuple, list[float | None]]):
        super().__init__(RecordedTable.from_frame(SPACE.recorded_frame(PROBLEM)), 1, 0.0)
        self.script, self.count = script, collections.Counter()

    def start(self, key, job):
        super().start(key, job)
        config = _k(job.candidate.config)
        if config in self.script:
            times = self.script[config]
            t = times[min(self.count[config], len(times) - 1)]
            self.count[config] += 1
            at, _ = self._running[key]
            self._running[key] = (at, Result(None, Cause.VALIDATION, "scripted failure")
                                  if t is None else Result(None, timing=Timing(t, t, t, 1, 1, 1)))


def ScriptedRunner(script):
    return Scheduler(InlineBuilder(compile_nothing), ScriptedDevices(script))


def _runner():
    return ScriptedRunner({_k(DEFAULT): [1.0], _k(LUCKY): [0.8, 1.2], _k(STEADY): [0.9]})


def _tune(storage, runner, trials=3, **kw):
    return tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=trials,
                        sampler=make_sampler("random", seed=0), retime_best=False, **kw)


def test_the_final_round_beats_the_winners_curse(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/f.db")
    runner = _runner()
    summary = _tune(storage, runner)
    assert summary.study.best_trial.params == LUCKY  # the minimum over the study: one lucky draw
    assert summary.best.params == STEADY and summary.best_time_ms == 0.9
    assert summary.default_time_ms == 1.0
    final = summary.final
    assert final["rounds"] == FINAL_ROUNDS and final["medians_ms"] == {"0": 1.0, "1": 1.2, "2": 0.9}
    # Three finalists and the vendor op, FINAL_ROUNDS rounds each, after the three trials.
    rounds = [runner.pool.measured[3 + 3 * r:6 + 3 * r] for r in range(FINAL_ROUNDS)]
    assert len(runner.pool.measured) == 3 + 3 * FINAL_ROUNDS
    assert runner.pool.vendor_served == FINAL_ROUNDS
    # Rounds rotate the order, so no entry is always timed first.
    assert len({repr(r[0]) for r in rounds}) == 3
    assert final["vendor_times_ms"] == [SPACE.VENDOR_MS] * FINAL_ROUNDS
    assert summary.vendor_ms == SPACE.VENDOR_MS == summary.study.user_attrs["vendor_ms"]
    (lines,) = _summary_lines(SPACE, [summary], True)
    assert "best 0.9 ms" in lines and f"final round winner, median of {FINAL_ROUNDS}" in lines
    assert "default 1 ms: best is 1.111x" in lines and "vendor 1.1 ms: best is 1.222x" in lines


def test_the_pick_is_what_results_and_the_store_hand_on(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/f.db")
    _tune(storage, _runner())
    (row,) = best_configs(storage, "synthetic").to_dict("records")
    assert row["config"] == STEADY and row["time_ms"] == 0.9 and row["final"]
    store = store_from_studies(storage, SPACE, Gpu("sm_90a", "NVIDIA H100", "13.0", "13.0"))
    entry = store.get(PROBLEM)
    assert entry.config == STEADY and entry.time_ms == 0.9 and entry.default_ms == 1.0


def test_a_finalist_failing_in_the_final_round_is_out(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/f.db")
    runner = ScriptedRunner({_k(DEFAULT): [1.0], _k(LUCKY): [0.8, 1.2],
                             _k(STEADY): [0.9, 0.9, None]})
    summary = _tune(storage, runner)
    assert summary.best.params == DEFAULT and summary.final["failed"] == {"2": "validation"}


def test_a_challenger_must_beat_the_default_in_every_round(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/f.db")
    # STEADY's final rounds: 0.9, 0.95, 1.05 - a better median (0.95) than the default's 1.0,
    # but one round slower than it: within the noise, so the default stays.
    runner = ScriptedRunner({_k(DEFAULT): [1.0], _k(LUCKY): [0.8, 1.2],
                             _k(STEADY): [0.9, 0.9, 0.95, 1.05]})
    summary = _tune(storage, runner, final_rounds=3)
    assert summary.final["medians_ms"]["2"] == 0.95
    assert summary.best.params == DEFAULT and summary.best_time_ms == 1.0


def test_a_resumed_study_runs_its_final_round_again_only_with_new_trials(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/f.db")
    _tune(storage, _runner())
    again = _runner()
    summary = _tune(storage, again)  # nothing new: the round is current
    assert again.pool.measured == [] and summary.best.params == STEADY
    more = _runner()
    summary = _tune(storage, more, trials=6)
    assert len(more.pool.measured) > 3  # three new trials, then the final round again
    assert summary.final["last_trial"] == 5 and summary.best_time_ms == 0.9


def test_without_a_final_round_the_fastest_trial_is_the_pick(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/f.db")
    summary = _tune(storage, _runner(), final_top=0)
    assert summary.final is None and FINAL_ATTR not in summary.study.user_attrs
    assert summary.best.params == LUCKY and chosen(summary.study)[1] == 0.8


def test_a_final_round_made_stale_by_newer_trials_is_ignored(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/f.db")
    _tune(storage, _runner())
    # A later session adds trials without a final round: its pick is the fastest trial again.
    faster = ScriptedRunner({_k(DEFAULT): [1.0], _k(LUCKY): [0.8], _k(STEADY): [0.9]})
    summary = _tune(storage, faster, trials=8, final_top=0)
    assert summary.final is None
    assert summary.best_time_ms == min(t.value for t in summary.study.trials if t.value)
