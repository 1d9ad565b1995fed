"""On a GPU: a deadlocking kernel and an illegal-address kernel each cost one trial, never the
study. Needs TVM beside the GPU (candidates compile where they run)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tvm")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]

from autotune.runner import Candidate, Cause, RunnerOptions, make_runner  # noqa: E402

from faulty_space import FaultySpace  # noqa: E402

SPACE = FaultySpace()
PROBLEM = SPACE.parse_problem("4096")


def candidates(*behaviors):
    return [Candidate(SPACE, {"behavior": b}, PROBLEM) for b in behaviors]


def test_hang_and_fault_are_survived(tmp_path):
    options = RunnerOptions(devices=[0], timeout_s=15, compile_workers=1, cache_dir=str(tmp_path))
    with make_runner("local", SPACE, options) as runner:
        results = runner.run(candidates("ok", "hang", "ok", "fault", "ok"))
        restarts = runner.pool.restarts
    causes = [r.cause for r in results]
    assert causes[0] is None and causes[2] is None and causes[4] is None, results
    assert causes[1] is Cause.TIMEOUT
    assert causes[3] in (Cause.CUDA_ERROR, Cause.CRASH), results[3]
    assert restarts == 2
    # The good kernel measures the same after each restart: the worker came back healthy.
    assert all(r.time_ms and r.time_ms > 0 for r in (results[0], results[2], results[4]))


def test_ray_runner_survives_them_too(tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    options = RunnerOptions(devices=[0], timeout_s=15, cache_dir=str(tmp_path))
    with make_runner("ray", SPACE, options) as runner:
        results = runner.run(candidates("hang", "ok", "fault", "ok"))
    causes = [r.cause for r in results]
    assert causes[0] is Cause.TIMEOUT and causes[1] is None and causes[3] is None, results
    assert causes[2] in (Cause.CUDA_ERROR, Cause.CRASH), results[2]
    ray.shutdown()
