"""How a study starts: the space's seed configs right after its default, once per study; a
resumed study keeps the timer it was measured with and the knob values it drew from."""

from __future__ import annotations

import optuna
import pytest

from autotune.errors import UserError
from autotune.runner import RecordedTable, replay
from autotune.study import make_sampler, open_storage, tune_problem
from autotune.testing.synthetic import SyntheticSpace


class SeededSpace(SyntheticSpace):
    SEEDS = [{"block_m": 64, "block_n": 32, "stages": 3},  # the known best
             {"block_m": 32, "block_n": 32, "stages": 2},
             {"block_m": 128, "block_n": 256, "stages": 8}]  # illegal: never enqueued

    def seed_configs(self, problem):
        return [dict(c) for c in self.SEEDS]


SPACE = SeededSpace()
PROBLEM = SPACE.parse_problem("128x48x32")


def _tune(storage, trials, timer="graph-window"):
    runner = replay(RecordedTable.from_frame(SPACE.recorded_frame(PROBLEM)), 1, 0.0)
    runner.timer = timer
    return tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=trials,
                        sampler=make_sampler("random", seed=0), retime_best=False)


def test_seeds_follow_the_default_and_illegal_seeds_are_dropped(tmp_path):
    assert SPACE.violations(SPACE.SEEDS[2], PROBLEM)
    summary = _tune(open_storage(f"sqlite:///{tmp_path}/s.db"), trials=5)
    trials = summary.study.get_trials()
    assert [t.user_attrs["source"] for t in trials[:3]] == ["default", "seed", "seed"]
    assert [t.params for t in trials[1:3]] == SPACE.SEEDS[:2]
    assert summary.best.params == SPACE.SEEDS[0]
    assert not any(t.params == SPACE.SEEDS[2] for t in trials)


def test_a_resumed_study_does_not_enqueue_its_seeds_again(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/s.db")
    _tune(storage, trials=4)
    summary = _tune(storage, trials=8)
    sources = [t.user_attrs.get("source") for t in summary.study.get_trials()]
    assert sources.count("default") == 1 and sources.count("seed") == 2
    assert summary.finished == 8


def test_a_study_is_not_resumed_with_another_timer(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/s.db")
    _tune(storage, trials=3)
    with pytest.raises(UserError, match="timed with the 'graph-window' timer, these times come from "
                                        "'rotate'"):
        _tune(storage, trials=6, timer="rotate")
    assert _tune(storage, trials=6).finished == 6


def test_a_study_is_not_resumed_over_a_changed_space(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/s.db")
    _tune(storage, trials=3)

    class Wider(SeededSpace):
        def parameters(self, problem):
            return {**super().parameters(problem),
                    "block_n": optuna.distributions.CategoricalDistribution([16, 32, 64, 128, 256])}

    runner = replay(RecordedTable.from_frame(SPACE.recorded_frame(PROBLEM)), 1, 0.0)
    with pytest.raises(UserError, match=r"knob 'block_n' from \[16, 32, 64, 128\]; the space now "
                                        r"offers \[16, 32, 64, 128, 256\]"):
        tune_problem(Wider(), PROBLEM, runner, storage=storage, trials=6, retime_best=False)
    assert _tune(storage, trials=6).finished == 6


def test_running_trials_carry_heartbeats(tmp_path):
    # A killed driver's trials are failed (and re-queued) by their stale heartbeats: the driver
    # must record them through optuna's cached-storage wrapper.
    summary = _tune(open_storage(f"sqlite:///{tmp_path}/s.db"), trials=3)
    storage = summary.study._storage
    assert storage.get_heartbeat_interval()
    trial_id = summary.study.get_trials()[0]._trial_id
    from optuna.storages._rdb import models

    with storage._backend.scoped_session() as session:
        assert session.query(models.TrialHeartbeatModel).filter_by(trial_id=trial_id).count() == 1


def test_seeds_are_enqueued_best_estimate_first(tmp_path):
    """Where the space has a cost model, a study times its seeds in the model's order (as first
    use does): a short study reaches the likely winner even when the plugin lists it last."""

    class Ranked(SeededSpace):
        def estimate_ms(self, config, problem):
            return {32: 2.0, 64: 1.0}.get(config["block_m"], 3.0)

    space = Ranked()
    assert space.ranked_seed_configs(PROBLEM) == [SPACE.SEEDS[0], SPACE.SEEDS[1], SPACE.SEEDS[2]]

    class Reversed(Ranked):
        def seed_configs(self, problem):
            return [dict(c) for c in reversed(self.SEEDS)]

    space = Reversed()
    runner = replay(RecordedTable.from_frame(space.recorded_frame(PROBLEM)), 1, 0.0)
    storage = open_storage(f"sqlite:///{tmp_path}/s.db")
    summary = tune_problem(space, PROBLEM, runner, storage=storage, trials=3,
                           sampler=make_sampler("random", seed=0), retime_best=False)
    trials = summary.study.get_trials()
    assert [t.params for t in trials[1:3]] == SPACE.SEEDS[:2]  # the plugin listed them last
