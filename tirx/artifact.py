"""A compiled kernel as files: everything a GPU machine without TVM needs to launch it.

    <dir>/artifact.json   launch description, resources, provenance
    <dir>/kernel.cubin    the device code
    <dir>/kernel.cu       the generated CUDA source (for reading, never recompiled)
    <dir>/ptxas.log       the assembler's report
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

from .symbolic import evaluate, freeze

FORMAT_VERSION = 1
# bytes per element, by TVM dtype
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1,
               "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
               "float8_e4m3fn": 1, "float8_e5m2": 1}


@dataclasses.dataclass(frozen=True)
class TensorMapSpec:
    """Arguments of cuTensorMapEncodeTiled for one TMA descriptor, minus the base pointer,
    which is the caller's argument `arg` plus `offset` bytes. Sizes are innermost first; dims
    and strides that depend on runtime sizes are tirx.symbolic expressions."""

    arg: int
    offset: int
    dtype: str  # TVM dtype of the descriptor elements, e.g. "float16"
    cu_dtype: int  # CUtensorMapDataType value
    global_dims: tuple  # int or expression each
    global_strides: tuple  # bytes, rank - 1 entries
    box_dims: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int

    @property
    def rank(self) -> int:
        return len(self.global_dims)


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """One kernel parameter, in order. kind: "pointer" (caller arg `arg` + `offset` bytes),
    "tensormap" (tensor_maps[`index`], by value), "scalar" (a `dtype` value: the caller's
    scalar argument `arg`; else `expr`, a tirx.symbolic expression of the caller's arguments,
    when set; else the constant `value`)."""

    kind: str
    arg: int = -1
    offset: int = 0
    index: int = -1
    dtype: str = ""
    value: int | float = 0
    expr: tuple | None = None


# A buffer parameter named with this prefix is the kernel's own scratch memory: the launcher
# allocates it zero-filled once per loaded kernel and passes it itself (a cross-CTA workspace
# whose flags the kernel leaves zero again; the caller never sees it).
SCRATCH_PREFIX = "scratch_"


@dataclasses.dataclass(frozen=True)
class ArgSpec:
    """What the caller passes, in the PrimFunc's order: a device buffer, or (kind "scalar",
    shape ()) a number passed by value at launch. A buffer dimension is an int, or the name of
    the size variable the caller's tensor sets at launch (equal names, equal sizes). Kind
    "scratch" (SCRATCH_PREFIX): a constant-shape buffer the launcher supplies, not the caller.
    strided: the kernel reaches this buffer only through TMA descriptors that each span it in
    its natural (contiguous) layout, so the launcher may encode them with a tensor's own strides
    and the caller may pass a strided view (strided_args); else contiguous only.
    An artifact.json written before the field has it derived on load (Artifact.load)."""

    name: str
    shape: tuple[int | str, ...]
    dtype: str
    kind: str = "buffer"
    strided: bool = False


@dataclasses.dataclass(frozen=True)
class LaunchSpec:
    symbol: str
    args: tuple[ArgSpec, ...]
    params: tuple[ParamSpec, ...]
    tensor_maps: tuple[TensorMapSpec, ...]
    grid: tuple  # in CTAs; an entry may be an expression of runtime sizes
    block: tuple[int, int, int]
    cluster: tuple[int, int, int] | None
    dynamic_smem: int

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def cluster_size(self) -> int:
        return 1 if self.cluster is None else self.cluster[0] * self.cluster[1] * self.cluster[2]


@dataclasses.dataclass(frozen=True)
class Resources:
    """The ptxas report plus launch-time shared memory."""

    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    stack_frame_bytes: int
    static_smem_bytes: int
    dynamic_smem_bytes: int
    threads: int

    @property
    def spill_bytes(self) -> int:
        return self.spill_store_bytes + self.spill_load_bytes

    @property
    def smem_bytes(self) -> int:
        return self.static_smem_bytes + self.dynamic_smem_bytes


@dataclasses.dataclass(frozen=True)
class Artifact:
    key: str  # cache key: hash of kernel source, arch and toolchain versions
    arch: str
    launch: LaunchSpec
    resources: Resources
    versions: dict[str, str]
    cubin: bytes = dataclasses.field(repr=False)
    source: str = dataclasses.field(repr=False)
    ptxas_log: str = dataclasses.field(default="", repr=False)
    path: Path | None = None

    def save(self, directory: str | os.PathLike, *, source: bool = True) -> "Artifact":
        """Write atomically: a concurrent writer of the same key never leaves a torn artifact.
        source=False leaves kernel.cu empty (copies that travel to a GPU machine: the CUDA
        source is for reading and can be larger than the cubin)."""
        directory = Path(directory)
        directory.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=directory.parent))
        (tmp / "kernel.cubin").write_bytes(self.cubin)
        (tmp / "kernel.cu").write_text(self.source if source else "")
        (tmp / "ptxas.log").write_text(self.ptxas_log)
        meta = {
            "format": FORMAT_VERSION,
            "key": self.key,
            "arch": self.arch,
            "versions": self.versions,
            "launch": dataclasses.asdict(self.launch),
            "resources": dataclasses.asdict(self.resources),
        }
        (tmp / "artifact.json").write_text(json.dumps(meta, indent=1))
        try:
            tmp.rename(directory)
        except OSError:  # another process saved the same key first: theirs is identical
            shutil.rmtree(tmp, ignore_errors=True)
        return dataclasses.replace(self, path=directory)

    @classmethod
    def load(cls, directory: str | os.PathLike) -> "Artifact":
        directory = Path(directory)
        meta = json.loads((directory / "artifact.json").read_text())
        if meta.get("format") != FORMAT_VERSION:
            raise ValueError(f"{directory}: artifact format {meta.get('format')} != {FORMAT_VERSION}")
        launch = meta["launch"]
        spec = LaunchSpec(
            symbol=launch["symbol"],
            args=tuple(ArgSpec(**{**a, "shape": tuple(a["shape"])}) for a in launch["args"]),
            params=tuple(ParamSpec(**{k: freeze(v) for k, v in p.items()})
                         for p in launch["params"]),
            tensor_maps=tuple(TensorMapSpec(**{k: freeze(v) for k, v in m.items()})
                              for m in launch["tensor_maps"]),
            grid=freeze(launch["grid"]),
            block=tuple(launch["block"]),
            cluster=tuple(launch["cluster"]) if launch["cluster"] else None,
            dynamic_smem=launch["dynamic_smem"],
        )
        if any("strided" not in a for a in launch["args"]):
            spec = mark_strided(spec)  # written before the field: the rule reads only the file
        log = directory / "ptxas.log"
        return cls(
            key=meta["key"],
            arch=meta["arch"],
            launch=spec,
            resources=Resources(**meta["resources"]),
            versions=meta["versions"],
            cubin=(directory / "kernel.cubin").read_bytes(),
            source=(directory / "kernel.cu").read_text(),
            ptxas_log=log.read_text() if log.exists() else "",
            path=directory,
        )


# Runtime sizes are compared as values: equal at a few random assignments of the size variables
# (the expressions are integer arithmetic; a coincidence at all of them is not a concern).
_TRIALS = 3


def _sizes_at(spec: LaunchSpec, seed: int):
    """Caller arguments standing for one assignment of the size variables (a scalar named like
    a size is that size, as check_args has it), and the size of a dim (int or variable name)."""
    rng, values = random.Random(seed), {}

    def size(d):
        return d if isinstance(d, int) else values.setdefault(d, rng.randrange(2, 1 << 20))

    args = [size(a.name) if a.kind == "scalar" else SimpleNamespace(shape=tuple(map(size, a.shape)))
            for a in spec.args]
    return args, size


def _natural(m: TensorMapSpec, arg: ArgSpec, args, size) -> bool:
    """Whether `m` spans `arg` in its natural layout: no offset, its elements, its dims
    innermost first, and the byte strides of a contiguous tensor."""
    itemsize = DTYPE_BYTES.get(arg.dtype)
    if m.offset or m.rank != len(arg.shape) or itemsize is None or \
            DTYPE_BYTES.get(m.dtype) != itemsize or len(m.global_strides) != m.rank - 1:
        return False
    dims = [size(d) for d in reversed(arg.shape)]
    strides, acc = [], itemsize
    for d in dims[:-1]:
        acc *= d
        strides.append(acc)
    try:
        return ([evaluate(x, args) for x in m.global_dims] == dims
                and [evaluate(x, args) for x in m.global_strides] == strides)
    except (IndexError, ZeroDivisionError, TypeError, AttributeError):
        return False


def strided_args(spec: LaunchSpec) -> frozenset[int]:
    """Indices of the buffer arguments a strided view may be passed for: the kernel gets no
    pointer to them, only TMA descriptors, and every one spans the buffer in its natural layout
    (then the tensor's own strides describe the same elements to the descriptor)."""
    pointers = {p.arg for p in spec.params if p.kind == "pointer"}
    maps: dict[int, list[TensorMapSpec]] = {}
    for m in spec.tensor_maps:
        maps.setdefault(m.arg, []).append(m)
    trials = [_sizes_at(spec, seed) for seed in range(_TRIALS)]
    return frozenset(
        i for i, a in enumerate(spec.args)
        if a.kind == "buffer" and i not in pointers and maps.get(i)
        and all(_natural(m, a, args, size) for m in maps[i] for args, size in trials))


def mark_strided(spec: LaunchSpec) -> LaunchSpec:
    """`spec` with ArgSpec.strided set by strided_args."""
    strided = strided_args(spec)
    return dataclasses.replace(spec, args=tuple(
        dataclasses.replace(a, strided=i in strided) for i, a in enumerate(spec.args)))
