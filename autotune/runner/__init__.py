"""Runners: a candidate goes compile -> validate -> time. A runner is a builder (in-process,
processes, Ray tasks) and a device pool (local processes, Ray actors, replayed, none) under one
scheduler; the built-ins (local, ray, simulated, compile-only) and third parties' are chosen by
name from the `autotune.runners` entry points."""

from .base import Candidate, Cause, Compiled, Evaluator, Job, Provenance, Result, Runner, Timing
from .builders import InlineBuilder, ProcessBuilder
from .compile import Compiler, compile_candidate, compile_nothing, compile_with_tirx
from .devices import Gpu, gpus_for_arch, visible_gpus
from .kinds import RunnerOptions, replay
from .pools import NoDevices, WorkerPool
from .registry import make_runner, runner_names
from .scheduler import Scheduler
from .sides import Builder, DevicePool
from .simulated import RecordedTable, ReplayDevices

__all__ = [
    "Builder", "Candidate", "Cause", "Compiled", "Compiler", "DevicePool", "Evaluator", "Gpu",
    "InlineBuilder", "Job", "NoDevices", "ProcessBuilder", "Provenance", "RecordedTable",
    "ReplayDevices", "Result", "Runner", "RunnerOptions", "Scheduler", "Timing", "WorkerPool",
    "compile_candidate", "compile_nothing", "compile_with_tirx", "gpus_for_arch", "make_runner",
    "replay", "runner_names", "visible_gpus",
]
