"""Runners on the CPU: validation, compile classification, and isolation of hanging or crashing
candidates (synthetic evaluator in real worker processes)."""

import math
import multiprocessing.connection
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from autotune.runner import (Candidate, Cause, InlineBuilder, NoDevices, ProcessBuilder,
                             Provenance, RecordedTable, ReplayDevices, Scheduler, WorkerPool,
                             compile_candidate, compile_nothing)
from autotune.runner.protocol import input_sets_needed
from autotune.runner.timing import interleaved
from autotune.runner.validate import check_outputs, poison
from autotune.testing.synthetic import SyntheticEvaluator, SyntheticSpace, stub_compile

GOOD = {"block_m": 64, "block_n": 32, "stages": 3}
SPACE = SyntheticSpace(faults={
    "hang": [{"block_m": 32, "block_n": 128}], "crash": [{"block_m": 16, "block_n": 64}],
    "cuda_error": [{"block_m": 32, "block_n": 16}], "wrong": [{"block_n": 16, "stages": 4}],
    "unwritten": [{"block_m": 64, "block_n": 16}], "compile": [{"block_m": 128, "stages": 1}],
    "resources": [{"block_m": 128, "stages": 2}],
})
PROBLEM = SPACE.parse_problem("128x48x32")


def cand(**config):
    return Candidate(SPACE, config, PROBLEM)


def local(devices=(0,), builder=None, timeout_s=2.0):
    """Synthetic 'GPUs' in isolated worker processes."""
    pool = WorkerPool(SyntheticEvaluator(), list(devices), Provenance("measured"))
    return Scheduler(builder or InlineBuilder(stub_compile), pool, timeout_s=timeout_s)


def test_poisoned_unwritten_output_fails_validation():
    ref = np.ones((4, 4), np.float32)
    out = np.zeros((4, 4), np.float32)
    poison([out])
    out[:2] = 1.0  # the kernel wrote only half
    errors, message = check_outputs([out], [ref], 1e-3)
    assert math.isinf(errors[0]) and "NaN" in message
    out[2:] = 1.0
    assert check_outputs([out], [ref], 1e-3) == ([0.0], None)
    out[0, 0] = 2.0
    errors, message = check_outputs([out], [ref], 1e-3)
    assert errors[0] == pytest.approx(0.25) and "exceeds" in message


def test_input_rotation_exceeds_l2():
    l2 = 50 << 20
    assert input_sets_needed(1 << 20, l2) == 64  # capped
    n = input_sets_needed(30 << 20, l2)
    assert n * (30 << 20) >= 2 * l2 and (n - 1) * (30 << 20) < 2 * l2
    assert input_sets_needed(400 << 20, l2) == 1


def test_compile_errors_are_classified():
    assert compile_candidate(stub_compile, cand(**GOOD)).resources["smem_bytes"] == 36864
    failed = compile_candidate(stub_compile, cand(block_m=128, block_n=16, stages=1))
    assert failed.cause is Cause.COMPILE and "wgmma_fake" in failed.message
    failed = compile_candidate(stub_compile, cand(block_m=128, block_n=16, stages=2))
    assert failed.cause is Cause.RESOURCES


def test_local_runner_survives_hangs_and_crashes():
    candidates = [cand(block_m=32, block_n=128, stages=2),  # hangs
                  cand(**GOOD),
                  cand(block_m=16, block_n=64, stages=2),  # segfaults
                  cand(block_m=32, block_n=16, stages=2),  # CUDA error: context poisoned
                  cand(block_m=64, block_n=16, stages=2),  # leaves half its output unwritten
                  cand(block_m=16, block_n=16, stages=4),  # wrong values
                  cand(block_m=128, block_n=16, stages=1),  # compile error
                  cand(**GOOD)]
    with local(builder=ProcessBuilder(stub_compile, 1)) as runner:
        results = runner.run(candidates)
        restarts = runner.pool.restarts
    causes = [r.cause for r in results]
    assert causes == [Cause.TIMEOUT, None, Cause.CRASH, Cause.CUDA_ERROR, Cause.VALIDATION,
                      Cause.VALIDATION, Cause.COMPILE, None]
    assert "SIGSEGV" in results[2].message and "unwritten" in results[4].message
    assert results[1].time_ms == results[7].time_ms == SPACE.model_time_ms(GOOD)
    assert results[1].resources["smem_bytes"] == 36864
    assert restarts == 3  # hang, crash, CUDA error; nothing else restarts the worker


def test_local_runner_uses_every_gpu():
    with local([0, 1], timeout_s=5.0) as runner:
        assert runner.slots == 5  # two devices two deep, and the in-process builder
        runner.submit(Candidate(SPACE, GOOD, PROBLEM, tag="a"))
        runner.submit(Candidate(SPACE, dict(GOOD, stages=2), PROBLEM, tag="b"))
        assert runner.pool.busy == 0  # dispatched on collect
        runner._pump()
        runner._harvest()
        runner._pump()
        assert all(w.busy for w in runner.pool.workers)  # one each, not two on one
        tags = set()
        while runner.in_flight:
            tags |= {r.tag for r in runner.collect()}
    assert tags == {"a", "b"}


class SlowEvaluator(SyntheticEvaluator):
    """Takes `seconds` per job."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def evaluate(self, job):
        time.sleep(self.seconds)
        return super().evaluate(job)


def test_a_queued_job_runs_as_the_last_ends_and_its_deadline_counts_from_then():
    # Two jobs of 0.6 s each given to one device at once, a 1 s deadline: the second finished
    # 1.2 s after it was given, yet was not killed - it waited, then ran for 0.6 s.
    pool = WorkerPool(SlowEvaluator(0.6), [0], Provenance("measured"))
    with Scheduler(InlineBuilder(stub_compile), pool, timeout_s=1.0) as runner:
        results = runner.run([cand(**GOOD), cand(**dict(GOOD, stages=2))])
        assert [r.cause for r in results] == [None, None] and pool.restarts == 0
        assert 0.5 < runner.device_s < 0.8  # the time on the device, not the wait


def test_jobs_queued_behind_a_hang_or_a_crash_are_not_lost():
    with local(timeout_s=2.0) as runner:
        runner.submit(Candidate(SPACE, {"block_m": 32, "block_n": 128, "stages": 2}, PROBLEM,
                                tag="hang"))
        runner.submit(Candidate(SPACE, GOOD, PROBLEM, tag="behind the hang"))
        runner.submit(Candidate(SPACE, {"block_m": 16, "block_n": 64, "stages": 2}, PROBLEM,
                                tag="crash"))
        runner.submit(Candidate(SPACE, dict(GOOD, stages=2), PROBLEM, tag="behind the crash"))
        results = {}
        while runner.in_flight:
            results |= {r.tag: r.cause for r in runner.collect()}
        assert runner.pool.restarts == 2
    assert results == {"hang": Cause.TIMEOUT, "behind the hang": None, "crash": Cause.CRASH,
                       "behind the crash": None}


def test_a_job_given_to_a_worker_that_just_died_runs_after_the_restart():
    from autotune.runner.base import Compiled, Job
    from autotune.runner.isolation import IsolatedWorker

    def job(config):
        return Job(cand(**config), Compiled(None), seed=0)

    evaluator = SyntheticEvaluator()
    worker = IsolatedWorker(evaluator.evaluate, evaluator.setup)
    try:
        worker.submit(job({"block_m": 16, "block_n": 64, "stages": 2}))  # segfaults
        worker._process.join(10)
        worker.submit(job(GOOD))  # its pipe is broken: kept for the restarted process
        finished, crash = worker.poll()
        assert finished and crash.cause is Cause.CRASH and worker.restarts == 1
        multiprocessing.connection.wait([worker.connection], timeout=10)
        finished, good = worker.poll()
        assert finished and good.ok and good.time_ms == SPACE.model_time_ms(GOOD)
    finally:
        worker.close()


def test_compile_slots_follow_compile_and_device_times():
    with local(builder=ProcessBuilder(stub_compile, 4)) as runner:
        assert runner.compile_slots == 4  # nothing seen yet: every compile slot
        runner.compile_s, runner.device_s = 0.1, 0.25  # a warm compile cache
        assert runner.compile_slots == 2 and runner.slots == 4  # 1 x 0.1 / 0.25, and one more
        runner.compile_s = 5.0  # a cold one: every compile slot again
        assert runner.compile_slots == 4 and runner.slots == 6


def test_compile_only_runner_reports_resources_and_no_time():
    with Scheduler(InlineBuilder(stub_compile), NoDevices()) as runner:
        assert runner.timed is False
        ok, bad = runner.run([cand(**GOOD), cand(block_m=128, block_n=16, stages=2)])
    assert ok.ok and ok.timing is None and ok.resources["smem_bytes"] == 36864
    assert bad.cause is Cause.RESOURCES


def test_simulated_runner_replays_table(tmp_path):
    path = tmp_path / "table.csv"
    SPACE.recorded_frame(PROBLEM).to_csv(path, index=False)
    table = RecordedTable.from_csv(str(path))
    runner = Scheduler(InlineBuilder(compile_nothing), ReplayDevices(table))
    good, hang, missing = runner.run([cand(**GOOD), cand(block_m=32, block_n=128, stages=2),
                                      cand(block_m=128, block_n=128, stages=4)])
    assert good.time_ms == pytest.approx(SPACE.model_time_ms(GOOD))
    assert hang.cause is Cause.TIMEOUT
    assert missing.cause is Cause.NOT_RECORDED  # illegal configs are not in the table
    assert runner.pool.measured[0] == GOOD
    assert runner.provenance.kind == "replayed" and runner.timed


class AddedKnobSpace(SyntheticSpace):
    """A space that gained `swizzle` after the recording: every recorded config ran it off."""

    added_knobs = {"swizzle": False}


def test_a_knob_added_after_the_recording_replays_only_at_its_earlier_value():
    space = AddedKnobSpace()
    table = RecordedTable.from_frame(space.recorded_frame(PROBLEM))
    runner = Scheduler(InlineBuilder(compile_nothing), ReplayDevices(table))
    off, on = runner.run([Candidate(space, dict(GOOD, swizzle=False), PROBLEM),
                          Candidate(space, dict(GOOD, swizzle=True), PROBLEM)])
    assert off.time_ms == pytest.approx(SPACE.model_time_ms(GOOD))
    assert on.cause is Cause.NOT_RECORDED


class RuntimeStagesSpace(SyntheticSpace):
    """`stages` passed at launch: configs differing only in it share one binary."""

    runtime_knobs = ("stages",)


def test_configs_differing_in_runtime_knobs_compile_once():
    space = RuntimeStagesSpace(faults={"compile": [{"block_m": 128}]})
    compiled = []

    def counting(space, config, problem, cache_dir=None):
        compiled.append(dict(config))
        return stub_compile(space, config, problem, cache_dir)

    bad = {"block_m": 128, "block_n": 16}
    candidates = ([Candidate(space, dict(GOOD, stages=s), PROBLEM) for s in (1, 2, 3)]
                  + [Candidate(space, dict(bad, stages=s), PROBLEM) for s in (1, 2)])
    with Scheduler(InlineBuilder(counting), NoDevices()) as runner:
        results = runner.run(candidates)
    assert compiled == [dict(GOOD, stages=1), dict(bad, stages=1)]  # one compile per class
    assert [r.cause for r in results] == [None] * 3 + [Cause.COMPILE] * 2
    assert [r.tag for r in results] == list(range(5))  # a reused outcome answers its own tag
    assert results[1].compile_s == 0.0 and results[1].resources == results[0].resources


def test_interleaved_rounds_time_everything_once_per_round_in_rotated_order():
    calls = []
    out = interleaved({n: (lambda n=n: calls.append(n) or len(calls)) for n in "abc"}, rounds=3)
    assert calls == list("abc" "bca" "cab")
    assert out == {"a": [1, 6, 8], "b": [2, 4, 9], "c": [3, 5, 7]}


_DRIVER_WITH_WORKERS = """
import time
from autotune.runner import Candidate, ProcessBuilder, Provenance, Scheduler, WorkerPool
from autotune.testing.synthetic import SyntheticEvaluator, SyntheticSpace, stub_compile
space = SyntheticSpace(faults={"hang": [{"block_m": 32}]})
runner = Scheduler(ProcessBuilder(stub_compile, 2),
                   WorkerPool(SyntheticEvaluator(), [0, 1], Provenance("measured")), timeout_s=600)
runner.submit(Candidate(space, {"block_m": 32, "block_n": 16, "stages": 1},
                        space.parse_problem("128x48x32")))
runner.collect(timeout=1)  # compiled; a device worker now hangs in it
print("ready", flush=True)
time.sleep(600)
"""


def _alive_descendants(pid: int) -> set[int]:
    """Processes below `pid` (by /proc's parent links) that are not zombies."""
    parents, states = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            states[int(entry)], parents[int(entry)] = fields[0], int(fields[1])
    out, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - out
        out |= frontier
    return {p for p in out if states.get(p) != "Z"}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_driver_leaves_no_processes():
    proc = subprocess.Popen([sys.executable, "-c", _DRIVER_WITH_WORKERS], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        workers = _alive_descendants(proc.pid)
        assert len(workers) >= 4  # two compile and two device workers (and mp's tracker)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and {p for p in workers if os.path.exists(f"/proc/{p}")
                                           and _alive_descendants(1) & {p}}:
        time.sleep(0.2)
    left = {p for p in workers if p in _alive_descendants(1)}
    assert not left, f"left behind: {left}"


class RuntimeMSpace(SyntheticSpace):
    runtime_fields = ("M",)


def test_problems_differing_in_runtime_fields_compile_once():
    space = RuntimeMSpace()
    compiled = []

    def counting(space, config, problem, cache_dir=None):
        compiled.append(problem.key)
        return stub_compile(space, config, problem, cache_dir)

    problems = [space.parse_problem(f"{m}x48x32") for m in (64, 128, 256)]
    with Scheduler(InlineBuilder(counting), NoDevices()) as runner:
        results = runner.run([Candidate(space, GOOD, p) for p in problems])
    assert [r.cause for r in results] == [None] * 3 and len(compiled) == 1
