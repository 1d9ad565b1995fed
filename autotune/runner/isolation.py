"""An isolated worker: a spawned process that runs jobs (a compile, or a GPU evaluation) one
after another for its owner, who enforces a deadline per job. Jobs may be queued behind the
running one, so a device never waits for its owner between two jobs.

A hang (a compiler stuck in lowering, an mbarrier deadlock on the GPU) or a crash (a signal, a
CUDA error that poisons the context) costs the job, not the study: the owner kills the process,
fails the job with its cause and starts the worker again; jobs queued behind it are sent
to the new process. A worker exits when its parent dies
(Linux's parent-death signal), so a killed driver leaves no processes behind."""

from __future__ import annotations

import collections
import ctypes
import multiprocessing
import os
import signal
import sys
import time
import traceback
from typing import Any, Callable

from .base import Cause, Result

_READY = "ready"
PR_SET_PDEATHSIG = 1


def exit_with_parent(parent_pid: int) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux; elsewhere a no-op).
    If the parent is already gone, exit now."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(1)


def _serve(conn, parent_pid: int, setup: Callable | None, handle: Callable, device) -> None:
    exit_with_parent(parent_pid)
    if device is not None:
        # Before anything imports CUDA: this process sees its GPU as device 0.
        os.environ["CUDA_VISIBLE_DEVICES"] = str(device)
    try:
        if setup is not None:
            setup(device)
    except Exception:
        conn.send(("setup_failed", traceback.format_exc(limit=3)))
        return
    conn.send((_READY, None))
    while True:
        job = conn.recv()
        if job is None:
            return
        try:
            outcome = handle(job)
        except Exception as exc:
            outcome = Result(None, Cause.ERROR, f"{type(exc).__name__}: {exc}")
        conn.send(outcome)
        if isinstance(outcome, Result) and outcome.fatal:
            os._exit(3)  # the parent sees the result first, then restarts us


class WorkerStartError(RuntimeError):
    pass


def describe_exit(code: int | None) -> str:
    if code is None:
        return "worker vanished"
    if code < 0:
        try:
            return f"worker killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"worker killed by signal {-code}"
    return f"worker exited with status {code}"


class IsolatedWorker:
    """Owns one worker process running `handle(job)` (after `setup(device)` once), its jobs in
    the order submitted; restarts it after a hang or a crash. `setup` and `handle` must be
    picklable (module-level functions, bound methods of picklable objects, partials)."""

    def __init__(self, handle: Callable[[Any], Any], setup: Callable | None = None,
                 device: int | None = None, name: str = "autotune-worker",
                 start_timeout_s: float = 300.0, wait: bool = True):
        """wait=False: return once the process is spawned; `wait_ready()` before the first job
        (several workers then start at once)."""
        self.handle, self.setup, self.device, self.name = handle, setup, device, name
        self.start_timeout_s = start_timeout_s
        self.restarts = 0
        self._ctx = multiprocessing.get_context("spawn")
        self._process = self._conn = None
        self.jobs: collections.deque = collections.deque()  # sent, unanswered; the first runs
        self.started = 0.0  # when the first began
        self._spawn()
        if wait:
            self.wait_ready()

    # -- lifecycle ---------------------------------------------------------------------------
    def _spawn(self) -> None:
        parent, child = self._ctx.Pipe()
        self._process = self._ctx.Process(
            target=_serve, args=(child, os.getpid(), self.setup, self.handle, self.device),
            daemon=True, name=self.name)
        self._process.start()
        child.close()
        self._conn = parent

    def wait_ready(self) -> None:
        parent = self._conn
        if not parent.poll(self.start_timeout_s):
            self._kill()
            raise WorkerStartError(f"{self.name} did not start in {self.start_timeout_s:.0f} s")
        try:
            kind, detail = parent.recv()
        except EOFError:
            self._process.join(5)
            raise WorkerStartError(f"{self.name} died while starting: "
                                   f"{describe_exit(self._process.exitcode)}") from None
        if kind != _READY:
            self._kill()
            raise WorkerStartError(f"{self.name} failed to start:\n{detail}")

    def _kill(self) -> None:
        if self._process.is_alive():
            self._process.kill()
        self._process.join(10)
        self._conn.close()

    def restart(self) -> None:
        """Kill the process (a hang, a poisoned context) and start a fresh one; the running job
        is lost, the queued ones are sent to the new process."""
        self._kill()
        queued = list(self.jobs)[1:]
        self.jobs.clear()
        self.restarts += 1
        self._spawn()
        self.wait_ready()
        for job in queued:
            self.submit(job)

    def close(self) -> None:
        if self._process.is_alive():
            try:
                self._conn.send(None)
                self._process.join(5)
            except (BrokenPipeError, OSError):
                pass
        self._kill()

    # -- jobs ----------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return bool(self.jobs)

    @property
    def connection(self):
        return self._conn

    def submit(self, job) -> None:
        """Send `job`: it runs when those sent before it have finished."""
        if not self.jobs:
            self.started = time.monotonic()
        self.jobs.append(job)
        try:
            self._conn.send(job)
        except (BrokenPipeError, OSError):
            pass  # the process died after the job before this one: poll() restarts it and
            # the restart sends this job again

    def poll(self) -> tuple[bool, Any]:
        """(True, outcome) once the running job finished, or (True, a CRASH Result) if the
        process died (it is restarted); (False, None) while it runs."""
        if not self.jobs:
            return False, None
        try:
            outcome = self._conn.recv() if self._conn.poll() else None
            died = outcome is None and not self._process.is_alive()
        except (EOFError, OSError):  # the pipe closed: the process is dying or dead
            outcome, died = None, True
        if outcome is None and not died:
            return False, None
        if died:
            self._process.join(5)
            outcome = Result(None, Cause.CRASH, describe_exit(self._process.exitcode))
            self.restart()
        elif isinstance(outcome, Result) and outcome.fatal:
            self.restart()
        else:
            self.jobs.popleft()
            self.started = time.monotonic()  # the next, if any, began when this one ended
        return True, outcome
