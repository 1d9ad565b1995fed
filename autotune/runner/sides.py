"""The two sides a scheduler drives (scheduler.py): a builder compiles candidates, a device pool
runs compiled ones. Both take jobs by key, report outcomes without blocking (`harvest`), stop an
overdue job when asked (`kill`) and say what the scheduler can block on (`wait_handles`):
multiprocessing connections ("conn"), Ray object refs ("ray"), or nothing (results come at once
or by the clock, `next_event_s`)."""

from __future__ import annotations

import abc
import collections
from typing import Any, Hashable

from .base import PROTOCOL, Candidate, Job, Provenance
from .isolation import IsolatedWorker

Key = Hashable
# Jobs given to one device at once: the one it runs and one queued behind it. With a warm compile
# cache a GPU job takes about as long as the driver's ask and tell; one queued job keeps the
# device busy meanwhile (with one, it idled for the driver's part of every trial).
DEVICE_DEPTH = 2


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

    def started(self, key: Key, sent: float) -> float | None:
        """When the job `key`, given to this side at `sent` (time.monotonic()), began to run;
        None while it waits behind another. Its deadline counts from then."""
        return sent

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
    depth: int = 1  # jobs given to one device at once (slots = devices x depth)

    @property
    @abc.abstractmethod
    def provenance(self) -> Provenance:
        ...

    @abc.abstractmethod
    def start(self, key: Key, job: Job) -> None:
        ...


class WorkerSide(Side):
    """A side whose jobs run in isolated worker processes of this machine, `depth` jobs each at
    most (one runs, the others wait in its queue): started together, killed and restarted at a
    deadline, waited on by their connections."""

    depth = 1

    def _start_workers(self, workers: list[IsolatedWorker]) -> None:
        self.workers = workers
        self._keys: dict[int, collections.deque] = {i: collections.deque()
                                                    for i in range(len(workers))}
        try:
            for w in workers:
                w.wait_ready()
        except Exception:
            self.close()
            raise

    slots = property(lambda self: len(self.workers) * self.depth)
    busy = property(lambda self: sum(map(len, self._keys.values())))

    @property
    def restarts(self) -> int:
        return sum(w.restarts for w in self.workers)

    def _submit(self, key: Key, job) -> int:
        i = min(self._keys, key=lambda i: len(self._keys[i]))  # the least loaded
        self.workers[i].submit(job)
        self._keys[i].append(key)
        return i

    def harvest(self):
        out = []
        for i, keys in self._keys.items():
            while keys:
                finished, outcome = self.workers[i].poll()
                if not finished:
                    break
                out.append((keys.popleft(), self._label(i, outcome)))
        return out

    def _label(self, i: int, outcome):
        """The outcome of worker `i`'s job as the side reports it."""
        return outcome

    def started(self, key: Key, sent: float) -> float | None:
        i = next(i for i, keys in self._keys.items() if key in keys)
        return self.workers[i].started if self._keys[i][0] == key else None

    def kill(self, key: Key) -> None:
        i = next(i for i, keys in self._keys.items() if keys and keys[0] == key)
        self._keys[i].popleft()
        self.workers[i].restart()  # the jobs queued behind it go to the new process

    def wait_handles(self):
        return "conn", [self.workers[i].connection for i, keys in self._keys.items() if keys]

    def close(self) -> None:
        for w in getattr(self, "workers", []):
            w.close()
        self.workers, self._keys = [], {}
