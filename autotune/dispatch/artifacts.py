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
where it is not (the GPU machines) `prebuild` must have made it, and the directory travels,
best as one archive (`pack`): the kernels of a study's shapes share most of their bytes, and
xz keeps ~1% of them (12.6 MB of 72 kernels -> 0.11 MB), where a call to a GPU machine carries
64 MiB in all. Whoever is given an archive reads it through `open_artifacts`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from ..errors import UserError
from ..locations import cache_root
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


ARCHIVE_SUFFIX = ".tar.xz"


def pack(directory: str | os.PathLike, archive: str | os.PathLike) -> int:
    """Write the index at `directory` and every artifact it names (nothing else lying there) as
    one xz tar; returns how many kernels it holds."""
    directory, archive = Path(directory), Path(archive)
    if not str(archive).endswith(ARCHIVE_SUFFIX):
        raise UserError(f"{archive}: an artifact archive's name ends in {ARCHIVE_SUFFIX}")
    if not (directory / INDEX).is_file():
        raise UserError(f"{directory}: no {INDEX}: not an artifact index")
    index = json.loads((directory / INDEX).read_text())
    names = sorted({item["artifact"] for item in index.values()})
    missing = [n for n in names if not (directory / n / "artifact.json").is_file()]
    if missing:
        raise UserError(f"{directory}: {len(missing)} indexed artifacts are missing, e.g. "
                        f"{missing[0]}")
    archive.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".pack-", dir=archive.parent)
    os.close(fd)
    with tarfile.open(tmp, "w:xz", preset=9) as tar:
        for name in [INDEX, *names]:
            tar.add(directory / name, arcname=name)
    os.replace(tmp, archive)
    return len(names)


def open_artifacts(path: str | os.PathLike) -> Path:
    """The artifact directory `path` names: a directory as it is; an archive (`pack`) unpacked
    once per content under <cache root>/artifacts/<digest>, read there from then on."""
    path = Path(path)
    if not str(path).endswith(ARCHIVE_SUFFIX):
        return path
    if not path.is_file():
        raise UserError(f"{path}: no such artifact archive")
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    target = cache_root() / "artifacts" / digest.hexdigest()[:16]
    if (target / INDEX).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
    try:
        with tarfile.open(path, "r:xz") as tar:
            tar.extractall(scratch, filter="data")  # no links out, no absolute paths
    except (tarfile.TarError, EOFError, OSError) as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        raise UserError(f"{path}: not a readable artifact archive ({exc})") from exc
    if not (scratch / INDEX).is_file():
        shutil.rmtree(scratch, ignore_errors=True)
        raise UserError(f"{path}: holds no {INDEX}: not an artifact archive")
    try:
        os.rename(scratch, target)  # atomic; another process may have won the race
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)
    return target
