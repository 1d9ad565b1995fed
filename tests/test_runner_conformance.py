"""The runner conformance kit against every builder x device pool pair that runs on a CPU
(synthetic evaluator in isolated processes, Ray with logical GPUs, a replayed table, none), and
against the registered `simulated` runner."""

import pytest

from autotune.runner import (InlineBuilder, NoDevices, ProcessBuilder, Provenance, RecordedTable,
                             ReplayDevices, RunnerOptions, Scheduler, WorkerPool, make_runner)
from autotune.testing.runner_conformance import PROBLEM, RunnerConformance
from autotune.testing.synthetic import SyntheticEvaluator, stub_compile

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module", autouse=True)
def ray_cluster():
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _builder(name):
    if name == "inline":
        return InlineBuilder(stub_compile)
    if name == "process":
        return ProcessBuilder(stub_compile, 2)
    from autotune.runner.ray_sides import RayBuilder

    return RayBuilder(stub_compile)


def _pool(name, space):
    if name == "local":
        return WorkerPool(SyntheticEvaluator(), [0, 1], Provenance("measured"))
    if name == "ray":
        from autotune.runner.ray_sides import RayDevices

        return RayDevices(SyntheticEvaluator())
    if name == "replay":
        return ReplayDevices(RecordedTable.from_frame(space.recorded_frame(PROBLEM)), 2)
    return NoDevices()


def _pair(builder_name, pool_name):
    def make_runner(self, space, timeout_s, compile_timeout_s):
        builder = _builder(builder_name)
        try:
            pool = _pool(pool_name, space)
        except Exception:
            builder.close()
            raise
        return Scheduler(builder, pool, timeout_s=timeout_s, compile_timeout_s=compile_timeout_s)

    name = f"Test{builder_name.title()}Builder{pool_name.title()}Pool"
    return name, type(name, (RunnerConformance,), {"make_runner": make_runner})


for _b in ("inline", "process", "ray"):
    for _p in ("local", "ray", "replay", "none"):
        _name, _cls = _pair(_b, _p)
        globals()[_name] = _cls


class TestRegisteredSimulatedRunner(RunnerConformance):
    replays_compiles = True  # it compiles nothing: the table holds compile failures too

    @pytest.fixture(autouse=True)
    def _table(self, tmp_path):
        self.table = tmp_path / "table.csv"

    def make_runner(self, space, timeout_s, compile_timeout_s):
        space.recorded_frame(PROBLEM).to_csv(self.table, index=False)
        return make_runner("simulated", space, RunnerOptions(table=str(self.table)))
