"""Tune on first use, where the user allows it (`autotune.load(kernel, first_use=N)` or
$AUTOTUNE_FIRST_USE=N): on the first call of a shape that no study stored, time N of our configs
and the vendor op on this GPU, side by side under the one protocol (runner/protocol.py), and
store the outcome as a study would (an Entry with every time it took). Dispatch then serves the
shape by its rules for a tuned shape: the winning config, or the vendor op where that was timed
faster beyond NOISE (rules.py).

Why: on shapes no study had seen, the committed H100 store could only serve the hand-tuned
default, 0.89x cuBLAS over 14 shapes, 9 of them under 0.9x (studies/2026-11-23-h100-gemm-s7/,
`judge2`); after short studies of such shapes, dispatch with the vendor route was 0.99x
(`after`). The default's misses are shape-specific (a ragged M, a part-idle last wave) and no
rule fitted on other shapes predicted them; a few seconds of measuring on the shape does.

Which configs: what dispatch would rank for the shape (configs tuned elsewhere whose records show
they generalise, the nearest tuned shapes' among them, then the default), then the plugin's seeds -
its alternatives that won somewhere - in the order its cost model ranks them. Only configs with a
kernel at hand count (memory, the artifact index, or a build where TVM is; `prebuild --first-use N`
makes them for machines without TVM). A config replaces the default only when faster by more than
NOISE: a 3-round read of a large GEMM moves by a few % at the H100's power cap (session 7).

The outcome persists in a store file of its own (<cache root>/first-use/<space>/<gpu>.json,
with the GPU-and-template header every store carries: a mismatch is refused, never reused),
never in the committed store; the committed store's entries win over it."""

from __future__ import annotations

import dataclasses
import fcntl
import os
import warnings
from pathlib import Path
from typing import Callable

from ..errors import UserError
from ..locations import cache_root
from ..runner.base import PROTOCOL
from ..runner.protocol import ROUNDS
from ..spaces.base import Config, Problem, SearchSpace
from ..store import ConfigStore, Gpu, StoreMismatchWarning, expected_header, mismatches
from ..store.compat import IDENTITY_FIELDS, device_slug
from ..store.format import CorruptStoreError, Entry, Header, config_id
from .rules import NOISE, Selector

ENV = "AUTOTUNE_FIRST_USE"
SOURCE = "first use"  # how an Entry made here says where it came from
VENDOR = "vendor"  # the vendor op's key among the timed variants


class FirstUseWarning(UserWarning):
    """A shape's first use was not timed (e.g. its first call came inside a CUDA graph capture,
    or no config of ours passed validation)."""


def count_from_env(value: int | None) -> int:
    """How many configs to time on first use: `value`, else $AUTOTUNE_FIRST_USE, else 0 (off)."""
    if value is not None:
        return value
    text = os.environ.get(ENV, "").strip()
    try:
        return int(text) if text else 0
    except ValueError:
        raise UserError(f"${ENV}={text!r}: give how many of our configs to time on a shape's "
                        "first call (0: off)") from None


def store_file(space: SearchSpace, gpu: Gpu) -> Path:
    return cache_root() / "first-use" / space.name / f"{device_slug(gpu.device)}.json"


def candidates(space: SearchSpace, selector: Selector, problem: Problem,
               count: int) -> list[Config]:
    """The `count` configs first use times for `problem`, best bets first (module docstring);
    every one legal for it where legality can be checked here."""
    ranked = [choice.config for choice in selector.choices(problem, nearest=True)]
    out: list[Config] = []
    for config in ranked + space.ranked_seed_configs(problem):
        if len(out) == count:
            break
        if config in out:
            continue
        if space.is_legal(config, problem) is not False:
            out.append(config)
    return out


def time_on_gpu(space: SearchSpace, problem: Problem, kernels: dict[str, Callable],
                rounds: int) -> tuple[dict[str, float], dict[str, str]]:
    """Each kernel (config id -> launch) and the vendor op (key VENDOR), validated against the
    reference, then timed side by side: ({key: ms}, {config id: why it was not timed})."""
    from ..runner.protocol import input_sets, median_times
    from ..runner.validate import validated_binders

    sets = input_sets(space.make_inputs(problem, seed=0, device="cuda"))
    ours, refused = validated_binders(kernels, space, problem, sets)
    binders = {VENDOR: lambda s: space.vendor(problem, s), **ours}
    return median_times(binders, sets, rounds), refused


def capturing() -> bool:
    """Whether the current CUDA stream is capturing a graph (no timing may run then)."""
    import torch

    return torch.cuda.is_current_stream_capturing()


@dataclasses.dataclass
class FirstUse:
    """A dispatcher's first-use tuner. `time` and `capturing` are the GPU's (tests pass others)."""

    count: int  # configs of ours timed per shape, besides the vendor op
    header: Header  # this GPU and template: what the store file must match
    path: Path | None = None  # the store file (None: this process only)
    rounds: int = ROUNDS
    time: Callable = time_on_gpu
    capturing: Callable[[], bool] = capturing

    @classmethod
    def for_gpu(cls, space: SearchSpace, gpu: Gpu, count: int, **kwargs) -> "FirstUse":
        header = dataclasses.replace(expected_header(space, gpu), provenance=SOURCE,
                                     timer=PROTOCOL)
        return cls(count, header, store_file(space, gpu), **kwargs)

    def stored(self) -> dict[str, Entry]:
        """What earlier processes measured here; {} when none, or (with a warning) when the
        file was measured elsewhere or is corrupt."""
        store = self._read()
        return dict(store.entries) if store else {}

    def _read(self) -> ConfigStore | None:
        if self.path is None or not self.path.exists():
            return None
        try:
            store = ConfigStore.read(self.path)
        except CorruptStoreError as exc:
            warnings.warn(f"{exc}: first-use results ignored (rewritten on the next)",
                          StoreMismatchWarning, stacklevel=4)
            return None
        # times taken under another timer would join a file of this one's: refused too
        reasons = mismatches(store.header, self.header, IDENTITY_FIELDS + ("timer",))
        if reasons:
            warnings.warn(f"first-use store {self.path} refused ({'; '.join(reasons)}): its "
                          "shapes are timed again", StoreMismatchWarning, stacklevel=4)
            return None
        return store

    def tune(self, dispatcher, problem: Problem) -> Entry | None:
        """Time the candidates and the vendor op on `problem` (kernels from `dispatcher`, the
        dispatch.Dispatcher that asks: dispatcher.py imports this module); the entry (saved),
        or None."""
        space = dispatcher.space
        if self.capturing():
            warnings.warn(f"{space.name}: first call of {problem.key} inside a CUDA graph "
                          "capture: not timed (call each shape once before capturing)",
                          FirstUseWarning, stacklevel=5)
            return None
        configs = {config_id(c): c
                   for c in candidates(space, dispatcher.selector, problem, self.count)}
        kernels = {cid: k for cid, c in configs.items()
                   if (k := dispatcher.kernel(c, problem, SOURCE)) is not None}
        if not kernels:
            return None
        times, refused = self.time(space, problem, kernels, self.rounds)
        for cid, why in refused.items():
            warnings.warn(f"{space.name}: {problem.key}: config {configs[cid]} {why}: not "
                          "served", FirstUseWarning, stacklevel=5)
        ours = {cid: ms for cid, ms in times.items() if cid != VENDOR}
        if not ours:
            return None
        best = min(ours, key=ours.get)
        default = config_id(space.default_config(problem))
        if default in ours and ours[best] > ours[default] * (1 - NOISE):
            best = default  # not faster beyond noise: the default stays
        entry = Entry(problem.key, configs[best], ours[best], default_ms=ours.get(default),
                      vendor_ms=times.get(VENDOR), measured=ours,
                      source=f"{SOURCE}: {len(ours)} configs and the vendor op, "
                             f"{self.rounds} rounds")
        self._save(entry)
        return entry

    def _save(self, entry: Entry) -> None:
        """Add `entry` to the store file: re-read under a lock, so processes sharing the file
        lose none of each other's shapes."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(f".{self.path.name}.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            store = self._read() or ConfigStore(self.header)
            store.entries[entry.problem] = entry
            store.write(self.path)


def is_first_use(entry: Entry) -> bool:
    return entry.source.startswith(SOURCE)
