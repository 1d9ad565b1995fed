"""A GPU worker: a separate (spawned) process that evaluates one job at a time for one GPU.

The parent enforces a hard timeout per job. A hang (e.g. an mbarrier deadlock) or a crash (a
signal, or a CUDA error that poisons the context) kills the process; the job fails with its
cause and the worker is started again, so the study goes on."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import traceback

from .base import Cause, Evaluator, Job, Result

_READY = "ready"


def _serve(conn, evaluator: Evaluator, device: int | None) -> None:
    if device is not None:
        # Before anything imports CUDA: this process sees its GPU as device 0.
        os.environ["CUDA_VISIBLE_DEVICES"] = str(device)
    try:
        evaluator.setup(device)
    except Exception:
        conn.send(("setup_failed", traceback.format_exc(limit=3)))
        return
    conn.send((_READY, None))
    while True:
        job = conn.recv()
        if job is None:
            return
        try:
            result = evaluator.evaluate(job)
        except Exception as exc:
            result = Result(job.candidate.tag, Cause.ERROR, f"{type(exc).__name__}: {exc}")
        conn.send(result)
        if result.fatal:
            os._exit(3)  # the parent sees the result first, then restarts us


class WorkerStartError(RuntimeError):
    pass


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "worker vanished"
    if code < 0:
        try:
            return f"worker killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"worker killed by signal {-code}"
    return f"worker exited with status {code}"


class WorkerProcess:
    """Owns one worker process; restarts it after a hang or a crash."""

    def __init__(self, evaluator: Evaluator, device: int | None, timeout_s: float,
                 start_timeout_s: float = 300.0):
        self.evaluator, self.device = evaluator, device
        self.timeout_s, self.start_timeout_s = timeout_s, start_timeout_s
        self.restarts = 0
        self._ctx = multiprocessing.get_context("spawn")
        self._process = self._conn = None
        self._job: Job | None = None
        self._deadline = 0.0
        self._start()

    # -- lifecycle ---------------------------------------------------------------------------
    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._process = self._ctx.Process(target=_serve, args=(child, self.evaluator, self.device),
                                          daemon=True, name=f"autotune-gpu{self.device}")
        self._process.start()
        child.close()
        self._conn = parent
        if not parent.poll(self.start_timeout_s):
            self._kill()
            raise WorkerStartError(f"GPU worker {self.device} did not start in "
                                   f"{self.start_timeout_s:.0f} s")
        try:
            kind, detail = parent.recv()
        except EOFError:
            self._process.join(5)
            raise WorkerStartError(f"GPU worker {self.device} died while starting: "
                                   f"{_describe_exit(self._process.exitcode)}") from None
        if kind != _READY:
            self._kill()
            raise WorkerStartError(f"GPU worker {self.device} failed to start:\n{detail}")

    def _kill(self) -> None:
        if self._process.is_alive():
            self._process.kill()
        self._process.join(10)
        self._conn.close()

    def _restart(self) -> None:
        self._kill()
        self.restarts += 1
        self._start()

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
        return self._job is not None

    def submit(self, job: Job) -> None:
        assert self._job is None, "one job at a time"
        self._job, self._deadline = job, time.monotonic() + self.timeout_s
        self._conn.send(job)

    @property
    def connection(self):
        return self._conn

    def poll(self) -> Result | None:
        """The job's Result once it finished, failed, hung past the timeout or crashed."""
        if self._job is None:
            return None
        tag = self._job.candidate.tag
        result = None
        if self._conn.poll():
            try:
                result = self._conn.recv()
            except (EOFError, OSError):
                self._process.join(5)
                result = Result(tag, Cause.CRASH, _describe_exit(self._process.exitcode))
                self._restart()
            else:
                if result.fatal:
                    self._restart()
        elif not self._process.is_alive():
            result = Result(tag, Cause.CRASH, _describe_exit(self._process.exitcode))
            self._restart()
        elif time.monotonic() > self._deadline:
            result = Result(tag, Cause.TIMEOUT,
                            f"no result within {self.timeout_s:g} s (hang or deadlock): worker killed")
            self._restart()
        if result is not None:
            result.resources = result.resources or self._job.compiled.resources
            self._job = None
        return result

    def time_left(self) -> float:
        return max(0.0, self._deadline - time.monotonic()) if self._job else float("inf")
