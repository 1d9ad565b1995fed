"""The Ray runner on a local Ray instance with logical GPUs (no real GPU): one actor per GPU,
compile tasks on CPUs, hung and crashed actors replaced, a study run through it."""

import optuna
import pytest

from autotune.runner import Candidate, Cause
from autotune.study import make_sampler, open_storage, tune_problem
from autotune.testing.synthetic import SyntheticEvaluator, SyntheticSpace, stub_compile

ray = pytest.importorskip("ray")

SPACE = SyntheticSpace(faults={"hang": [{"block_m": 32, "block_n": 128}],
                               "crash": [{"block_m": 16, "block_n": 64}]})
PROBLEM = SPACE.parse_problem("128x48x32")
GOOD = {"block_m": 64, "block_n": 32, "stages": 3}


@pytest.fixture(scope="module")
def runner():
    from autotune.runner import RunnerOptions, make_runner

    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False)
    # 8 s: on a loaded 2-core machine Ray took over 4 s to report a crashed actor (a timeout)
    runner = make_runner("ray", SPACE, RunnerOptions(evaluator=SyntheticEvaluator(),
                                                     compiler=stub_compile, timeout_s=8.0))
    yield runner
    runner.close()
    assert ray.is_initialized()  # a cluster the runner did not start is left running
    ray.shutdown()


def test_actor_per_gpu_and_isolation(runner):
    # Two deep on each GPU: a job queued behind the hang or the crash is sent to the new actor.
    assert runner.pool.slots == 4 and runner.builder.slots == 2 and runner.slots == 6
    results = runner.run([Candidate(SPACE, c, PROBLEM) for c in (
        {"block_m": 32, "block_n": 128, "stages": 2}, GOOD,
        {"block_m": 16, "block_n": 64, "stages": 2}, GOOD)])
    assert [r.cause for r in results] == [Cause.TIMEOUT, None, Cause.CRASH, None], \
        [r.message for r in results]
    assert results[1].time_ms == SPACE.model_time_ms(GOOD)
    # the hang's actor and the crash's; a third where the crash took a finished job's reply
    # with it and both ran again alone (tests/test_runner_ray_harvest.py)
    assert runner.pool.restarts in (2, 3)
    assert {r.device for r in results} == {None}  # logical GPUs have no name


def test_study_through_ray(runner, tmp_path):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    summary = tune_problem(SPACE, PROBLEM, runner, storage=open_storage(f"sqlite:///{tmp_path}/r.db"),
                           trials=8, sampler=make_sampler("random", seed=4))
    assert summary.finished == 8 and summary.best is not None
    assert all("outcome" in t.user_attrs for t in summary.study.get_trials())
