"""Builders on this machine: in the driver's process (stub compilers, tests: a hang cannot be
stopped there), or in isolated worker processes, one compile each at a time, killed at their
deadline like a hung kernel."""

from __future__ import annotations

import dataclasses
import multiprocessing.connection
import os

from .base import Candidate
from .compile import Compiler, compile_candidate
from .isolation import IsolatedWorker
from .sides import Builder, Key


def default_compile_workers() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


@dataclasses.dataclass(frozen=True)
class CompileService:
    """What a compile worker runs: compile_candidate with this compiler and cache."""

    compiler: Compiler
    cache_dir: str | None = None

    def __call__(self, job: tuple[Candidate, bool]):
        candidate, pack = job
        return compile_candidate(self.compiler, candidate, self.cache_dir, pack=pack)


class InlineBuilder(Builder):
    """Compiles in the calling process, at `start`: for cheap compilers (stubs, replays)."""

    name = "inline"
    can_kill = False

    def __init__(self, compiler: Compiler, cache_dir: str | None = None):
        self.service = CompileService(compiler, cache_dir)
        self._done: list = []

    slots = property(lambda self: 1)
    busy = property(lambda self: 0)  # done before start returns

    def start(self, key: Key, candidate: Candidate, pack: bool) -> None:
        self._done.append((key, self.service((candidate, pack))))

    def harvest(self):
        done, self._done = self._done, []
        return done

    def kill(self, key: Key) -> None:
        raise RuntimeError("an in-process compile cannot be stopped")


class ProcessBuilder(Builder):
    """`workers` isolated compile processes on this machine."""

    name = "process"

    def __init__(self, compiler: Compiler, workers: int | None = None,
                 cache_dir: str | None = None):
        n = default_compile_workers() if workers is None else workers
        if n < 1:
            raise ValueError(f"a process builder needs at least one worker, not {n}")
        service = CompileService(compiler, cache_dir)
        self.workers = [IsolatedWorker(service, name=f"autotune-compile{i}", wait=False)
                        for i in range(n)]
        try:
            for w in self.workers:
                w.wait_ready()
        except Exception:
            self.close()
            raise
        self._keys: dict[int, Key] = {}  # worker index -> its job's key

    slots = property(lambda self: len(self.workers))
    busy = property(lambda self: len(self._keys))

    def start(self, key: Key, candidate: Candidate, pack: bool) -> None:
        i = next(i for i, w in enumerate(self.workers) if not w.busy)
        self.workers[i].submit((candidate, pack))
        self._keys[i] = key

    def harvest(self):
        out = []
        for i in list(self._keys):
            finished, outcome = self.workers[i].poll()
            if finished:
                out.append((self._keys.pop(i), outcome))
        return out

    def kill(self, key: Key) -> None:
        i = next(i for i, k in self._keys.items() if k == key)
        del self._keys[i]
        self.workers[i].restart()

    def wait_handles(self):
        return "conn", [self.workers[i].connection for i in self._keys]

    def close(self) -> None:
        for w in self.workers:
            w.close()
        self.workers, self._keys = [], {}


def wait_connections(handles: list, timeout: float) -> None:
    multiprocessing.connection.wait(handles, timeout=timeout)
