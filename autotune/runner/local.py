"""Runners on this machine: compile on a pool of CPU worker processes, then validate and time on
one isolated worker process per GPU. With no GPU, `CompileOnlyRunner` stops after the compile
(and its resource check) and reports what it compiled, untimed."""

from __future__ import annotations

import collections
import concurrent.futures as cf
import multiprocessing
import multiprocessing.connection
import os
import random
import time
from concurrent.futures.process import BrokenProcessPool

from .base import Candidate, Cause, Compiled, Evaluator, Job, Result, Runner
from .compile import CompileMemo, Compiler, compile_candidate, compile_with_tirx
from .worker import WorkerProcess


def default_compile_workers() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


class _CompilePipeline(Runner):
    """Compiles submitted candidates in parallel; subclasses decide what follows a compile."""

    def __init__(self, *, compiler: Compiler = compile_with_tirx, compile_workers: int | None = None,
                 cache_dir: str | None = None):
        self.compiler, self.cache_dir = compiler, cache_dir
        self.compile_workers = default_compile_workers() if compile_workers is None else compile_workers
        self._pool = self._new_pool()
        self._compiling: dict[cf.Future, Candidate] = {}
        self._retried: set = set()  # tags resubmitted once after the compile pool broke
        self._done: list[Result] = []
        self._memo = CompileMemo()

    def _new_pool(self):
        # 0 workers: compile inline in this process (cheap stub compilers, tests).
        if self.compile_workers == 0:
            return None
        return cf.ProcessPoolExecutor(self.compile_workers,
                                      mp_context=multiprocessing.get_context("spawn"))

    def submit(self, candidate: Candidate) -> None:
        known = self._memo.get(candidate)
        if known is not None:  # same binary as a finished compile (runtime knobs differ)
            self._compiled(candidate, known)
            return
        if self._pool is None:
            self._finish(candidate, compile_candidate(self.compiler, candidate, self.cache_dir))
            return
        future = self._pool.submit(compile_candidate, self.compiler, candidate, self.cache_dir)
        self._compiling[future] = candidate

    def _harvest_compiles(self, wait_s: float) -> None:
        if not self._compiling:
            return
        finished, _ = cf.wait(self._compiling, timeout=wait_s, return_when=cf.FIRST_COMPLETED)
        broken = []
        for future in finished:
            candidate = self._compiling.pop(future)
            try:
                outcome = future.result()
            except BrokenProcessPool:
                broken.append(candidate)
                continue
            self._finish(candidate, outcome)
        if broken:
            # A compiler process died (e.g. a segfault in lowering). Every compile in the pool
            # fails with it, so retry each once in a fresh pool; a second death is the culprit's.
            self._pool.shutdown(wait=False, cancel_futures=True)
            for candidate in list(self._compiling.values()):
                broken.append(candidate)
            self._compiling.clear()
            self._pool = self._new_pool()
            for candidate in broken:
                if candidate.tag in self._retried:
                    self._done.append(Result(candidate.tag, Cause.CRASH, "compiler process died"))
                else:
                    self._retried.add(candidate.tag)
                    self.submit(candidate)

    def _finish(self, candidate: Candidate, outcome: Compiled | Result) -> None:
        self._memo.put(candidate, outcome)
        self._compiled(candidate, outcome)

    def _compiled(self, candidate: Candidate, outcome: Compiled | Result) -> None:
        raise NotImplementedError

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class CompileOnlyRunner(_CompilePipeline):
    """For a space whose GPU is not present: legality, compile and resource check; never timed.

    A success is a Result with no cause and no timing, carrying the resource report."""

    mode = "compile-only"
    timed = False

    @property
    def slots(self) -> int:
        return max(1, self.compile_workers)

    @property
    def in_flight(self) -> int:
        return len(self._compiling) + len(self._done)

    def _compiled(self, candidate, outcome):
        if isinstance(outcome, Compiled):
            outcome = Result(candidate.tag, resources=outcome.resources, compile_s=outcome.compile_s)
        self._done.append(outcome)

    def collect(self, timeout: float | None = None) -> list[Result]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._done and self._compiling:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            self._harvest_compiles(left)
        done, self._done = self._done, []
        return done


class LocalRunner(_CompilePipeline):
    """Compile on CPU workers, then validate and time on one isolated worker per GPU."""

    mode = "local"

    def __init__(self, devices=(0,), *, evaluator: Evaluator | None = None,
                 compiler: Compiler = compile_with_tirx, compile_workers: int | None = None,
                 timeout_s: float = 60.0, cache_dir: str | None = None, seed: int | None = None):
        super().__init__(compiler=compiler, compile_workers=compile_workers, cache_dir=cache_dir)
        if evaluator is None:
            from .cuda_eval import CudaEvaluator

            evaluator = CudaEvaluator()
        self.timer = getattr(evaluator, "timer", self.timer)
        self._ready: collections.deque[tuple[Candidate, Compiled]] = collections.deque()
        self._rng = random.Random(seed)
        self.workers: list[WorkerProcess] = []
        try:
            for device in devices:
                self.workers.append(WorkerProcess(evaluator, device, timeout_s))
        except Exception:
            self.close()
            raise

    @property
    def slots(self) -> int:
        # Keep the compile pool busy while the GPUs measure: compiles take longer than timing.
        return len(self.workers) + self.compile_workers

    @property
    def in_flight(self) -> int:
        return (len(self._compiling) + len(self._ready) + len(self._done)
                + sum(w.busy for w in self.workers))

    def _compiled(self, candidate, outcome):
        if isinstance(outcome, Result):
            self._done.append(outcome)
        else:
            self._ready.append((candidate, outcome))

    def _dispatch(self) -> None:
        for worker in self.workers:
            if not self._ready:
                return
            if not worker.busy:
                candidate, compiled = self._ready.popleft()
                worker.submit(Job(candidate, compiled, seed=self._rng.randrange(2**31)))

    def _poll_workers(self) -> None:
        for worker in self.workers:
            result = worker.poll()
            if result is not None:
                self._done.append(result)

    def collect(self, timeout: float | None = None) -> list[Result]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._harvest_compiles(0)
            self._dispatch()
            self._poll_workers()
            self._dispatch()
            left = None if deadline is None else deadline - time.monotonic()
            if self._done or not self.in_flight or (left is not None and left <= 0):
                break
            busy = [w for w in self.workers if w.busy]
            wait_s = min([0.05 if self._compiling else 1.0] + [w.time_left() for w in busy]
                         + ([left] if left is not None else []))
            if busy:
                multiprocessing.connection.wait([w.connection for w in busy], timeout=wait_s)
            else:
                self._harvest_compiles(wait_s)
        done, self._done = self._done, []
        return done

    def close(self) -> None:
        for worker in self.workers:
            worker.close()
        self.workers = []
        super().close()
