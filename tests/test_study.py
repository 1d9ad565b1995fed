"""Studies over a recorded table (SimulatedRunner): search, illegal proposals, duplicates, resume,
drivers sharing a storage."""

import collections
import os
import signal
import subprocess
import sys
import textwrap
import time

import optuna
import pytest
from optuna.trial import TrialState

from autotune.runner import (InlineBuilder, NoDevices, Provenance, RecordedTable, Scheduler,
                             WorkerPool, replay)
from autotune.study import (best_configs, make_sampler, open_storage, open_study, study_name,
                            trials_table, tune, tune_problem)
from autotune.study import proposals as proposals_module
from autotune.study.driver import counts
from autotune.study.proposals import Proposals
from autotune.testing.synthetic import SyntheticEvaluator, SyntheticSpace, stub_compile

optuna.logging.set_verbosity(optuna.logging.WARNING)

FAULTS = {"hang": [{"block_m": 32, "block_n": 128}], "crash": [{"block_m": 16, "block_n": 64}],
          "wrong": [{"block_n": 16, "stages": 4}], "compile": [{"block_m": 128, "stages": 1}]}
SPACE = SyntheticSpace(faults=FAULTS)
PROBLEM = SPACE.parse_problem("128x48x32")
SKINNY = SPACE.parse_problem("16x48x32")  # every block_m but 16 is illegal: most of the space


def _counted(trials):
    """The trials that spent the budget: configs measured (not duplicates)."""
    return [t for t in trials if counts(t)]


def _key(config):
    return tuple(sorted(config.items()))


@pytest.fixture
def storage(tmp_path):
    return open_storage(f"sqlite:///{tmp_path}/studies/test.db")


def _runner(slots=1, delay_s=0.0, problem=PROBLEM):
    return replay(RecordedTable.from_frame(SPACE.recorded_frame(problem)), slots, delay_s)


REPLAYED = Provenance("replayed")  # study names tell only the kind


def _legal(trials, problem=PROBLEM):
    return all(not SPACE.violations(t.params, problem) and t.user_attrs["outcome"] != "illegal"
               for t in trials)


def test_tpe_study_finds_the_known_best(storage):
    runner = _runner(slots=3)
    summary = tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=45,
                           sampler=make_sampler("tpe", seed=3))
    assert summary.best.params == SPACE.known_best(PROBLEM)
    assert summary.best.value == pytest.approx(SPACE.model_time_ms(SPACE.known_best(PROBLEM)))
    trials = summary.study.get_trials()
    assert len(_counted(trials)) == summary.finished == 45
    # Failures are recorded with their cause and the study went on past them.
    failed = [t for t in trials if t.state == TrialState.FAIL]
    assert failed and all(t.user_attrs["cause"] in {"timeout", "crash", "validation", "compile"}
                          for t in failed)


def test_default_first_illegal_refused_duplicates_served(storage):
    runner = _runner(slots=4)
    # The search alone (final_top=0): the final round re-times by design (test_study_final.py).
    summary = tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=60,
                           sampler=make_sampler("random", seed=0), retime_best=False, final_top=0)
    trials = summary.study.get_trials()
    assert trials[0].params == SPACE.default_config(PROBLEM)
    assert trials[0].user_attrs["source"] == "default"
    # Illegal proposals are counted, not stored; the budget counts configs tried.
    assert summary.outcomes["illegal"] > 0 and _legal(trials)
    assert summary.finished == len(_counted(trials)) == 60 and summary.stopped is None
    measured = [_key(c) for c in runner.pool.measured]
    assert not any(SPACE.violations(c, PROBLEM) for c in runner.pool.measured)  # never reached a GPU
    assert len(measured) == len(set(measured)) == summary.measured  # nothing measured twice
    duplicates = [t for t in trials if "duplicate_of" in t.user_attrs]
    assert duplicates  # 60 random draws from a small space repeat themselves
    for t in duplicates:
        original = trials[t.user_attrs["duplicate_of"]]
        assert (t.params, t.state, t.value) == (original.params, original.state, original.value)


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_a_mostly_illegal_space_stores_only_legal_trials(storage, sampler):
    runner = _runner(slots=2, problem=SKINNY)
    summary = tune_problem(SPACE, SKINNY, runner, storage=storage, trials=12,
                           sampler=make_sampler(sampler, seed=0), retime_best=False)
    trials = summary.study.get_trials()
    assert summary.finished == len(_counted(trials)) == 12 and _legal(trials, SKINNY)
    assert summary.outcomes["illegal"] > 0  # 3 in 4 configs are illegal
    assert not any(SPACE.violations(c, SKINNY) for c in runner.pool.measured)


def test_a_sampler_that_finds_no_legal_config_stops(storage, monkeypatch):
    from autotune.cli import _summary_lines

    monkeypatch.setattr(proposals_module, "REFUSED_PER_PROPOSAL", 30)
    tiny = SPACE.parse_problem("8x48x32")  # block_m >= 16 > M: nothing is legal, the default too
    runner = _runner()
    summary = tune_problem(SPACE, tiny, runner, storage=storage, trials=10,
                           sampler=make_sampler("tpe", seed=0))
    assert summary.finished == 0 and not runner.pool.measured and summary.best is None
    assert summary.stopped.startswith("the sampler proposed 30 illegal configs in a row")
    assert "block_m=" in summary.stopped and "exceeds M=8" in summary.stopped
    # Only the enqueued default reached the storage (told illegal); the draws stayed in memory.
    (default,) = summary.study.get_trials()
    assert default.state == TrialState.PRUNED and default.user_attrs["outcome"] == "illegal"
    assert summary.outcomes == {"illegal": 31}
    (lines,) = _summary_lines(SPACE, [summary], True)
    assert "\n  stopped: the sampler proposed 30 illegal configs in a row" in lines


def test_a_budget_beyond_the_legal_space_stops(storage, monkeypatch):
    from autotune.study import driver

    monkeypatch.setattr(driver, "DUPLICATES_IN_A_ROW", 20)
    runner = _runner(problem=SKINNY)  # 16 legal configs, a budget of 30
    summary = tune_problem(SPACE, SKINNY, runner, storage=storage, trials=30,
                           sampler=make_sampler("random", seed=0), retime_best=False, final_top=0)
    assert summary.stopped.startswith("the sampler proposed 20 measured configs in a row")
    measured = [_key(c) for c in runner.pool.measured]
    assert len(measured) == len(set(measured)) == summary.finished <= 16


def test_brute_force_ends_when_every_config_is_proposed(storage):
    runner = _runner(problem=SKINNY)
    summary = tune_problem(SPACE, SKINNY, runner, storage=storage, trials=100,
                           sampler=make_sampler("brute", seed=0), retime_best=False,
                           final_top=0)
    legal = {_key(c) for c in SPACE.legal_configs(SKINNY)}
    assert summary.stopped == "the sampler has proposed every config of the space"
    assert sorted(_key(c) for c in runner.pool.measured) == sorted(legal)  # each once
    assert summary.finished == len(_counted(summary.study.get_trials())) == len(legal)


def test_new_best_is_retimed(storage):
    runner = _runner()
    # The retime alone (final_top=0): the final round times the default again, and the vendor.
    summary = tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=1, final_top=0)
    assert [_key(c) for c in runner.pool.measured] == [_key(SPACE.default_config(PROBLEM))] * 2
    attrs = summary.best.user_attrs
    assert attrs["first_time_ms"] == attrs["retime_ms"] == summary.best.value


# SKINNY has 16 legal configs: budgets within them (duplicates do not count).
@pytest.mark.parametrize("problem, first_n, then_n", [(PROBLEM, 12, 25), (SKINNY, 6, 14)],
                         ids=["wide", "skinny"])
def test_restarted_study_does_not_remeasure(storage, problem, first_n, then_n):
    first = _runner(slots=2, problem=problem)
    tune_problem(SPACE, problem, first, storage=storage, trials=first_n,
                 sampler=make_sampler("tpe", seed=1), retime_best=False)
    second = _runner(slots=2, problem=problem)
    summary = tune_problem(SPACE, problem, second, storage=storage, trials=then_n,
                           sampler=make_sampler("tpe", seed=1), retime_best=False, final_top=0)
    trials = summary.study.get_trials()
    assert summary.finished == then_n and len(_counted(trials)) == then_n and _legal(trials, problem)
    again = {_key(c) for c in first.pool.measured} & {_key(c) for c in second.pool.measured}
    assert not again


_KILLED_DRIVER = textwrap.dedent("""
    import sys
    from autotune.runner import RecordedTable, replay
    from autotune.study import make_sampler, open_storage, tune_problem
    from autotune.testing.synthetic import SyntheticSpace
    space = SyntheticSpace(faults={faults!r})
    problem = space.parse_problem("128x48x32")
    runner = replay(RecordedTable.from_frame(space.recorded_frame(problem)), 2, 0.3)
    tune_problem(space, problem, runner, storage=open_storage(sys.argv[1]), trials=30,
                 sampler=make_sampler("tpe", seed=2), retime_best=False)
""")


def test_killed_driver_resumes(tmp_path):
    url = f"sqlite:///{tmp_path}/killed.db"
    open_storage(url)  # created here: polling it while the driver creates it races (alembic)
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_DRIVER.format(faults=FAULTS), url])
    try:
        deadline = time.monotonic() + 60
        done = []
        while time.monotonic() < deadline and len(done) < 6:
            time.sleep(0.3)
            try:
                study = optuna.load_study(study_name=study_name(SPACE, PROBLEM, REPLAYED),
                                          storage=open_storage(url))
                done = [t for t in study.get_trials() if "outcome" in t.user_attrs]
            except KeyError:  # the study does not exist yet
                pass
        assert len(done) >= 6
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # Trials told before the kill (one killed while its attrs were written has an outcome, yet
    # is still running).
    before = {t.number: t for t in study.get_trials() if "outcome" in t.user_attrs
              and t.state.is_finished()}
    assert len(before) < 30
    runner = _runner(slots=2)
    summary = tune_problem(SPACE, PROBLEM, runner, storage=open_storage(url), trials=30,
                           sampler=make_sampler("tpe", seed=2), retime_best=False, final_top=0)
    assert summary.finished == 30
    assert not {_key(t.params) for t in before.values()} & {_key(c) for c in runner.pool.measured}
    after = {t.number: t for t in summary.study.get_trials()}
    for number, trial in before.items():  # untouched: same state, value, completion time
        assert (after[number].state, after[number].value, after[number].datetime_complete) == \
            (trial.state, trial.value, trial.datetime_complete)


@pytest.mark.timeout(120)
@pytest.mark.filterwarnings("ignore:Heartbeat of storage")
def test_a_trial_orphaned_before_its_first_heartbeat_is_requeued(tmp_path):
    """A driver killed between asking a trial and recording its first heartbeat leaves the trial
    running with no heartbeat, which Optuna never fails as stale: the resumed study waited on it
    for ever (CI, 2026-11-29)."""
    storage = open_storage(f"sqlite:///{tmp_path}/orphan.db", heartbeat_s=1, grace_s=2)
    runner = _runner(slots=2)
    study = open_study(SPACE, PROBLEM, storage, provenance=runner.provenance, timer=runner.timer)
    orphan = study.ask()  # its driver died here: no heartbeat, no params
    summary = tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=6,
                           sampler=make_sampler("tpe", seed=2), retime_best=False, final_top=0)
    assert summary.finished == 6
    assert storage.get_trial(orphan._trial_id).state == TrialState.FAIL
    # Re-queued by the retry callback and measured: the budget holds the orphan's retry.
    retried = [t for t in summary.study.get_trials()
               if t.system_attrs.get("failed_trial") == orphan.number]
    assert len(retried) == 1 and retried[0].state == TrialState.COMPLETE


def test_fixed_parameters(storage):
    runner = _runner()
    summary = tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=8,
                           sampler=make_sampler("random", seed=0, fixed={"block_m": 64}),
                           fixed={"block_m": 64})
    assert {t.params["block_m"] for t in summary.study.get_trials()} == {64}


def test_compile_only_study_is_honest(storage):
    runner = Scheduler(InlineBuilder(stub_compile), NoDevices())
    summary = tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=12,
                           sampler=make_sampler("random", seed=0))
    assert summary.study.study_name.endswith("/compile-only") and summary.best is None
    for t in summary.study.get_trials():
        assert t.value is None
        if t.user_attrs["outcome"] == "compiled":
            assert t.state == TrialState.PRUNED
            assert t.user_attrs["resources"]["smem_bytes"] == SPACE.smem_bytes(t.params)
        else:  # illegal proposals are not stored
            assert t.user_attrs["outcome"] == "compile" and t.state == TrialState.FAIL


def test_study_with_isolated_workers(storage):
    # Isolated device workers: a hanging and a crashing candidate are killed; the study finishes.
    space = SyntheticSpace(faults={"hang": [{"block_m": 16, "block_n": 32}],
                                   "crash": [{"block_m": 32, "block_n": 16}]})
    order = [{"block_m": 16, "block_n": 32, "stages": 2}, {"block_m": 32, "block_n": 16, "stages": 2},
             {"block_m": 64, "block_n": 32, "stages": 3}]
    study = optuna.create_study(storage=storage, study_name=study_name(space, PROBLEM),
                                direction="minimize")
    for config in order:
        study.enqueue_trial(config)
    with Scheduler(InlineBuilder(stub_compile),
                   WorkerPool(SyntheticEvaluator(), [0], Provenance("measured")),
                   timeout_s=2.0) as runner:
        summary = tune_problem(space, PROBLEM, runner, storage=storage, trials=4)
    outcomes = collections.Counter(t.user_attrs["outcome"] for t in summary.study.get_trials())
    assert outcomes["timeout"] == 1 and outcomes["crash"] == 1 and outcomes["ok"] == 2
    assert summary.best.params == order[2]


def test_results_tables(storage):
    problems = [SPACE.parse_problem("128x48x32"), SPACE.parse_problem("64x48x32")]
    table = RecordedTable.from_frame(SPACE.recorded_frame(problems[0]))
    tune(SPACE, problems, replay(table), storage=storage, trials=10,
         sampler_factory=lambda problem: make_sampler("brute", seed=0))
    best = best_configs(storage, "synthetic")
    assert list(best["problem"]) == sorted(p.key for p in problems) or \
        set(best["problem"]) == {p.key for p in problems}
    assert (best["trials"] == 10).all() and best["time_ms"].notna().all()
    frame = trials_table(optuna.load_study(study_name=study_name(SPACE, problems[0], REPLAYED),
                                           storage=storage))
    assert len(frame) == 10 and {"params_block_m", "user_attrs_outcome", "value"} <= set(frame.columns)


# -- the shadow study behind the proposals ---------------------------------------------------
def _proposals(storage):
    study = open_study(SPACE, SKINNY, storage)
    return study, Proposals(study, optuna.samplers.RandomSampler(seed=0), SPACE.parameters(SKINNY),
                            lambda c: SPACE.violations(c, SKINNY))


@pytest.mark.filterwarnings("ignore:Heartbeat of storage")
def test_illegal_draws_stay_in_the_shadow(storage):
    study, proposals = _proposals(storage)
    for _ in range(8):
        trial = proposals.ask()
        assert not SPACE.violations(trial.params, SKINNY)
        study.tell(trial, SPACE.model_time_ms(trial.params))
    proposals.ask()  # mirrors the ends of the first 8
    real = study.get_trials()
    assert len(real) == 9 and proposals.refused > 8  # ~3 in 4 random draws are illegal
    shadow = proposals.shadow.get_trials()
    pruned = [t for t in shadow if t.state == TrialState.PRUNED]
    assert len(pruned) == proposals.refused
    assert all(SPACE.violations(t.params, SKINNY) for t in pruned)
    # The sampler sees the real study's trials as they are: values, and the one in flight.
    legal = [(t.params, t.state, t.value) for t in shadow if t.state != TrialState.PRUNED]
    assert legal == [(t.params, t.state, t.value) for t in real]
    assert real[-1].state == TrialState.RUNNING


@pytest.mark.filterwarnings("ignore:Heartbeat of storage")
def test_the_shadow_mirrors_other_drivers_and_resumed_studies(storage):
    study, proposals = _proposals(storage)
    other = open_study(SPACE, SKINNY, storage)  # another driver on the same storage
    done = other.ask(SPACE.parameters(SKINNY))  # an earlier session's trial, illegal or not
    other.tell(done, state=TrialState.PRUNED)
    mine = proposals.ask()
    other.enqueue_trial({"block_m": 16, "block_n": 32, "stages": 2})
    in_flight = other.ask(SPACE.parameters(SKINNY))
    proposals.ask()
    shadow = proposals.shadow.get_trials()
    assert shadow[0].params == done.params and shadow[0].state == TrialState.PRUNED
    running = [t.params for t in shadow if t.state == TrialState.RUNNING]
    assert mine.params in running and in_flight.params in running  # constant liar sees both
    other.tell(in_flight, 1.5)
    proposals.ask()
    (told,) = [t for t in proposals.shadow.get_trials() if t.state == TrialState.COMPLETE]
    assert told.params == in_flight.params and told.value == 1.5


@pytest.mark.filterwarnings("ignore:Heartbeat of storage")
def test_queued_trials_go_first(storage):
    study, proposals = _proposals(storage)
    queued = [{"block_m": 128, "block_n": 16, "stages": 1}, {"block_m": 16, "block_n": 64, "stages": 3}]
    for config in queued:  # e.g. the default, or a config a user enqueued (illegal or not)
        open_study(SPACE, SKINNY, storage).enqueue_trial(config)
    assert [proposals.ask().params for _ in queued] == queued
    assert not proposals.shadow.get_trials(states=(TrialState.PRUNED,))  # nothing drawn yet
    trial = proposals.ask()
    assert trial.params not in queued and not SPACE.violations(trial.params, SKINNY)
    assert trial.params in [t.params for t in proposals.shadow.get_trials()]


@pytest.mark.filterwarnings("ignore:Heartbeat of storage")
@pytest.mark.parametrize("legal", [True, False], ids=["draw", "no-legal-draw"])
def test_a_queued_trial_taken_by_another_driver(storage, monkeypatch, legal):
    problem = SKINNY if legal else SPACE.parse_problem("8x48x32")  # nothing legal at M=8
    study = open_study(SPACE, problem, storage)
    proposals = Proposals(study, optuna.samplers.RandomSampler(seed=0),
                          SPACE.parameters(problem), lambda c: SPACE.violations(c, problem))
    monkeypatch.setattr(proposals_module, "REFUSED_PER_PROPOSAL", 5)
    other = open_study(SPACE, problem, storage)
    other.enqueue_trial(SPACE.default_config(problem))
    refresh = proposals._refresh

    def refresh_then_lose_the_queue():
        queued = refresh()
        other.ask(SPACE.parameters(problem))  # pops the default first
        return queued

    monkeypatch.setattr(proposals, "_refresh", refresh_then_lose_the_queue)
    trial = proposals.ask()  # found the queue empty: the sampler draws after all
    assert trial.params != SPACE.default_config(problem)
    if legal:
        assert not SPACE.violations(trial.params, problem)
    else:  # the last refused draw: the driver tells it illegal
        assert proposals.stopped and proposals.refused == 5
        assert trial.params == proposals.shadow.get_trials()[-1].params
