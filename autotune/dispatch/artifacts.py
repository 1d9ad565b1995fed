"""Compiled kernels on disk, findable by (space, problem, config) on a machine without TVM.

    <dir>/index.json      {"<space>@<template>|<problem key>|<config id>":
                           {"artifact": key, "config": {...}}}
    <dir>/<artifact key>/ a tirx.Artifact (cubin + launch description)

The template hash is part of the key: a kernel built from another version of the template (an
upgrade, a local edit) is never served under this one; it is built again.

Kernels are shape-specialized except in a space's runtime fields (SearchSpace.runtime_fields:
dims read off the tensors at launch), so every (config, binary problem) the application runs
needs an artifact; callers index by `space.binary_problem(problem)`. Where TVM is (the CPU
machines) the dispatcher builds a missing one and adds it here;
where it is not (the GPU machines) `prebuild` must have made it, and the directory travels.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from pathlib import Path

from ..spaces.base import Config, Problem, SearchSpace
from ..store.compat import template_hash
from ..store.format import config_id

INDEX = "index.json"


def index_key(space: SearchSpace, problem: Problem, config: Config) -> str:
    return f"{space.name}@{template_hash(space)}|{problem.key}|{config_id(config)}"


class ArtifactIndex:
    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self._index: dict[str, dict] | None = None

    def _read(self) -> dict[str, dict]:
        path = self.directory / INDEX
        return json.loads(path.read_text()) if path.exists() else {}

    def lookup(self, space: SearchSpace, problem: Problem, config: Config) -> Path | None:
        """The artifact directory for this (space, problem, config), if one was built under
        the space's current template."""
        if self._index is None:
            self._index = self._read()
        item = self._index.get(index_key(space, problem, config))
        if item is None:
            return None
        path = self.directory / item["artifact"]
        return path if (path / "artifact.json").exists() else None

    def add(self, space: SearchSpace, problem: Problem, config: Config, artifact) -> Path:
        """Save a tirx.Artifact here and index it. The index is re-read, updated and replaced
        atomically under a lock: builders in several processes (a study's compile workers)
        lose no entry, and a reader never sees half a file."""
        path = self.directory / artifact.key
        if not (path / "artifact.json").exists():
            artifact.save(path)
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / ".index.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            index = self._read()
            index[index_key(space, problem, config)] = {"artifact": artifact.key,
                                                        "config": config}
            fd, tmp = tempfile.mkstemp(prefix=".index-", dir=self.directory)
            with os.fdopen(fd, "w") as f:
                json.dump(index, f, indent=1, sort_keys=True)
            os.replace(tmp, self.directory / INDEX)
        self._index = index
        return path
