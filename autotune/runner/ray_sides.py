"""Ray's builder and device pool: compiles as Ray tasks on the cluster's CPUs (shipping the
artifact's bytes back, so compile and GPU nodes need not share a disk), and one actor per GPU
(`num_gpus=1`: Ray pins it to its device) that validates and times, `depth` jobs given to it at
once (Ray runs an actor's calls in order: the next starts as the last ends, with no round trip
to the driver between them). An overdue compile task is cancelled (its worker process killed);
an overdue or dead actor is replaced, and the jobs queued on it go to its successor: behind a
hang as they were, after a crash each alone first (a job that finished just before the crash
may have lost its reply with the actor, so only one that dies alone is the crash)."""

from __future__ import annotations

import collections
import dataclasses
import os
import socket
import tempfile
import time

from .base import Candidate, Cause, Evaluator, Job, Provenance, Result
from .builders import CompileService
from .compile import Compiler, unpack
from .sides import DEVICE_DEPTH, Builder, DevicePool, Key


def _compile(service: CompileService, candidate: Candidate, pack: bool):
    return service((candidate, pack))


def _ready_refs(ray, refs: list) -> list:
    if not refs:
        return []
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
    return ready


class RayBuilder(Builder):
    """Compile tasks on the Ray cluster's CPUs, `workers` at once (default: every CPU)."""

    name = "ray"

    def __init__(self, compiler: Compiler, workers: int | None = None,
                 cache_dir: str | None = None):
        import ray

        self._ray = ray
        self._slots = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.service = CompileService(compiler, cache_dir)
        self._task = ray.remote(num_cpus=1, max_retries=0)(_compile)
        self._refs: dict = {}  # ObjectRef -> key

    slots = property(lambda self: self._slots)
    busy = property(lambda self: len(self._refs))

    def start(self, key: Key, candidate: Candidate, pack: bool) -> None:
        self._refs[self._task.remote(self.service, candidate, True)] = key

    def harvest(self):
        out = []
        for ref in _ready_refs(self._ray, list(self._refs)):
            key = self._refs.pop(ref)
            try:
                out.append((key, self._ray.get(ref)))
            except self._ray.exceptions.RayError as exc:  # compile_candidate never raises
                out.append((key, Result(None, Cause.CRASH, f"compile task died: {exc}")))
        return out

    def kill(self, key: Key) -> None:
        ref = next(r for r, k in self._refs.items() if k == key)
        del self._refs[ref]
        self._ray.cancel(ref, force=True)

    def wait_handles(self):
        return "ray", list(self._refs)


class _DeviceActor:
    """Body of the per-GPU actor (wrapped with ray.remote at run time)."""

    def __init__(self, evaluator: Evaluator):
        self.evaluator = evaluator
        self.evaluator.setup(None)
        self.scratch = tempfile.mkdtemp(prefix="autotune-artifacts-")
        self.jobs = 0

    def ready(self) -> str | None:
        """The name of the GPU Ray gave this actor (None for a logical GPU)."""
        from .devices import visible_gpus

        gpus = visible_gpus()
        return gpus[0].name if gpus else None

    def evaluate(self, job: Job) -> Result:
        self.jobs += 1
        compiled = unpack(job.compiled, os.path.join(self.scratch, str(self.jobs)))
        return self.evaluator.evaluate(dataclasses.replace(job, compiled=compiled))


class RayDevices(DevicePool):
    """One actor per GPU of the cluster (`gpus` of them; default all), `depth` jobs each."""

    name = "ray"
    needs_files = True

    def __init__(self, evaluator: Evaluator, gpus: int | None = None,
                 start_timeout_s: float = 300.0, runner: str = "ray", depth: int = DEVICE_DEPTH):
        import ray

        from ..errors import UserError

        self._ray = ray
        available = int(ray.cluster_resources().get("GPU", 0))
        n = available if gpus is None else gpus
        if n < 1 or n > available:
            raise UserError(f"the Ray cluster has {available} GPU(s); {n} requested")
        self.evaluator, self.start_timeout_s, self.depth = evaluator, start_timeout_s, depth
        self.timer = getattr(evaluator, "timer", self.timer)
        # The actor's work is on its GPU: it claims no CPU, leaving every CPU to compile tasks.
        self._actor_class = ray.remote(num_gpus=1, num_cpus=0, max_restarts=0)(_DeviceActor)
        self.names: list[str | None] = []
        self._actors = []
        try:
            for _ in range(n):
                actor, name = self._new_actor()
                self._actors.append(actor)
                self.names.append(name)
        except Exception:
            self.close()
            raise
        self._runner = runner
        self._refs: dict = {}  # ObjectRef -> (key, actor index, job), in the order sent
        self._waiting: collections.deque = collections.deque()  # (key, job) for an actor
        self._suspects: set[Key] = set()  # died beside others: each runs alone until it returns
        self._began: dict[int, float] = {}  # actor index -> when its first job began
        self.restarts = 0

    @property
    def provenance(self) -> Provenance:
        return Provenance("measured", {"runner": self._runner, "timer": self.timer,
                                       "devices": sorted({n or "logical GPU" for n in self.names}),
                                       "host": socket.gethostname()})

    slots = property(lambda self: len(self._actors) * self.depth)
    busy = property(lambda self: len(self._refs) + len(self._waiting))

    def _new_actor(self):
        actor = self._actor_class.remote(self.evaluator)
        try:
            return actor, self._ray.get(actor.ready.remote(), timeout=self.start_timeout_s)
        except Exception as exc:
            self._ray.kill(actor)
            raise RuntimeError(f"a Ray device actor failed to start: {exc}") from exc

    def _queue(self, i: int) -> list:
        """Actor `i`'s refs, the running one first."""
        return [ref for ref, (_, j, _) in self._refs.items() if j == i]

    def _replace(self, i: int, again: list | None = None) -> None:
        """A fresh actor for `i` (its running job's ref already taken out); the jobs queued on
        the old one (or `again`, (key, job) pairs) go first to the free actors."""
        queued = [(key, job) for key, _, job in map(self._refs.pop, self._queue(i))]
        self._ray.kill(self._actors[i], no_restart=True)
        self._actors[i], self.names[i] = self._new_actor()
        self.restarts += 1
        self._began.pop(i, None)
        self._waiting.extendleft(reversed(queued if again is None else again))
        self._dispatch()

    def _send(self, i: int, key: Key, job: Job) -> None:
        if not self._queue(i):
            self._began[i] = time.monotonic()
        self._refs[self._actors[i].evaluate.remote(job)] = (key, i, job)

    def _dispatch(self) -> None:
        """The waiting jobs onto the least loaded actors with room, in order: a suspect only
        onto an idle actor, nothing behind a suspect."""
        for key, job in list(self._waiting):
            load = collections.Counter(i for _, i, _ in self._refs.values())
            behind_suspect = {i for k, i, _ in self._refs.values() if k in self._suspects}
            room = 1 if key in self._suspects else self.depth
            free = [i for i in range(len(self._actors))
                    if load[i] < room and i not in behind_suspect]
            if free:
                self._waiting.remove((key, job))
                self._send(min(free, key=lambda i: load[i]), key, job)

    def start(self, key: Key, job: Job) -> None:
        self._waiting.append((key, job))
        self._dispatch()

    def started(self, key: Key, sent: float) -> float | None:
        i = next((i for k, i, _ in self._refs.values() if k == key), None)
        if i is None:  # waiting for an actor
            return None
        return self._began.get(i) if self._refs[self._queue(i)[0]][0] == key else None

    def _get(self, ref) -> tuple[Result, bool]:
        """A job's result, and whether its actor died before returning it."""
        try:
            return self._ray.get(ref), False
        except self._ray.exceptions.RayActorError as exc:
            return Result(None, Cause.CRASH, f"device actor died: {type(exc).__name__}"), True
        except self._ray.exceptions.RayTaskError as exc:
            return Result(None, Cause.ERROR, str(exc.cause if exc.cause else exc)), False

    def _settle_dead(self, i: int) -> list:
        """(key, result) of the jobs of actor `i`, which died: those whose results came back,
        and the crash where it died alone; the others go to fresh actors, each alone. The job
        queued behind the crash dies with it, and under load so can the one before it, whose
        reply was still on its way (CI blamed two trials for one crash)."""
        queue = self._queue(i)
        settled, again = [], []
        for ref in queue:
            result, died = self._get(ref)  # resolves at once: the actor is gone
            key, _, job = self._refs.pop(ref)
            if died and len(queue) > 1:
                self._suspects.add(key)
                again.append((key, job))
            else:
                self._suspects.discard(key)
                settled.append((key, result))
        self._replace(i, again)
        return settled

    def harvest(self):
        out = []
        ready = set(_ready_refs(self._ray, list(self._refs)))
        for ref in [r for r in self._refs if r in ready]:  # in the order sent: running first
            if ref not in self._refs:  # settled, or sent to a fresh actor, earlier in this pass
                continue
            i = self._refs[ref][1]
            result, died = self._get(ref)
            if died:
                settled = self._settle_dead(i)
            else:
                settled = [(self._refs.pop(ref)[0], result)]
                self._suspects.discard(settled[0][0])
                if result.fatal:
                    self._replace(i)
                else:
                    self._dispatch()
            for key, result in settled:
                if i in self._began:
                    self._began[i] = time.monotonic()  # the next, if any, began when this ended
                result.device = self.names[i]
                out.append((key, result))
        return out

    def kill(self, key: Key) -> None:
        ref = next(r for r, (k, _, _) in self._refs.items() if k == key)
        _, i, _ = self._refs.pop(ref)
        self._suspects.discard(key)
        self._replace(i)

    def wait_handles(self):
        return "ray", list(self._refs)

    def close(self) -> None:
        for actor in self._actors:
            self._ray.kill(actor, no_restart=True)
        self._actors = []


def wait_refs(handles: list, timeout: float) -> None:
    import ray

    ray.wait(handles, num_returns=1, timeout=timeout)
