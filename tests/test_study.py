"""Studies over a recorded table (SimulatedRunner): search, pruning, duplicates, resume."""

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

from autotune.runner import CompileOnlyRunner, LocalRunner, RecordedTable, SimulatedRunner
from autotune.study import (best_configs, make_sampler, open_storage, study_name, trials_table,
                            tune, tune_problem)
from autotune.testing.synthetic import SyntheticEvaluator, SyntheticSpace, stub_compile

optuna.logging.set_verbosity(optuna.logging.WARNING)

FAULTS = {"hang": [{"block_m": 32, "block_n": 128}], "crash": [{"block_m": 16, "block_n": 64}],
          "wrong": [{"block_n": 16, "stages": 4}], "compile": [{"block_m": 128, "stages": 1}]}
SPACE = SyntheticSpace(faults=FAULTS)
PROBLEM = SPACE.parse_problem("128x48x32")


def _key(config):
    return tuple(sorted(config.items()))


@pytest.fixture
def storage(tmp_path):
    return open_storage(f"sqlite:///{tmp_path}/studies/test.db")


def _runner(slots=1, delay_s=0.0):
    return SimulatedRunner(RecordedTable.from_frame(SPACE.recorded_frame(PROBLEM)), slots, delay_s)


def test_tpe_study_finds_the_known_best(storage):
    runner = _runner(slots=3)
    summary = tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=45,
                           sampler=make_sampler("tpe", seed=3))
    assert summary.best.params == SPACE.known_best(PROBLEM)
    assert summary.best.value == pytest.approx(SPACE.model_time_ms(SPACE.known_best(PROBLEM)))
    trials = summary.study.get_trials()
    assert len(trials) == summary.finished == 45
    # Failures are recorded with their cause and the study went on past them.
    failed = [t for t in trials if t.state == TrialState.FAIL]
    assert failed and all(t.user_attrs["cause"] in {"timeout", "crash", "validation", "compile"}
                          for t in failed)


def test_default_first_illegal_pruned_duplicates_served(storage):
    runner = _runner(slots=4)
    summary = tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=60,
                           sampler=make_sampler("random", seed=0), retime_best=False)
    trials = summary.study.get_trials()
    assert trials[0].params == SPACE.default_config(PROBLEM)
    assert trials[0].user_attrs["source"] == "default"
    illegal = [t for t in trials if t.user_attrs.get("outcome") == "illegal"]
    assert illegal and all(t.state == TrialState.PRUNED and "exceeds" in t.user_attrs["message"]
                           for t in illegal)
    # The budget counts configs tried, not proposals refused before compiling.
    assert summary.finished == len(trials) - len(illegal) == 60
    measured = [_key(c) for c in runner.measured]
    assert not any(SPACE.violations(c, PROBLEM) for c in runner.measured)  # never reached a GPU
    assert len(measured) == len(set(measured)) == summary.measured  # nothing measured twice
    duplicates = [t for t in trials if "duplicate_of" in t.user_attrs]
    assert duplicates  # 60 random draws from a small space repeat themselves
    for t in duplicates:
        original = trials[t.user_attrs["duplicate_of"]]
        assert (t.params, t.state, t.value) == (original.params, original.state, original.value)


def test_a_mostly_illegal_sampler_stops(storage, monkeypatch):
    import autotune.study.driver as driver

    monkeypatch.setattr(driver, "ILLEGAL_PER_TRIAL", 2)
    skinny = SPACE.parse_problem("16x48x32")  # every block_m but 16 is illegal
    runner = SimulatedRunner(RecordedTable.from_frame(SPACE.recorded_frame(skinny)), 1, 0.0)
    summary = tune_problem(SPACE, skinny, runner, storage=storage, trials=10,
                           sampler=make_sampler("random", seed=0), retime_best=False)
    illegal = [t for t in summary.study.get_trials() if t.user_attrs.get("outcome") == "illegal"]
    assert len(illegal) == 2 * 10 and summary.finished < 10


def test_new_best_is_retimed(storage):
    runner = _runner()
    summary = tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=1)
    assert [_key(c) for c in runner.measured] == [_key(SPACE.default_config(PROBLEM))] * 2
    attrs = summary.best.user_attrs
    assert attrs["first_time_ms"] == attrs["retime_ms"] == summary.best.value


def test_restarted_study_does_not_remeasure(storage):
    first = _runner(slots=2)
    tune_problem(SPACE, PROBLEM, first, storage=storage, trials=12,
                 sampler=make_sampler("tpe", seed=1), retime_best=False)
    second = _runner(slots=2)
    summary = tune_problem(SPACE, PROBLEM, second, storage=storage, trials=25,
                           sampler=make_sampler("tpe", seed=1), retime_best=False)
    assert summary.finished == 25 and len(summary.study.get_trials()) == 25
    again = {_key(c) for c in first.measured} & {_key(c) for c in second.measured}
    assert not again


_KILLED_DRIVER = textwrap.dedent("""
    import sys
    from autotune.runner import RecordedTable, SimulatedRunner
    from autotune.study import make_sampler, open_storage, tune_problem
    from autotune.testing.synthetic import SyntheticSpace
    space = SyntheticSpace(faults={faults!r})
    problem = space.parse_problem("128x48x32")
    runner = SimulatedRunner(RecordedTable.from_frame(space.recorded_frame(problem)), 2, 0.3)
    tune_problem(space, problem, runner, storage=open_storage(sys.argv[1]), trials=30,
                 sampler=make_sampler("tpe", seed=2), retime_best=False)
""")


def test_killed_driver_resumes(tmp_path):
    url = f"sqlite:///{tmp_path}/killed.db"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_DRIVER.format(faults=FAULTS), url])
    try:
        deadline = time.monotonic() + 60
        done = []
        while time.monotonic() < deadline and len(done) < 6:
            time.sleep(0.3)
            try:
                study = optuna.load_study(study_name=study_name(SPACE, PROBLEM),
                                          storage=open_storage(url))
                done = [t for t in study.get_trials() if "outcome" in t.user_attrs]
            except KeyError:  # the study does not exist yet
                pass
        assert len(done) >= 6
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    before = {t.number: t for t in study.get_trials() if "outcome" in t.user_attrs}
    assert len(before) < 30
    runner = _runner(slots=2)
    summary = tune_problem(SPACE, PROBLEM, runner, storage=open_storage(url), trials=30,
                           sampler=make_sampler("tpe", seed=2), retime_best=False)
    assert summary.finished == 30
    assert not {_key(t.params) for t in before.values()} & {_key(c) for c in runner.measured}
    after = {t.number: t for t in summary.study.get_trials()}
    for number, trial in before.items():  # untouched: same state, value, completion time
        assert (after[number].state, after[number].value, after[number].datetime_complete) == \
            (trial.state, trial.value, trial.datetime_complete)


def test_fixed_parameters(storage):
    runner = _runner()
    summary = tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=8,
                           sampler=make_sampler("random", seed=0, fixed={"block_m": 64}),
                           fixed={"block_m": 64})
    assert {t.params["block_m"] for t in summary.study.get_trials()} == {64}


def test_compile_only_study_is_honest(storage):
    runner = CompileOnlyRunner(compiler=stub_compile, compile_workers=0)
    summary = tune_problem(SPACE, PROBLEM, runner, storage=storage, trials=12,
                           sampler=make_sampler("random", seed=0))
    assert summary.study.study_name.endswith("/compile-only") and summary.best is None
    for t in summary.study.get_trials():
        assert t.value is None
        if t.user_attrs["outcome"] == "compiled":
            assert t.state == TrialState.PRUNED
            assert t.user_attrs["resources"]["smem_bytes"] == SPACE.smem_bytes(t.params)
        else:
            assert t.user_attrs["outcome"] in {"illegal", "compile"}


def test_study_with_isolated_workers(storage):
    # The real LocalRunner: a hanging and a crashing candidate are killed; the study finishes.
    space = SyntheticSpace(faults={"hang": [{"block_m": 16, "block_n": 32}],
                                   "crash": [{"block_m": 32, "block_n": 16}]})
    order = [{"block_m": 16, "block_n": 32, "stages": 2}, {"block_m": 32, "block_n": 16, "stages": 2},
             {"block_m": 64, "block_n": 32, "stages": 3}]
    study = optuna.create_study(storage=storage, study_name=study_name(space, PROBLEM),
                                direction="minimize")
    for config in order:
        study.enqueue_trial(config)
    with LocalRunner([0], evaluator=SyntheticEvaluator(), compiler=stub_compile,
                     compile_workers=0, timeout_s=2.0) as runner:
        summary = tune_problem(space, PROBLEM, runner, storage=storage, trials=4)
    outcomes = collections.Counter(t.user_attrs["outcome"] for t in summary.study.get_trials())
    assert outcomes["timeout"] == 1 and outcomes["crash"] == 1 and outcomes["ok"] == 2
    assert summary.best.params == order[2]


def test_results_tables(storage):
    problems = [SPACE.parse_problem("128x48x32"), SPACE.parse_problem("64x48x32")]
    table = RecordedTable.from_frame(SPACE.recorded_frame(problems[0]))
    tune(SPACE, problems, SimulatedRunner(table), storage=storage, trials=10,
         sampler_factory=lambda: make_sampler("brute", seed=0))
    best = best_configs(storage, "synthetic")
    assert list(best["problem"]) == sorted(p.key for p in problems) or \
        set(best["problem"]) == {p.key for p in problems}
    assert (best["trials"] == 10).all() and best["time_ms"].notna().all()
    frame = trials_table(optuna.load_study(study_name=study_name(SPACE, problems[0]),
                                           storage=storage))
    assert len(frame) == 10 and {"params_block_m", "user_attrs_outcome", "value"} <= set(frame.columns)
