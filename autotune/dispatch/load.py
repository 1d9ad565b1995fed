"""`autotune.load(kernel)`: a dispatcher for the running GPU, from its config store and the
compiled kernels at hand."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import warnings
from pathlib import Path

from ..errors import UserError
from ..spaces import discover, get_space
from ..locations import artifacts_dir, store_root
from ..spaces.base import Config, Problem, SearchSpace
from ..store import ConfigStore, Gpu, current_gpu, expected_header, store_path
from ..store.compat import StoreMismatchWarning, load_compatible, mismatches
from ..store.format import CorruptStoreError, Entry
from .artifacts import ArtifactIndex, open_artifacts
from .dispatcher import Dispatcher, KernelProvider
from .first_use import FirstUse, count_from_env
from .rules import Selector


def resolve_space(name: str, arch: str) -> SearchSpace:
    """The space that serves `name` on `arch`: `name` is a kernel ("gemm": the registered plugin
    whose op is gemm and whose arch is `arch`), a registered space, or module:Class."""
    plugins = discover()
    if ":" not in name and name not in plugins:
        serving = [info.space_class for info in plugins.values()
                   if info.loaded and getattr(info.space_class, "kernel", None) == name]
        if not serving:
            kernels = sorted({info.space_class.kernel for info in plugins.values() if info.loaded})
            raise UserError(f"no plugin serves kernel or space {name!r} (kernels: "
                            f"{', '.join(kernels) or 'none'}; spaces: {', '.join(plugins)})")
        here = [cls for cls in serving if cls.arch == arch]
        if not here:
            archs = ", ".join(sorted({cls.arch for cls in serving}))
            raise UserError(f"no {name} space for {arch} (there is one for {archs})")
        if len(here) > 1:
            raise UserError(f"several spaces serve {name} on {arch} "
                            f"({', '.join(cls.name for cls in here)}): name one")
        return here[0]()
    space = get_space(name)
    if space.arch != arch:
        raise UserError(f"space {space.name} is for {space.arch}, this GPU is {arch}")
    return space


def tvm_available() -> bool:
    return importlib.util.find_spec("tvm") is not None


def build_with_tirx(space: SearchSpace, problem: Problem, config: Config,
                    index: ArtifactIndex | None) -> Path:
    """Compile and index the binary of `config`, a compile config (SearchSpace.compile_config):
    runtime knobs are launch arguments, not part of the binary."""
    import tirx

    artifact = tirx.build(space.build(config, problem), arch=space.arch)
    return (index.add(space, space.binary_problem(problem), config, artifact) if index
            else artifact.path)


def _tirx_kernel_loader(device: int):
    def load_kernel(path: Path):
        import tirx

        return tirx.Kernel(tirx.Artifact.load(path), device=device)

    return load_kernel


def open_store(space: SearchSpace, gpu: Gpu, store) -> tuple[ConfigStore | None, str | None]:
    """The usable store (or None: defaults only) and where it came from."""
    expected = expected_header(space, gpu)
    if isinstance(store, ConfigStore):
        reasons = mismatches(store.header, expected)
        if reasons:
            warnings.warn(f"config store refused ({'; '.join(reasons)}): using the hand-tuned "
                          "defaults", StoreMismatchWarning, stacklevel=3)
            return None, None
        return store, "<in memory>"
    path = Path(store) if store is not None else store_path(store_root(), space.name, gpu.device)
    try:
        found = load_compatible(path, expected)
    except CorruptStoreError as exc:  # a call must still run: on the defaults
        warnings.warn(f"{exc}: using the hand-tuned defaults", StoreMismatchWarning, stacklevel=3)
        return None, None
    return found, (str(path) if found is not None else None)


def valid_entries(space: SearchSpace, entries: dict[str, Entry]) -> dict[str, Entry]:
    """The entries a dispatcher may use: each key a problem of the space's op, each config legal
    for its own shape (knobs the space gained since it was stored at their earlier values). The
    others are named in a warning and left out: one bad line must not make calls raise or
    silently serve a shape with another shape's config."""
    out = {}
    for key, entry in entries.items():
        entry = dataclasses.replace(entry, config=space.with_added_knobs(entry.config))
        try:
            problem = space.op.from_key(key) if space.op else Problem.from_key(key)
            if problem.key != key:
                raise ValueError(f"it reads as {problem.key}")
        except ValueError as exc:
            warnings.warn(f"config store entry {key!r} is not a {space.kernel} problem ({exc}): "
                          "ignored", StoreMismatchWarning, stacklevel=3)
            continue
        try:
            reasons = space.violations(entry.config, problem)
        except ImportError:  # the rules need TVM, absent on GPU machines: trust the store
            reasons = []
        except Exception as exc:  # e.g. a knob missing from the config
            reasons = [f"{type(exc).__name__}: {exc}"]
        if reasons:
            warnings.warn(f"config store entry {key}: its config is illegal for its own shape "
                          f"({'; '.join(reasons)}): ignored", StoreMismatchWarning, stacklevel=3)
            continue
        out[key] = entry
    return out


def load(kernel: str = "gemm", *, store: str | os.PathLike | ConfigStore | None = None,
         artifacts: str | os.PathLike | None = None, gpu: Gpu | None = None,
         build: bool | None = None, first_use: int | None = None, device: int = 0,
         load_kernel=None) -> Dispatcher:
    """A callable running `kernel` with the best config for each call's shape.

    store: a store file or ConfigStore (default <store root>/<space>/<gpu>.json, the root
        $AUTOTUNE_STORES or ./studies/configs); one that
        does not match the GPU or template is refused with a warning (defaults are used).
    artifacts: directory of prebuilt kernels (default $AUTOTUNE_ARTIFACTS, else
        ~/.cache/autotune/dispatch).
    build: compile missing kernels with TVM (default: when TVM is installed).
    first_use: on the first call of a shape the store does not hold, time this many of our
        configs and the vendor op on the GPU and serve it with the winner, remembered across
        processes in a store file of its own (first_use.py; default $AUTOTUNE_FIRST_USE, else
        0: off).
    gpu, load_kernel: for tests - the GPU to assume, and path -> kernel callable."""
    gpu = gpu or current_gpu(device)
    if gpu is None:
        raise UserError("autotune.load: no CUDA GPU here")
    space = resolve_space(kernel, gpu.arch)
    if space.op is None:
        raise UserError(f"autotune.load: space {space.name} names no op (autotune.ops.Op): "
                        "nothing says how its kernels meet torch")
    usable, origin = open_store(space, gpu, store)
    entries = valid_entries(space, usable.entries) if usable else {}
    count = count_from_env(first_use)
    tuner = FirstUse.for_gpu(space, gpu, count) if count > 0 else None
    if tuner is not None:  # what earlier processes timed here; the committed store wins
        entries = {**valid_entries(space, tuner.stored()), **entries}
    selector = Selector(entries, space.op.bucket, space.default_config)
    index = ArtifactIndex(open_artifacts(artifacts or artifacts_dir()))
    do_build = tvm_available() if build is None else build
    provider = KernelProvider(space, index, load_kernel or _tirx_kernel_loader(device),
                              build_with_tirx if do_build else None)
    return Dispatcher(space, selector, provider, store_path=origin, first_use=tuner)
