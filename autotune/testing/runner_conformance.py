"""Conformance kit for runners (a builder and a device pool under the scheduler, or any Runner).
A runner author subclasses `RunnerConformance` in a pytest module and defines `make_runner`:

    from autotune.testing.runner_conformance import RunnerConformance

    class TestMyRunner(RunnerConformance):
        def make_runner(self, space, timeout_s, compile_timeout_s):
            return Scheduler(ProcessBuilder(stub_compile, 2),
                             MyDevices(SyntheticEvaluator()), timeout_s=timeout_s,
                             compile_timeout_s=compile_timeout_s)

Candidates come from the CPU-only synthetic space (autotune.testing.synthetic), its faults
injected per config; a runner replaying a table gets the space's recorded table. What each
result must say depends on the runner's provenance: a measuring, replaying or validating (in a
simulator) runner reports every fault's cause, a compile-only one only the compiler's."""

from __future__ import annotations

import multiprocessing

import pytest

from ..runner.base import Candidate, Cause, Provenance, Runner
from .synthetic import SyntheticSpace

GOOD = {"block_m": 64, "block_n": 32, "stages": 3}
FAULTY = {"hang": {"block_m": 32, "block_n": 128, "stages": 2},
          "crash": {"block_m": 16, "block_n": 64, "stages": 2},
          "cuda_error": {"block_m": 32, "block_n": 16, "stages": 2},
          "wrong": {"block_m": 16, "block_n": 16, "stages": 4},
          "compile": {"block_m": 128, "block_n": 16, "stages": 1},
          "resources": {"block_m": 128, "block_n": 16, "stages": 2},
          "compile_hang": {"block_m": 64, "block_n": 64, "stages": 1}}
SPACE = SyntheticSpace(faults={k: [v] for k, v in FAULTY.items()})
PROBLEM = SPACE.parse_problem("128x48x32")
# What each fault's result says, by the runner's provenance kind.
RUN_CAUSES = {"hang": Cause.TIMEOUT, "crash": Cause.CRASH, "cuda_error": Cause.CUDA_ERROR,
              "wrong": Cause.VALIDATION}
COMPILE_CAUSES = {"compile": Cause.COMPILE, "resources": Cause.RESOURCES,
                  "compile_hang": Cause.TIMEOUT}


class RuntimeStagesSpace(SyntheticSpace):
    """`stages` passed at launch: configs differing only in it share one binary."""

    runtime_knobs = ("stages",)


class RunnerConformance:
    # The hang test's limits, which it waits out: short, so that the kit stays quick.
    timeout_s: float = 3.0  # per candidate on a device
    compile_timeout_s: float = 3.0
    # Every other test's: no candidate there hangs, and a good one spawning workers on a loaded
    # machine went past 3 s (one CI-like core busy besides: 1 good compile in ~33 runs).
    patient_timeout_s: float = 60.0
    replays_compiles: bool = False  # it compiles nothing: its table holds compile failures

    def make_runner(self, space: SyntheticSpace, timeout_s: float,
                    compile_timeout_s: float) -> Runner:
        raise NotImplementedError

    def _runner(self, hangs: bool = False) -> Runner:
        if hangs:
            return self.make_runner(SPACE, self.timeout_s, self.compile_timeout_s)
        return self.make_runner(SPACE, self.patient_timeout_s, self.patient_timeout_s)

    def _expected(self, runner: Runner, fault: str) -> Cause | None:
        if fault in COMPILE_CAUSES:  # from the builder, or from the table of one that replays
            return COMPILE_CAUSES[fault]
        if runner.provenance.kind in ("measured", "replayed", "validated") \
                and fault in RUN_CAUSES:
            return RUN_CAUSES[fault]
        return None

    # -- the tests -----------------------------------------------------------------------------
    def test_identity(self):
        with self._runner() as runner:
            assert isinstance(runner.provenance, Provenance)
            assert runner.mode and runner.slots >= 1 and runner.in_flight == 0
            assert runner.timed == runner.provenance.timed

    def test_every_candidate_gets_its_result_and_cause(self):
        faults = [f for f in FAULTY if f not in ("hang", "compile_hang")]
        with self._runner() as runner:
            results = runner.run([Candidate(SPACE, GOOD, PROBLEM)]
                                 + [Candidate(SPACE, FAULTY[f], PROBLEM) for f in faults]
                                 + [Candidate(SPACE, dict(GOOD, stages=2), PROBLEM)])
            causes = [r.cause for r in results]
            expected = [None] + [self._expected(runner, f) for f in faults] + [None]
            assert causes == expected, [r.message for r in results]
            assert all(r.message for r in results if r.cause)
            if runner.timed:
                assert results[0].time_ms == pytest.approx(SPACE.model_time_ms(GOOD))
            else:
                assert results[0].timing is None

    def test_a_hang_on_either_side_costs_one_trial(self):
        with self._runner(hangs=True) as runner:
            builder = getattr(runner, "builder", None)
            if builder is not None and not builder.can_kill:
                pytest.skip(f"{builder.name} builder compiles in this process: cannot stop one")
            results = runner.run([Candidate(SPACE, FAULTY["compile_hang"], PROBLEM),
                                  Candidate(SPACE, FAULTY["hang"], PROBLEM),
                                  Candidate(SPACE, GOOD, PROBLEM)])
            assert [r.cause for r in results] == [
                self._expected(runner, "compile_hang"), self._expected(runner, "hang"), None]
            if results[0].cause is Cause.TIMEOUT and not self.replays_compiles:
                assert "compile" in results[0].message

    def test_runtime_knob_twins_share_one_compile(self):
        space = RuntimeStagesSpace()
        with self._runner() as runner:
            results = runner.run([Candidate(space, dict(GOOD, stages=s), PROBLEM)
                                  for s in (1, 2, 3)])
            assert [r.cause for r in results] == [None] * 3
            assert sorted(r.compile_s == 0.0 for r in results) == [False, True, True]

    def test_the_vendor_op_is_a_candidate_that_compiles_nothing(self):
        with self._runner() as runner:
            vendor, good = runner.run([Candidate(SPACE, {}, PROBLEM, vendor=True),
                                       Candidate(SPACE, GOOD, PROBLEM)])
            assert good.cause is None
            if runner.provenance.kind == "compile-only":
                assert vendor.cause is None and vendor.timing is None
            else:  # validated and timed like a kernel (a replayed table holds its time)
                assert vendor.cause is None, vendor.message
                assert vendor.compile_s == 0.0 and vendor.artifact is None
                if runner.timed:
                    assert vendor.time_ms == pytest.approx(SPACE.VENDOR_MS)

    def test_slots_fill_and_empty(self):
        with self._runner() as runner:
            n = runner.slots
            for i in range(n):
                runner.submit(Candidate(SPACE, dict(GOOD, stages=1 + i % 4), PROBLEM, tag=i))
            assert runner.in_flight == n
            tags = []
            while runner.in_flight:
                tags += [r.tag for r in runner.collect(timeout=30)]
            assert sorted(tags) == list(range(n))

    def test_close_leaves_no_worker_processes(self):
        before = {p.pid for p in multiprocessing.active_children()}
        runner = self._runner()
        runner.run([Candidate(SPACE, GOOD, PROBLEM)])
        runner.close()
        left = [p for p in multiprocessing.active_children() if p.pid not in before]
        assert not left, left
