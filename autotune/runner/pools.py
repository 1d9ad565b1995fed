"""Device pools on this machine: one isolated worker process per device running an Evaluator
(GPUs with CudaEvaluator; any evaluator, e.g. a simulator's, on devices named None), and the
pool of no devices (compile-only: a compiled candidate is the result)."""

from __future__ import annotations

import dataclasses
import os
import tempfile

from .base import Evaluator, Job, Provenance, Result
from .compile import unpack
from .isolation import IsolatedWorker
from .sides import DEVICE_DEPTH, DevicePool, Key, WorkerSide


class WorkerPool(WorkerSide, DevicePool):
    """One isolated worker per entry of `devices` (a GPU index, pinned with
    CUDA_VISIBLE_DEVICES; or None), each evaluating one job at a time with `depth` - 1 more
    queued behind it, so that it starts the next while the driver tells the last; `names`
    label results."""

    name = "local"

    def __init__(self, evaluator: Evaluator, devices: list[int | None], provenance: Provenance,
                 names: list[str] | None = None, depth: int = DEVICE_DEPTH):
        self._provenance, self.names = provenance, names or [None] * len(devices)
        self.depth = depth
        self.devices = list(devices)
        self.timer = getattr(evaluator, "timer", self.timer)
        self._scratch = tempfile.mkdtemp(prefix="autotune-artifacts-")
        workers = []
        try:
            for device in devices:
                workers.append(IsolatedWorker(
                    evaluator.evaluate, evaluator.setup, device, wait=False,
                    name=f"autotune-device{'' if device is None else device}"))
        except Exception:
            for w in workers:
                w.close()
            raise
        self._start_workers(workers)

    provenance = property(lambda self: self._provenance)

    def start(self, key: Key, job: Job) -> None:
        if job.compiled.files:  # built on another machine
            job = dataclasses.replace(job, compiled=unpack(
                job.compiled, os.path.join(self._scratch, str(len(os.listdir(self._scratch))))))
        self._submit(key, job)

    def _label(self, i: int, result: Result) -> Result:
        result.device = self.names[i]
        return result


class NoDevices(DevicePool):
    """Compile-only: a compiled candidate's result is its resource report, untimed."""

    name = "none"

    def __init__(self):
        self._done: list = []

    provenance = property(lambda self: Provenance("compile-only"))
    slots = property(lambda self: 1)
    busy = property(lambda self: 0)

    def start(self, key: Key, job: Job) -> None:
        self._done.append((key, Result(None, resources=job.compiled.resources,
                                       artifact=job.compiled.artifact_path)))

    def harvest(self):
        done, self._done = self._done, []
        return done

    def kill(self, key: Key) -> None:
        raise RuntimeError("nothing runs on no devices")
