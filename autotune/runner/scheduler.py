"""One scheduler for every runner: a builder (compiles) and a device pool (runs compiled
candidates) under one owner of the compile memo, the queues, the deadlines on both sides (a
compile that hangs is killed like a kernel that hangs, and costs its trial), and the retry of a
compile whose worker died (once: a second death is the candidate's).

How many candidates it takes at once (`slots`) follows what it observes: every compile slot
while compiles are slow against the devices (a cold compile cache), and only as many as keep
the devices fed once they are fast (a warm cache): each candidate taken is a running trial that
the driver reads back from its storage at every step, and TPE's constant liar guesses over."""

from __future__ import annotations

import collections
import dataclasses
import itertools
import math
import random
import time
from typing import Callable

from .base import Candidate, Cause, Compiled, Job, Provenance, Result, Runner
from .compile import CompileMemo
from .sides import Builder, DevicePool, Key

DEFAULT_COMPILE_TIMEOUT_S = 600.0
DEFAULT_TIMEOUT_S = 60.0
_SLICE_S = 0.01  # waits alternate in slices of this when the sides block on different things
_SMOOTHING = 0.2  # weight of the latest compile or device time in their running means


def _mean(mean: float | None, sample: float) -> float:
    return sample if mean is None else (1 - _SMOOTHING) * mean + _SMOOTHING * sample


def _waiter(kind: str) -> Callable[[list, float], None]:
    if kind == "conn":
        from .builders import wait_connections

        return wait_connections
    from .ray_sides import wait_refs

    return wait_refs


class Scheduler(Runner):
    """A Runner from a builder and a device pool. `mode` names it (the registry's name)."""

    def __init__(self, builder: Builder, pool: DevicePool, *, mode: str = "",
                 timeout_s: float = DEFAULT_TIMEOUT_S,
                 compile_timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S, seed: int | None = None,
                 on_close: Callable[[], None] | None = None):
        self.builder, self.pool = builder, pool
        self.mode = mode or f"{builder.name}+{pool.name}"
        self.timer = pool.timer
        self.timeout_s, self.compile_timeout_s = timeout_s, compile_timeout_s
        self._rng = random.Random(seed)
        self._on_close = on_close
        self._keys = itertools.count()
        self._candidates: dict[Key, Candidate] = {}
        self._to_compile: collections.deque[Key] = collections.deque()
        self._joined: dict[tuple, list[Key]] = {}  # memo key being compiled -> keys waiting
        self._ready: collections.deque[tuple[Key, Compiled]] = collections.deque()
        self._running: dict[Key, tuple[float, Compiled]] = {}  # key -> (when sent, compiled)
        self._sent: dict[Key, float] = {}  # key being compiled -> when
        self._began: dict[Key, float] = {}  # key running on a device -> since when
        self._last_pass = 0.0  # when the pool was last harvested
        # Running means of a compile's and a device job's wall time, once one was seen.
        self.compile_s: float | None = None
        self.device_s: float | None = None
        self._done: list[Result] = []
        self._retried: set[Key] = set()
        self._memo = CompileMemo()

    # -- the Runner interface ------------------------------------------------------------------
    @property
    def provenance(self) -> Provenance:
        return self.pool.provenance

    @property
    def slots(self) -> int:
        return self.pool.slots + self.compile_slots

    @property
    def compile_slots(self) -> int:
        """Compiles worth running at once: as many as finish one per device job (Little's law:
        devices / device time x compile time), plus one; every compile slot until both times
        were seen, or while device jobs take no time (replays)."""
        if not self.compile_s or not self.device_s:
            return self.builder.slots
        per_s = self.pool.slots / self.pool.depth / self.device_s  # jobs the devices finish
        return max(1, min(self.builder.slots, math.ceil(per_s * self.compile_s) + 1))

    @property
    def in_flight(self) -> int:
        return len(self._candidates)

    def submit(self, candidate: Candidate) -> None:
        key = next(self._keys)
        self._candidates[key] = candidate
        if candidate.vendor:  # the vendor op: nothing to compile, straight to a device
            self._ready.append((key, Compiled(artifact_path=None)))
            return
        known = self._memo.get(candidate)
        if known is not None:  # same binary as a finished compile (runtime knobs differ)
            self._compiled(key, known)
            return
        memo_key = CompileMemo.key(candidate)
        if memo_key in self._joined:  # the same binary is being compiled: wait for it
            self._joined[memo_key].append(key)
            return
        self._joined[memo_key] = [key]
        self._to_compile.append(key)

    def collect(self, timeout: float | None = None) -> list[Result]:
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        while True:
            self._pump()
            self._harvest()
            self._expire()
            self._pump()
            now = time.monotonic()
            if self._done or not self._candidates or now >= deadline:
                break
            self._wait(min([deadline - now] + self._deadlines(now)))
        done, self._done = self._done, []
        return done

    def close(self) -> None:
        for side in (self.builder, self.pool):
            side.close()
        if self._on_close is not None:
            self._on_close()
            self._on_close = None

    # -- moving work along ---------------------------------------------------------------------
    def _pump(self) -> None:
        while self._to_compile and self.builder.free > 0:
            key = self._to_compile.popleft()
            self._sent[key] = time.monotonic()
            self.builder.start(key, self._candidates[key], self.pool.needs_files)
        while self._ready and self.pool.free > 0:
            key, compiled = self._ready.popleft()
            self._running[key] = (time.monotonic(), compiled)
            job = Job(self._candidates[key], compiled, seed=self._rng.randrange(2**31))
            self.pool.start(key, job)

    def _harvest(self) -> None:
        for key, outcome in self.builder.harvest():
            self.compile_s = _mean(self.compile_s, time.monotonic() - self._sent.pop(key))
            if (isinstance(outcome, Result) and outcome.cause is Cause.CRASH
                    and key not in self._retried):
                # A compile worker died (a segfault in lowering, or a neighbour's OOM kill):
                # compile once more before blaming the candidate.
                self._retried.add(key)
                self._to_compile.append(key)
                continue
            self._compile_finished(key, outcome)
        now = time.monotonic()
        last_pass, self._last_pass = self._last_pass, now
        for key, result in self.pool.harvest():
            sent, compiled = self._running.pop(key)
            # A job not seen running began after the last pass (it was queued) or was sent.
            began = self._began.pop(key, max(sent, last_pass))
            self.device_s = _mean(self.device_s, now - began)
            result.resources = result.resources or compiled.resources
            result.compile_s = compiled.compile_s
            result.artifact = compiled.artifact_path
            self._finish(key, result)

    def _compile_finished(self, key: Key, outcome: Compiled | Result) -> None:
        candidate = self._candidates[key]
        self._memo.put(candidate, outcome)
        for k in self._joined.pop(CompileMemo.key(candidate), [key]):
            self._compiled(k, outcome if k == key else self._memo.get(self._candidates[k]))

    def _compiled(self, key: Key, outcome: Compiled | Result) -> None:
        if isinstance(outcome, Result):
            self._finish(key, dataclasses.replace(outcome))
        else:
            self._ready.append((key, outcome))

    def _finish(self, key: Key, result: Result) -> None:
        result.tag = self._candidates.pop(key).tag
        self._done.append(result)

    def _expire(self) -> None:
        now = time.monotonic()
        for key, sent in list(self._sent.items()):
            if now > sent + self.compile_timeout_s and self.builder.can_kill:
                del self._sent[key]
                self.builder.kill(key)
                self._compile_finished(key, Result(
                    None, Cause.TIMEOUT, f"compile did not finish within "
                    f"{self.compile_timeout_s:g} s: its worker was killed"))
        for key, deadline in self._device_deadlines().items():
            if now > deadline:
                _, compiled = self._running.pop(key)
                del self._began[key]
                self.pool.kill(key)
                self._finish(key, Result(
                    None, Cause.TIMEOUT, f"no result within {self.timeout_s:g} s (hang or "
                    "deadlock): its worker was killed", resources=compiled.resources))

    # -- waiting -------------------------------------------------------------------------------
    def _device_deadlines(self) -> dict[Key, float]:
        """Deadlines of the jobs running on a device (not of those queued behind them)."""
        for key, (sent, _) in self._running.items():
            if key not in self._began:
                began = self.pool.started(key, sent)
                if began is not None:
                    self._began[key] = began
        return {key: began + self.timeout_s for key, began in self._began.items()}

    def _deadlines(self, now: float) -> list[float]:
        out = [s + self.compile_timeout_s - now for s in self._sent.values()] \
            if self.builder.can_kill else []
        out += [d - now for d in self._device_deadlines().values()]
        out += [t for t in (self.builder.next_event_s(), self.pool.next_event_s())
                if t is not None]
        return out

    def _wait(self, timeout: float) -> None:
        timeout = max(0.0, timeout)
        handles: dict[str, list] = collections.defaultdict(list)
        for side in (self.builder, self.pool):
            kind, hs = side.wait_handles()
            if hs:
                handles[kind] += hs
        if not handles:
            time.sleep(min(timeout, 1.0))  # only clock events (replays) or a stuck caller
        elif len(handles) == 1:
            kind, hs = next(iter(handles.items()))
            _waiter(kind)(hs, min(timeout, 1.0))
        else:  # a connection and a Ray ref cannot be waited on together: alternate
            for kind, hs in handles.items():
                _waiter(kind)(hs, min(timeout, _SLICE_S))
