"""The config store file: the best config per shape of one search space on one GPU model.

Why JSON, written by hand: it is in every Python's standard library (the GPU machines have no
TOML writer or YAML), and we lay it out for diffs - the header pretty-printed, then one entry
per line with sorted keys, entries sorted by problem. A re-tuned shape changes one line.

    {"schema": 2,
     "header": {"arch": "sm_90a", "device": "NVIDIA H200", "timer": "graph-window", ...},
     "entries": [
      {"config": {...}, "default_ms": 0.21, "measured": {"3f9a...": 0.2, ...},
       "problem": "M=16,N=4096,K=4096,dtype=bfloat16", "vendor_ms": 0.22, ...},
      ...
     ]}

Schema 2 added the header's `timer` and each entry's `measured` (the evidence dispatch weighs
for shapes nobody tuned); files of schema 1 still read, with neither.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..spaces.base import Config, Problem

SCHEMA_VERSION = 2
READABLE_SCHEMAS = (1, 2)


# Knobs a space gained after stores began naming configs by id, each with the value every
# config had before: at that value a knob is left out of the id, so the ids stores recorded
# (`measured`) still name the configs they timed. Ids do not know their space: a name here is
# one no other space's knob takes at that value (tests/test_spaces.py checks).
LATE_KNOBS = {"schedule": "cooperative", "multicast": 2,  # gemm_sm90, sessions 24-25
              "epi_tail": "narrow"}  # gemm_sm90, session 30


def config_id(config: Config) -> str:
    """A short stable name of a config (its sorted JSON's hash, LATE_KNOBS at their earlier
    values left out)."""
    named = {k: v for k, v in config.items() if k not in LATE_KNOBS or LATE_KNOBS[k] != v}
    return hashlib.sha256(json.dumps(named, sort_keys=True).encode()).hexdigest()[:12]


class CorruptStoreError(UserError):
    """A store file that cannot be parsed or breaks the schema; the message names the file."""


@dataclasses.dataclass(frozen=True)
class Header:
    """Where and with what the entries were measured.

    A loader refuses a file whose identity fields (see compat.py) differ from the running GPU
    and template; the toolchain fields are provenance."""

    space: str  # plugin name, e.g. "gemm_sm90"
    kernel: str  # "gemm", "attention"
    arch: str  # "sm_90a"
    device: str  # GPU model as the driver names it, e.g. "NVIDIA H200"
    template: str  # hash of the template's source files (compat.template_hash)
    driver: str = ""
    cuda: str = ""
    tvm: str = ""
    # where the times come from: "measured" on `device`, or "replayed from <table> (<hash>)"
    provenance: str = "measured"
    # the timing protocol of every time below (runner.protocol.PROTOCOL); "" in files of schema
    # 1, written before it was recorded
    timer: str = ""
    schema: int = SCHEMA_VERSION


@dataclasses.dataclass(frozen=True)
class Entry:
    """One tuned shape: its best config and the times it was compared with (ms, median)."""

    problem: str  # Problem.key, e.g. "M=16,N=4096,K=4096,dtype=bfloat16"
    config: Config
    time_ms: float
    default_ms: float | None = None  # the hand-tuned default config, same GPU
    vendor_ms: float | None = None  # cuBLAS / cuDNN through torch, same GPU
    source: str = ""  # where it was measured: study name, trial
    # Every config the study timed on this shape: config_id -> ms (the final round's median for
    # its finalists). Dispatch reads which configs beat the default on which shapes.
    measured: dict[str, float] | None = None

    @property
    def parsed_problem(self) -> Problem:
        return Problem.from_key(self.problem)


def _sort_key(entry: Entry) -> tuple:
    p = entry.parsed_problem
    return (p.dtype, tuple(name for name, _ in p.fields), tuple(v for _, v in p.fields))


@dataclasses.dataclass
class ConfigStore:
    header: Header
    entries: dict[str, Entry] = dataclasses.field(default_factory=dict)  # by problem key

    def add(self, entry: Entry) -> None:
        """Keep the faster of the new entry and the one already stored for its problem."""
        old = self.entries.get(entry.problem)
        if old is None or entry.time_ms < old.time_ms:
            self.entries[entry.problem] = entry

    def get(self, problem: Problem) -> Entry | None:
        return self.entries.get(problem.key)

    def sorted_entries(self) -> list[Entry]:
        return sorted(self.entries.values(), key=_sort_key)

    # -- files ----------------------------------------------------------------------------
    def dumps(self) -> str:
        header = json.dumps(dataclasses.asdict(self.header), indent=1, sort_keys=True)
        lines = [json.dumps(dataclasses.asdict(e), sort_keys=True) for e in self.sorted_entries()]
        body = ",\n".join(" " + line for line in lines)
        return (f'{{"schema": {SCHEMA_VERSION},\n"header": {header},\n"entries": [\n'
                f'{body}{chr(10) if lines else ""}]}}\n')

    def write(self, path: str | os.PathLike) -> Path:
        """Write atomically: a reader never sees half a file."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            f.write(self.dumps())
        os.replace(tmp, path)
        return path

    @classmethod
    def loads(cls, text: str, name: str = "<string>") -> "ConfigStore":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CorruptStoreError(f"config store {name} is not valid JSON: {exc}") from None
        schema = data.get("schema") if isinstance(data, dict) else None
        if schema not in READABLE_SCHEMAS:
            schema = SCHEMA_VERSION
        try:
            return cls._from_data(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptStoreError(
                f"config store {name} does not follow schema {schema}: "
                f"{type(exc).__name__}: {exc}") from None

    @classmethod
    def _from_data(cls, data: Any) -> "ConfigStore":
        if not isinstance(data, dict):
            raise TypeError("the top level is not an object")
        if data.get("schema") not in READABLE_SCHEMAS:
            raise ValueError(f"schema {data.get('schema')!r} is not one of {READABLE_SCHEMAS}")
        header = Header(**data["header"])
        store = cls(header)
        for i, raw in enumerate(data["entries"]):
            entry = Entry(**raw)
            if not isinstance(entry.config, dict) or not isinstance(entry.time_ms, (int, float)):
                raise TypeError(f"entry {i} ({entry.problem}) has no config dict or no time_ms")
            entry.parsed_problem  # a malformed key is corruption, caught here not at dispatch
            if entry.problem in store.entries:
                raise ValueError(f"entry {i}: problem {entry.problem} appears twice")
            store.entries[entry.problem] = entry
        return store

    @classmethod
    def read(cls, path: str | os.PathLike) -> "ConfigStore":
        path = Path(path)
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            raise CorruptStoreError(f"config store {path} is not UTF-8 text") from None
        return cls.loads(text, str(path))
