"""The compile step: (space, config, problem) -> Compiled, on a CPU worker.

`compile_with_tirx` is the production compiler; runners accept any function of the same
signature (tests use a stub). `compile_candidate` wraps a compiler and turns its errors into
Results with a cause, so a compile worker never raises."""

from __future__ import annotations

import dataclasses
import pathlib
import time
from typing import Callable

from ..spaces.base import Config, IllegalConfig, Problem, SearchSpace
from .base import Candidate, Cause, Compiled, Result

Compiler = Callable[[SearchSpace, Config, Problem, "str | None"], Compiled]


def compile_with_tirx(space: SearchSpace, config: Config, problem: Problem,
                      cache_dir: str | None = None) -> Compiled:
    """Build the space's PrimFunc and compile it with tirx: disk-cached (a hit costs no compile),
    resource-checked before NVRTC and again on the ptxas report (tirx.ResourceLimitError)."""
    import tirx  # needs TVM: imported only where candidates are compiled

    artifact = tirx.build(space.build(space.compile_config(config), problem), arch=space.arch,
                          cache_dir=cache_dir)
    return Compiled(artifact_path=str(artifact.path), resources=resources_of(artifact))


def resources_of(artifact) -> dict:
    """A tirx.Artifact's ptxas report as a Result carries it."""
    res = artifact.resources
    return {**dataclasses.asdict(res), "smem_bytes": res.smem_bytes, "spill_bytes": res.spill_bytes}


def _cause_of(exc: BaseException) -> Cause:
    if isinstance(exc, IllegalConfig):
        return Cause.ILLEGAL
    # tirx.ResourceLimitError is a CompileError of kind "resources"; matched by duck typing so
    # that the driver never imports tirx (or TVM).
    if getattr(exc, "kind", None) == "resources":
        return Cause.RESOURCES
    return Cause.COMPILE


def compile_candidate(compiler: Compiler, candidate: Candidate, cache_dir: str | None = None,
                      pack: bool = False) -> Compiled | Result:
    """Run `compiler` on a candidate: the Compiled, or a failed Result naming the cause.

    `pack` reads the artifact's files into the Compiled, for a GPU on another machine."""
    start = time.perf_counter()
    try:
        compiled = compiler(candidate.space, candidate.config, candidate.problem, cache_dir)
    except Exception as exc:
        return Result(candidate.tag, cause=_cause_of(exc), message=f"{type(exc).__name__}: {exc}",
                      compile_s=time.perf_counter() - start)
    compiled.compile_s = time.perf_counter() - start
    if pack and compiled.artifact_path:
        root = pathlib.Path(compiled.artifact_path)
        compiled.files = {str(p.relative_to(root)): p.read_bytes()
                          for p in root.rglob("*") if p.is_file()}
    return compiled


class CompileMemo:
    """Finished compiles by (space, binary problem, compile key): a candidate that differs from
    a compiled one only in runtime knobs or runtime fields reuses its outcome (binary, or
    failure) without building again. Bounded: outcomes may carry an artifact's bytes."""

    def __init__(self, size: int = 256):
        self.size = size
        self._outcomes: dict[tuple, Compiled | Result] = {}

    @staticmethod
    def key(candidate: Candidate) -> tuple:
        space = candidate.space
        return (space.name, space.binary_problem(candidate.problem).key,
                space.compile_key(candidate.config))

    def get(self, candidate: Candidate) -> Compiled | Result | None:
        outcome = self._outcomes.get(self.key(candidate))
        if isinstance(outcome, Result):
            return dataclasses.replace(outcome, tag=candidate.tag)
        return None if outcome is None else dataclasses.replace(outcome, compile_s=0.0)

    def put(self, candidate: Candidate, outcome: Compiled | Result) -> None:
        if len(self._outcomes) >= self.size:
            del self._outcomes[next(iter(self._outcomes))]  # the oldest
        self._outcomes[self.key(candidate)] = outcome


def unpack(compiled: Compiled, into: str) -> Compiled:
    """Write a packed artifact's files under `into` and point the Compiled there."""
    if not compiled.files:
        return compiled
    root = pathlib.Path(into)
    for rel, data in compiled.files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return dataclasses.replace(compiled, artifact_path=str(root), files=None)


def compile_nothing(space: SearchSpace, config: Config, problem: Problem,
                    cache_dir: str | None = None) -> Compiled:
    """The compiler of replays: a recorded time needs no binary."""
    return Compiled(artifact_path=None)
