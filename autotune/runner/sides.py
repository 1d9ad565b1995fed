"""The two sides a scheduler drives (scheduler.py): a builder compiles candidates, a device pool
runs compiled ones. Both take jobs by key, report outcomes without blocking (`harvest`), stop an
overdue job when asked (`kill`) and say what the scheduler can block on (`wait_handles`):
multiprocessing connections ("conn"), Ray object refs ("ray"), or nothing (results come at once
or by the clock, `next_event_s`)."""

from __future__ import annotations

import abc
from typing import Any, Hashable

from .base import PROTOCOL, Candidate, Job, Provenance
from .isolation import IsolatedWorker

Key = Hashable


class Side(abc.ABC):
    name: str = ""
    can_kill: bool = True  # an overdue job can be stopped (an in-process compile cannot)

    @property
    @abc.abstractmethod
    def slots(self) -> int:
        """Jobs it runs at once."""

    @property
    @abc.abstractmethod
    def busy(self) -> int:
        """Jobs running now."""

    @property
    def free(self) -> int:
        return self.slots - self.busy

    @abc.abstractmethod
    def harvest(self) -> list[tuple[Key, Any]]:
        """Outcomes of the jobs that finished since the last call; never blocks."""

    @abc.abstractmethod
    def kill(self, key: Key) -> None:
        """Stop the overdue job `key` (its slot frees; it yields no outcome)."""

    def wait_handles(self) -> tuple[str, list]:
        """(kind, handles) that become ready when a job may have finished."""
        return "none", []

    def next_event_s(self) -> float | None:
        """Seconds until a job finishes by the clock, for sides with no handles to wait on."""
        return None

    def close(self) -> None:
        """Stop workers, release resources."""


class Builder(Side):
    """Compiles candidates: outcome a Compiled, or a failed Result (compile_candidate's)."""

    @abc.abstractmethod
    def start(self, key: Key, candidate: Candidate, pack: bool) -> None:
        """Begin compiling; `pack` puts the artifact's files into the Compiled, for devices on
        other machines."""


class DevicePool(Side):
    """Runs compiled candidates on devices (real, replayed, simulated or none): outcome a
    Result. `provenance` labels every result it gives."""

    needs_files: bool = False  # its devices are on other machines: artifacts travel as bytes
    timer: str = PROTOCOL

    @property
    @abc.abstractmethod
    def provenance(self) -> Provenance:
        ...

    @abc.abstractmethod
    def start(self, key: Key, job: Job) -> None:
        ...


class WorkerSide(Side):
    """A side whose jobs run in isolated worker processes of this machine, one job each:
    started together, killed and restarted at a deadline, waited on by their connections."""

    def _start_workers(self, workers: list[IsolatedWorker]) -> None:
        self.workers, self._keys = workers, {}  # worker index -> its job's key
        try:
            for w in workers:
                w.wait_ready()
        except Exception:
            self.close()
            raise

    slots = property(lambda self: len(self.workers))
    busy = property(lambda self: len(self._keys))

    @property
    def restarts(self) -> int:
        return sum(w.restarts for w in self.workers)

    def _submit(self, key: Key, job) -> int:
        i = next(i for i, w in enumerate(self.workers) if not w.busy)
        self.workers[i].submit(job)
        self._keys[i] = key
        return i

    def harvest(self):
        out = []
        for i in list(self._keys):
            finished, outcome = self.workers[i].poll()
            if finished:
                out.append((self._keys.pop(i), self._label(i, outcome)))
        return out

    def _label(self, i: int, outcome):
        """The outcome of worker `i`'s job as the side reports it."""
        return outcome

    def kill(self, key: Key) -> None:
        i = next(i for i, k in self._keys.items() if k == key)
        del self._keys[i]
        self.workers[i].restart()

    def wait_handles(self):
        return "conn", [self.workers[i].connection for i in self._keys]

    def close(self) -> None:
        for w in getattr(self, "workers", []):
            w.close()
        self.workers, self._keys = [], {}
