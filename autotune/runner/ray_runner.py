"""The Ray runner: every GPU of a Ray cluster. One actor per GPU (`num_gpus=1`, so Ray pins it to
its device) validates and times; compiles run as Ray tasks on CPU resources and ship the
artifact's bytes, so compile and GPU nodes need not share a disk. A hung actor is killed at the
hard timeout and a dead one replaced; the candidate fails with the cause."""

from __future__ import annotations

import collections
import dataclasses
import os
import random
import tempfile
import time

from ..errors import UserError
from .base import Candidate, Cause, Compiled, Evaluator, Job, Result, Runner
from .compile import CompileMemo, Compiler, compile_candidate, compile_with_tirx, unpack


class _GpuActor:
    """Body of the per-GPU actor (wrapped with ray.remote at runtime)."""

    def __init__(self, evaluator: Evaluator):
        self.evaluator = evaluator
        self.evaluator.setup(None)
        self.scratch = tempfile.mkdtemp(prefix="autotune-artifacts-")

    def ready(self) -> int:
        return os.getpid()

    def evaluate(self, job: Job) -> Result:
        compiled = unpack(job.compiled, os.path.join(self.scratch, str(job.candidate.tag)))
        return self.evaluator.evaluate(dataclasses.replace(job, compiled=compiled))


@dataclasses.dataclass
class _Running:
    actor_index: int
    candidate: Candidate
    compiled: Compiled
    deadline: float


class RayRunner(Runner):
    mode = "ray"

    def __init__(self, *, evaluator: Evaluator | None = None, compiler: Compiler = compile_with_tirx,
                 address: str | None = None, gpus: int | None = None, timeout_s: float = 60.0,
                 start_timeout_s: float = 300.0, cache_dir: str | None = None,
                 seed: int | None = None, init_kwargs: dict | None = None):
        import ray

        self._ray = ray
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     **(init_kwargs or {}))
        if evaluator is None:
            from .cuda_eval import CudaEvaluator

            evaluator = CudaEvaluator()
        self.timer = getattr(evaluator, "timer", self.timer)
        available = int(ray.cluster_resources().get("GPU", 0))
        n = available if gpus is None else gpus
        if n < 1 or n > available:
            self.close()
            raise UserError(f"the Ray cluster has {available} GPU(s); {n} requested")
        self.evaluator, self.compiler, self.cache_dir = evaluator, compiler, cache_dir
        self.timeout_s, self.start_timeout_s = timeout_s, start_timeout_s
        self._rng = random.Random(seed)
        self._compile = ray.remote(num_cpus=1, max_retries=1)(compile_candidate)
        # The actor's work is on its GPU: it claims no CPU, leaving every CPU to compile tasks.
        self._actor_class = ray.remote(num_gpus=1, num_cpus=0, max_restarts=0)(_GpuActor)
        self._actors = [self._new_actor() for _ in range(n)]
        self._idle = collections.deque(range(n))
        self._compiling: dict = {}  # ObjectRef -> Candidate
        self._ready: collections.deque[tuple[Candidate, Compiled]] = collections.deque()
        self._running: dict = {}  # ObjectRef -> _Running
        self._done: list[Result] = []
        self._memo = CompileMemo()
        self.restarts = 0

    def _new_actor(self):
        actor = self._actor_class.remote(self.evaluator)
        try:
            self._ray.get(actor.ready.remote(), timeout=self.start_timeout_s)
        except Exception as exc:
            self._ray.kill(actor)
            raise RuntimeError(f"a Ray GPU actor failed to start: {exc}") from exc
        return actor

    def _replace_actor(self, index: int) -> None:
        self._ray.kill(self._actors[index], no_restart=True)
        self._actors[index] = self._new_actor()
        self.restarts += 1

    @property
    def slots(self) -> int:
        return 2 * len(self._actors)  # compile the next candidate while the GPU measures one

    @property
    def in_flight(self) -> int:
        return len(self._compiling) + len(self._ready) + len(self._running)

    def submit(self, candidate: Candidate) -> None:
        known = self._memo.get(candidate)
        if known is not None:  # same binary as a finished compile (runtime knobs differ)
            self._take_compile(candidate, known)
            return
        ref = self._compile.remote(self.compiler, candidate, self.cache_dir, True)
        self._compiling[ref] = candidate

    def _dispatch(self) -> None:
        while self._ready and self._idle:
            candidate, compiled = self._ready.popleft()
            index = self._idle.popleft()
            job = Job(candidate, compiled, seed=self._rng.randrange(2**31))
            ref = self._actors[index].evaluate.remote(job)
            self._running[ref] = _Running(index, candidate, compiled, time.monotonic() + self.timeout_s)

    def _finish_compile(self, ref) -> None:
        candidate = self._compiling.pop(ref)
        try:
            outcome = self._ray.get(ref)
        except self._ray.exceptions.RayError as exc:
            self._done.append(Result(candidate.tag, Cause.CRASH, f"compile task died: {exc}"))
            return
        self._memo.put(candidate, outcome)
        self._take_compile(candidate, outcome)

    def _take_compile(self, candidate: Candidate, outcome: Compiled | Result) -> None:
        if isinstance(outcome, Result):
            self._done.append(outcome)
        else:
            self._ready.append((candidate, outcome))

    def _finish_run(self, ref) -> None:
        run = self._running.pop(ref)
        try:
            result = self._ray.get(ref)
        except self._ray.exceptions.RayActorError as exc:
            result = Result(run.candidate.tag, Cause.CRASH, f"GPU actor died: {type(exc).__name__}")
            self._replace_actor(run.actor_index)
        except self._ray.exceptions.RayTaskError as exc:
            result = Result(run.candidate.tag, Cause.ERROR, str(exc.cause if exc.cause else exc))
        else:
            if result.fatal:
                self._replace_actor(run.actor_index)
        result.resources = result.resources or run.compiled.resources
        result.compile_s = run.compiled.compile_s
        self._idle.append(run.actor_index)
        self._done.append(result)

    def _expire(self) -> None:
        now = time.monotonic()
        for ref, run in list(self._running.items()):
            if now > run.deadline:
                del self._running[ref]
                self._replace_actor(run.actor_index)
                self._idle.append(run.actor_index)
                self._done.append(Result(run.candidate.tag, Cause.TIMEOUT,
                                         f"no result within {self.timeout_s:g} s (hang or "
                                         "deadlock): actor killed", resources=run.compiled.resources))

    def collect(self, timeout: float | None = None) -> list[Result]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._dispatch()
            self._expire()
            left = None if deadline is None else deadline - time.monotonic()
            if self._done or not self.in_flight or (left is not None and left <= 0):
                break
            refs = list(self._compiling) + list(self._running)
            if refs:
                waits = [r.deadline - time.monotonic() for r in self._running.values()]
                wait_s = max(0.0, min([1.0] + waits + ([left] if left is not None else [])))
                ready, _ = self._ray.wait(refs, num_returns=1, timeout=wait_s)
                for ref in ready:
                    (self._finish_compile if ref in self._compiling else self._finish_run)(ref)
        done, self._done = self._done, []
        return done

    def close(self) -> None:
        for actor in getattr(self, "_actors", []):
            self._ray.kill(actor, no_restart=True)
        self._actors = []
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()
