"""The numsim runner (autotune/runner/numsim.py): candidates validated in a simulator, never
timed. Its device pool passes the runner conformance kit with the synthetic space's stand-in
for NumSim; the registered factory refuses what it cannot validate; studies of it hold
"validated" trials that the config store never takes as times; the command line picks it where
no GPU of an sm_100a space's arch is present. NumSim itself runs in test_numsim_runner_e2e.py."""

import argparse

import optuna
import pytest
from optuna.trial import TrialState

from autotune import cli
from autotune.errors import UserError
from autotune.runner import InlineBuilder, ProcessBuilder, RunnerOptions, Scheduler, make_runner
from autotune.runner import numsim as numsim_runner
from autotune.runner.base import Candidate, Cause, Job, Result
from autotune.spaces.gemm_sm100 import GemmSm100Space
from autotune.spaces.gemm_sm90 import GemmSm90Space
from autotune.store.compat import Gpu
from autotune.store.export import store_from_studies
from autotune.study.driver import tune_problem
from autotune.testing.runner_conformance import GOOD, FAULTY, PROBLEM, SPACE, RunnerConformance
from autotune.testing.synthetic import SyntheticSpace, simulated_validate, stub_compile
from tirx import numsim
from tirx.numsim import Verdict


class TestProcessBuilderSimulatorPool(RunnerConformance):
    def make_runner(self, space, timeout_s, compile_timeout_s):
        builder = ProcessBuilder(stub_compile, 2)
        pool = numsim_runner.simulator_pool(simulated_validate, workers=2)
        return Scheduler(builder, pool, timeout_s=timeout_s, compile_timeout_s=compile_timeout_s)


@pytest.mark.parametrize("verdict, cause", [
    (Verdict(error=1e-3, tolerance=2e-2), None),
    (Verdict(error=0.5, tolerance=2e-2), Cause.VALIDATION),
    (Verdict(failure="deadlock: every warp waits on an mbarrier"), Cause.VALIDATION),
    (Verdict(skipped="no Rust toolchain"), Cause.ERROR),
])
def test_a_verdict_becomes_an_untimed_result(verdict, cause):
    result = numsim_runner.result_of(verdict, tag=7)
    assert (result.tag, result.cause, result.timing) == (7, cause, None)
    assert result.message == ("" if cause is None else str(verdict))


def _options(**kw):
    return RunnerOptions(compile_workers=0, compiler=stub_compile, **kw)


def test_the_registered_runner_validates_and_says_so(monkeypatch):
    monkeypatch.setattr(numsim, "unavailable_reason", lambda: None)
    with make_runner("numsim", GemmSm100Space(), _options(timeout_s=60)) as runner:
        assert (runner.mode, runner.provenance.kind, runner.timed) == ("numsim", "validated", False)
        assert runner.provenance.detail["simulator"].startswith("tirx-harness ")
        # The first simulated candidate builds NumSim's engine: the limit never goes below it.
        assert runner.timeout_s == numsim_runner.SIMULATION_TIMEOUT_S


def test_refused_for_a_space_it_cannot_simulate():
    with pytest.raises(UserError, match="gemm_sm90 has no simulated validation"):
        make_runner("numsim", GemmSm90Space(), _options())


def test_refused_where_numsim_cannot_run(monkeypatch):
    monkeypatch.setattr(numsim, "unavailable_reason", lambda: "no Rust toolchain: cargo not on PATH")
    with pytest.raises(UserError, match="NumSim cannot run here: no Rust toolchain"):
        make_runner("numsim", GemmSm100Space(), _options())


def test_validated_studies_hold_no_times_and_the_store_takes_none(tmp_path):
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'v.db'}")
    runner = Scheduler(InlineBuilder(stub_compile), numsim_runner.simulator_pool(simulated_validate),
                       timeout_s=30)
    space = SyntheticSpace(faults={"wrong": [FAULTY["wrong"]]})
    sampler = optuna.samplers.RandomSampler(seed=0)
    with runner:
        summary = tune_problem(space, PROBLEM, runner, storage=storage, trials=4, sampler=sampler)
    study = summary.study
    assert study.study_name.endswith("/validated")
    assert study.user_attrs["timed"] is False and study.user_attrs["provenance"]["kind"] == "validated"
    trials = [t for t in study.trials if t.state.is_finished()]
    assert trials and not [t for t in trials if t.state == TrialState.COMPLETE]
    passed = [t for t in trials if t.user_attrs.get("outcome") == "validated"]
    assert passed and all(t.state == TrialState.PRUNED and t.value is None
                          and "time_ms" not in t.user_attrs and t.user_attrs["rel_error"] < 1e-5
                          for t in passed)
    assert summary.best is None and summary.outcomes["validated"] == len(passed)
    store = store_from_studies(storage, space, Gpu(arch=space.arch, device="NVIDIA H100"))
    assert store.entries == {}


def test_a_wrong_kernel_fails_its_trial_with_the_validation_cause(tmp_path):
    runner = Scheduler(InlineBuilder(stub_compile), numsim_runner.simulator_pool(simulated_validate),
                       timeout_s=30)
    with runner:
        (result,) = runner.run([Candidate(SPACE, FAULTY["wrong"], PROBLEM)])
        (good,) = runner.run([Candidate(SPACE, GOOD, PROBLEM)])
    assert result.cause is Cause.VALIDATION and "relative error" in result.message
    assert good.ok and good.timing is None and good.device.startswith("NumSim")


def _args(**kw):
    base = dict(simulate=None, compile_only=False, ray=None, runner=None)
    return argparse.Namespace(**{**base, **kw})


@pytest.mark.parametrize("space, reason, picked", [
    (GemmSm100Space(), None, "numsim"),
    (GemmSm100Space(), "tirx-harness is not installed", "compile-only"),
    (GemmSm90Space(), None, "compile-only"),
])
def test_with_no_gpu_of_the_arch_the_cli_validates_in_numsim_where_it_can(
        space, reason, picked, monkeypatch, capsys):
    monkeypatch.setattr("autotune.runner.devices.visible_gpus", lambda: [])
    monkeypatch.setattr(numsim, "unavailable_reason", lambda: reason)
    assert cli._runner_name(_args(), space) == picked
    err = capsys.readouterr().err
    assert ("SIMULATED VALIDATION" in err) == (picked == "numsim")
    assert "none is timed" in err


def test_an_explicit_runner_is_kept(monkeypatch):
    monkeypatch.setattr("autotune.runner.devices.visible_gpus", lambda: [])
    assert cli._runner_name(_args(runner="numsim"), GemmSm100Space()) == "numsim"
    assert cli._runner_name(_args(compile_only=True), GemmSm100Space()) == "compile-only"


def test_a_validator_that_raises_fails_the_candidate_not_the_runner():
    def broken(space, config, problem, seed):
        raise ValueError("proxy shape breaks a rule")

    result = numsim_runner.SimulatedValidator(broken).evaluate(
        Job(Candidate(SPACE, GOOD, PROBLEM), None, 0))
    assert isinstance(result, Result) and result.cause is Cause.ERROR
    assert "proxy shape breaks a rule" in result.message
