"""A compiler that goes through an artifact index (dispatch/artifacts.py): a kernel found there
is not compiled again, and one compiled is added. Built here with TVM, the index travels to a
GPU machine without TVM, where a study searches only what it holds (`prebuilt`)."""

from __future__ import annotations

import dataclasses

from ..dispatch.artifacts import ArtifactIndex
from ..dispatch.load import tvm_available
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
            if not tvm_available():
                raise RuntimeError(f"{problem.key} {config}: not prebuilt in {self.directory}, "
                                   "and no TVM here to compile it")
            compiled = compile_with_tirx(space, config, problem, cache_dir)
            path = index.add(space, shared, binary, tirx.Artifact.load(compiled.artifact_path))
            return dataclasses.replace(compiled, artifact_path=str(path))
        return Compiled(artifact_path=str(path), resources=resources_of(tirx.Artifact.load(path)))

    def prebuilt(self, space: SearchSpace, problem: Problem):
        """Whether a config of `problem` is in the index: the sampler's filter where nothing
        else can be measured."""
        index = ArtifactIndex(self.directory)
        shared = space.binary_problem(problem)
        return lambda config: index.lookup(space, shared, space.compile_config(config)) is not None
