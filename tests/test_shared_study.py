"""Several drivers on one study (simulated runner), on SQLite and on a real PostgreSQL server:
the budget holds exactly, no trial is counted twice or lost, a driver killed mid-trial has its
trial failed and re-queued by the others, and the results equal a single driver's. The
PostgreSQL tests need a server: $AUTOTUNE_TEST_POSTGRES (CI starts one, .ci/run); without it
they skip."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import optuna
import pytest

from autotune.runner import RecordedTable, replay
from autotune.study import make_sampler, open_storage, tune_problem
from autotune.study.driver import counts
from autotune.testing.synthetic import SyntheticSpace

optuna.logging.set_verbosity(optuna.logging.WARNING)
SPACE = SyntheticSpace()
PROBLEM = SPACE.parse_problem("16x48x32")  # 16 legal configs: block_m=16, any block_n, stages
LEGAL = {tuple(sorted(c.items())) for c in SPACE.legal_configs(PROBLEM)}

DRIVER = textwrap.dedent("""
    import sys
    from autotune.runner import RecordedTable, replay
    from autotune.study import make_sampler, open_storage, tune_problem
    from autotune.testing.synthetic import SyntheticSpace
    url, seed, delay, trials = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    space = SyntheticSpace()
    problem = space.parse_problem("16x48x32")
    runner = replay(RecordedTable.from_frame(space.recorded_frame(problem)), 2, delay)
    tune_problem(space, problem, runner, storage=open_storage(url, heartbeat_s=1, grace_s=3),
                 trials=trials, sampler=make_sampler("brute", seed), retime_best=False,
                 final_top=0)
""")


def _postgres_url() -> str | None:
    url = os.environ.get("AUTOTUNE_TEST_POSTGRES")
    if not url:
        return None
    import sqlalchemy

    try:
        engine = sqlalchemy.create_engine(url, connect_args={"connect_timeout": 3})
        with engine.begin() as conn:  # a clean database: drop the tables of earlier tests
            meta = sqlalchemy.MetaData()
            meta.reflect(conn)
            meta.drop_all(conn)
    except Exception:
        return None
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/shared.db"
    found = _postgres_url()
    if found is None:
        pytest.skip("no PostgreSQL server ($AUTOTUNE_TEST_POSTGRES)")
    return found


def _drivers(url: str, seeds, delay: float, trials: int):
    return [subprocess.Popen([sys.executable, "-c", DRIVER, url, str(s), str(delay), str(trials)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for s in seeds]


def _study(url: str) -> optuna.Study:
    storage = open_storage(url)
    (name,) = optuna.get_all_study_names(storage)
    return optuna.load_study(study_name=name, storage=storage)


def test_drivers_share_one_budget_exactly(url, tmp_path):
    procs = _drivers(url, seeds=(1, 2, 3), delay=0.05, trials=len(LEGAL))
    outputs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-2000:] for _, err in outputs]
    trials = _study(url).get_trials()
    counted = [t for t in trials if counts(t)]
    assert all(t.state.is_finished() for t in trials)
    # Every legal config measured once, none twice, none lost: what one driver gives.
    assert sorted(tuple(sorted(t.params.items())) for t in counted) == sorted(LEGAL)
    single = tune_problem(SPACE, PROBLEM, replay(RecordedTable.from_frame(
        SPACE.recorded_frame(PROBLEM))), storage=open_storage(f"sqlite:///{tmp_path}/single.db"),
        trials=len(LEGAL), sampler=make_sampler("brute", 0), retime_best=False, final_top=0)
    best = min((t for t in counted if t.value is not None), key=lambda t: t.value)
    assert best.params == single.best.params and best.value == single.best.value


def test_a_killed_drivers_trial_is_requeued_by_the_others(url):
    open_storage(url)
    (slow,) = _drivers(url, seeds=(1,), delay=30.0, trials=6)  # its first trials never end
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.3)
            if optuna.get_all_study_names(open_storage(url)) and any(
                    t.state == optuna.trial.TrialState.RUNNING for t in _study(url).get_trials()):
                break
        killed = [t.number for t in _study(url).get_trials()
                  if t.state == optuna.trial.TrialState.RUNNING]
        assert killed
    finally:
        slow.send_signal(signal.SIGKILL)
        slow.communicate()
    (other,) = _drivers(url, seeds=(2,), delay=0.05, trials=6)
    _, err = other.communicate(timeout=240)
    assert other.returncode == 0, err[-2000:]
    trials = _study(url).get_trials()
    by_number = {t.number: t for t in trials}
    for number in killed:  # failed by its heartbeat, with no result of its own
        assert by_number[number].state == optuna.trial.TrialState.FAIL
        assert "outcome" not in by_number[number].user_attrs
        retried = [t for t in trials if t.system_attrs.get("failed_trial") == number]
        assert retried and retried[0].params == by_number[number].params
        assert counts(retried[0]) and retried[0].state.is_finished()
    assert sum(counts(t) for t in trials) == 6


def test_drivers_create_a_new_sqlite_file_at_once(tmp_path):
    url = f"sqlite:///{tmp_path}/new.db"
    script = "import sys; from autotune.study import open_storage; open_storage(sys.argv[1])"
    procs = [subprocess.Popen([sys.executable, "-c", script, url], stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors


def test_an_in_memory_sqlite_storage_writes_no_file(tmp_path, monkeypatch):
    # The creation lock belongs beside a database file; ":memory:" has none (a lock file named
    # ":memory:.lock" once landed in the working directory).
    monkeypatch.chdir(tmp_path)
    from autotune.study import open_storage

    open_storage("sqlite:///:memory:")
    assert list(tmp_path.iterdir()) == []
