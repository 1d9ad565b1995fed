"""Runners: a candidate goes compile -> validate -> time. One interface (`Runner`), four
implementations: LocalRunner (GPUs of this machine, no Ray), RayRunner (every GPU of a Ray
cluster), SimulatedRunner (replays a recorded table; CPU only) and CompileOnlyRunner (no GPU of
the space's arch: compile and resource-check only)."""

from .base import Candidate, Cause, Compiled, Evaluator, Job, Result, Runner, Timing
from .compile import Compiler, compile_candidate, compile_with_tirx
from .devices import Gpu, gpus_for_arch, visible_gpus
from .local import CompileOnlyRunner, LocalRunner
from .simulated import RecordedTable, SimulatedRunner


def __getattr__(name):
    # Ray is a heavy import: load it only when the Ray runner is asked for.
    if name == "RayRunner":
        from .ray_runner import RayRunner

        return RayRunner
    raise AttributeError(name)


__all__ = [
    "Candidate", "Cause", "CompileOnlyRunner", "Compiled", "Compiler", "Evaluator", "Gpu", "Job",
    "LocalRunner", "RayRunner", "RecordedTable", "Result", "Runner", "SimulatedRunner", "Timing",
    "compile_candidate", "compile_with_tirx", "gpus_for_arch", "visible_gpus",
]
