"""A compiler that goes through an artifact index (dispatch/artifacts.py): a kernel found there
is not compiled again, and one compiled is added. Built here with TVM, the index travels to a
GPU machine without TVM, where every lookup hits."""

from __future__ import annotations

import dataclasses

from ..dispatch.artifacts import ArtifactIndex
from ..runner.base import Compiled
from ..runner.compile import compile_with_tirx, resources_of
from ..spaces.base import Config, Problem, SearchSpace


@dataclasses.dataclass(frozen=True)
class IndexedCompiler:
    directory: str

    def __call__(self, space: SearchSpace, config: Config, problem: Problem,
                 cache_dir: str | None = None) -> Compiled:
        import tirx

        index = ArtifactIndex(self.directory)
        binary, shared = space.compile_config(config), space.binary_problem(problem)
        path = index.lookup(space, shared, binary)
        if path is None:
            compiled = compile_with_tirx(space, config, problem, cache_dir)
            path = index.add(space, shared, binary, tirx.Artifact.load(compiled.artifact_path))
            return dataclasses.replace(compiled, artifact_path=str(path))
        return Compiled(artifact_path=str(path), resources=resources_of(tirx.Artifact.load(path)))
