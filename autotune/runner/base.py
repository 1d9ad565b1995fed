"""The runner interface: a candidate (space, config, problem) goes compile -> validate -> time and
comes back as a Result. Runners (scheduler.py: a builder and a device pool under one scheduler)
implement `Runner`."""

from __future__ import annotations

import abc
import dataclasses
import enum
from typing import Any, Hashable, Iterable

from ..spaces.base import Config, Problem, SearchSpace

# The name of the one timing protocol (protocol.py), recorded with every study, trial and store.
# "graph-window": the mean over a 1 s window. Studies under an earlier protocol ("graph-warm": the
# median of 10 short replays; "graph": the same before the warm-up) do not resume under it.
PROTOCOL = "graph-window"


class Cause(str, enum.Enum):
    """Why a candidate has no time. The value is what studies store."""

    ILLEGAL = "illegal"  # broke a legality rule; never compiled
    COMPILE = "compile"  # lowering or NVRTC failed
    RESOURCES = "resources"  # compiled but exceeds a hardware limit (smem, registers, TMEM)
    VALIDATION = "validation"  # ran but gave a wrong, NaN or unwritten output
    TIMEOUT = "timeout"  # did not finish within the hard timeout (e.g. an mbarrier deadlock)
    CRASH = "crash"  # the worker process died (signal or exit)
    CUDA_ERROR = "cuda_error"  # a CUDA error (illegal address, launch failure): context poisoned
    NOT_RECORDED = "not_recorded"  # a simulated runner's table has no entry for the config
    ERROR = "error"  # anything else raised while evaluating


@dataclasses.dataclass(frozen=True)
class Candidate:
    space: SearchSpace
    config: Config
    problem: Problem
    tag: Hashable = None  # the caller's handle (a trial number), returned on the Result
    # The vendor op (space.vendor: cuBLAS/cuDNN through torch) instead of a config's kernel:
    # nothing compiles, and it is validated and timed like a kernel (config is ignored).
    vendor: bool = False


@dataclasses.dataclass
class Compiled:
    """What the compile step hands to the GPU side."""

    artifact_path: str | None  # directory of a tirx.Artifact; None for stub compilers
    resources: dict[str, Any] = dataclasses.field(default_factory=dict)
    compile_s: float = 0.0
    files: dict[str, bytes] | None = None  # the artifact's files, when it must cross machines


@dataclasses.dataclass
class Timing:
    ms: float  # the protocol's time of one launch
    min_ms: float
    max_ms: float
    rounds: int
    iters_per_round: int
    input_sets: int  # rotated so their working set exceeds L2

    @property
    def spread(self) -> float:
        """(max - min) / time over the rounds."""
        return (self.max_ms - self.min_ms) / self.ms if self.ms else 0.0


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where a runner's results come from; every time a study stores carries it.

    kind: "measured" (timed on real devices), "replayed" (times read back from a recorded
    table), "compile-only" (compiled and resource-checked, never run) or "validated" (checked in
    simulation, e.g. NumSim at a proxy shape; never timed). detail: what says where - runner,
    timer, device names and host; or the table and its hash."""

    kind: str
    detail: dict = dataclasses.field(default_factory=dict)

    KINDS = ("measured", "replayed", "compile-only", "validated")

    def __post_init__(self):
        if self.kind not in self.KINDS:
            raise ValueError(f"provenance kind {self.kind!r} is not one of {self.KINDS}")

    @property
    def timed(self) -> bool:
        return self.kind in ("measured", "replayed")

    @property
    def study_suffix(self) -> str:
        """Studies of different kinds never share a name: a replayed time is not a measured one."""
        return "" if self.kind == "measured" else f"/{self.kind}"

    def describe(self) -> str:
        return self.kind + "".join(f", {k} {v}" for k, v in self.detail.items() if v)


@dataclasses.dataclass
class Result:
    tag: Hashable
    cause: Cause | None = None  # None: success
    message: str = ""
    timing: Timing | None = None  # None when not timed (failure, or compile-only)
    rel_errors: list[float] | None = None
    resources: dict[str, Any] = dataclasses.field(default_factory=dict)
    compile_s: float | None = None
    fatal: bool = False  # the worker's state is unusable (poisoned CUDA context): restart it
    device: str | None = None  # the device that ran it, as its driver names it
    artifact: str | None = None  # the compiled artifact it ran (a tirx.Artifact directory)

    @property
    def ok(self) -> bool:
        return self.cause is None

    @property
    def time_ms(self) -> float | None:
        return self.timing.ms if self.timing else None


@dataclasses.dataclass(frozen=True)
class Job:
    """One candidate's work for a GPU worker."""

    candidate: Candidate
    compiled: Compiled
    seed: int


class Evaluator(abc.ABC):
    """Validates and times a compiled candidate; lives inside a device worker process."""

    def setup(self, device: int | None) -> None:
        """Called once in the worker before any job (e.g. pick the GPU, import torch)."""

    @abc.abstractmethod
    def evaluate(self, job: Job) -> Result:
        ...


class Runner(abc.ABC):
    """Evaluates candidates, several at once. Submit up to `slots` candidates, then collect."""

    mode: str = ""  # the runner's registered name ("local", "ray", "simulated", ...)
    timer: str = PROTOCOL  # how its times are taken: a study keeps to one

    @property
    @abc.abstractmethod
    def provenance(self) -> Provenance:
        """Where its results come from (measured, replayed, compile-only, validated)."""

    @property
    def timed(self) -> bool:
        """False where results carry no times (compile-only, validation in simulation)."""
        return self.provenance.timed

    @property
    @abc.abstractmethod
    def slots(self) -> int:
        """How many candidates may be in flight at once (one per GPU, typically)."""

    @property
    @abc.abstractmethod
    def in_flight(self) -> int:
        ...

    @abc.abstractmethod
    def submit(self, candidate: Candidate) -> None:
        ...

    @abc.abstractmethod
    def collect(self, timeout: float | None = None) -> list[Result]:
        """Results finished so far; waits up to `timeout` seconds (None: forever) for one."""

    def close(self) -> None:
        """Stop workers and release resources."""

    def run(self, candidates: Iterable[Candidate]) -> list[Result]:
        """Evaluate all candidates; results in submission order (tags are replaced by indices)."""
        todo = [dataclasses.replace(c, tag=i) for i, c in enumerate(candidates)]
        results: dict[Hashable, Result] = {}
        while todo or self.in_flight:
            while todo and self.in_flight < self.slots:
                self.submit(todo.pop(0))
            for result in self.collect():
                results[result.tag] = result
        return [results[i] for i in range(len(results))]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
