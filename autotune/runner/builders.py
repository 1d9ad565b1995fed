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
from .sides import Builder, Key, WorkerSide


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


class ProcessBuilder(WorkerSide, Builder):
    """`workers` isolated compile processes on this machine."""

    name = "process"

    def __init__(self, compiler: Compiler, workers: int | None = None,
                 cache_dir: str | None = None):
        n = default_compile_workers() if workers is None else workers
        if n < 1:
            raise ValueError(f"a process builder needs at least one worker, not {n}")
        service = CompileService(compiler, cache_dir)
        self._start_workers([IsolatedWorker(service, name=f"autotune-compile{i}", wait=False)
                             for i in range(n)])

    def start(self, key: Key, candidate: Candidate, pack: bool) -> None:
        self._submit(key, (candidate, pack))


def wait_connections(handles: list, timeout: float) -> None:
    multiprocessing.connection.wait(handles, timeout=timeout)
