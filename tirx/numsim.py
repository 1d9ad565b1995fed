"""Numerical validation of a TIRx kernel on the CPU, through tirx-harness's NumSim.

NumSim (PyPI `tirx-harness`, Python >= 3.12) simulates tcgen05 / TMEM / TMA / mbarrier /
cluster kernels on the CPU: it transpiles the PrimFunc to Rust and builds it with cargo, which
fetches crates from crates.io. So it runs only where tirx-harness, a Rust toolchain and crate
access all exist; everywhere else `unavailable_reason()` says which one is missing and callers
skip. `make env` installs tirx-harness where Python is 3.12+ (see the README's Blackwell
section); tirx_harness is imported only inside the boundary calls below (tests stub them).

    reason = tirx.numsim.unavailable_reason()
    if reason is None:
        outputs = tirx.numsim.simulate(prim_func, {"A": a, "B": b, "D": d}, outputs=["D"])

Builds are cached by kernel source under `NUMSIM_CACHE_DIR` (default ~/.cache/tirx-numsim);
the first one also builds the simulator's engine (~2-3 min on 2 cores).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import shutil
import socket
import sys

import numpy as np

CRATES_HOST = ("index.crates.io", 443)
# NumSim compiles each kernel's generated Rust at -O3 unless told otherwise: minutes per kernel
# on 2 cores, for runs that take seconds at the small shapes validators use. -O0 builds in
# ~5-25 s. A caller who sets the variable keeps their choice.
OPT_LEVEL_ENV = "NUMSIM_GENERATED_OPT_LEVEL"
DEFAULT_OPT_LEVEL = "0"


class NumSimUnavailable(RuntimeError):
    """NumSim cannot run on this machine; the message says why."""


class SimulationFailed(RuntimeError):
    """The kernel did not run to completion in NumSim (deadlock, fault, unsupported op)."""


def unavailable_reason() -> str | None:
    """None when NumSim can run here, else one sentence naming what is missing."""
    if sys.version_info < (3, 12):
        return (f"tirx-harness needs Python >= 3.12 (this is "
                f"{sys.version_info.major}.{sys.version_info.minor})")
    if not _harness_installed():
        return "tirx-harness is not installed (make env installs it on Python >= 3.12)"
    missing = _missing_rust_tools()
    if missing:
        return f"no Rust toolchain: {' and '.join(missing)} not on PATH (rustup.rs installs it)"
    if not _crates_reachable():
        return (f"cargo cannot fetch crates: {CRATES_HOST[0]} is unreachable and "
                "CARGO_NET_OFFLINE is not set to use a local registry")
    return None


def _harness_installed() -> bool:
    return importlib.util.find_spec("tirx_harness") is not None


def _missing_rust_tools() -> list[str]:
    # tirx-harness also looks in rustup's default bin folder when PATH lacks the tools.
    rustup_bin = os.path.expanduser("~/.cargo/bin")
    return [tool for tool in ("cargo", "rustc")
            if shutil.which(tool) is None and shutil.which(tool, path=rustup_bin) is None]


def _crates_reachable(timeout_s: float = 3.0) -> bool:
    if os.environ.get("CARGO_NET_OFFLINE", "").lower() in ("1", "true"):
        return True  # the user vendored the crates; cargo will not go online
    try:
        with socket.create_connection(CRATES_HOST, timeout=timeout_s):
            return True
    except OSError:
        return False


def _require_available() -> None:
    reason = unavailable_reason()
    if reason is not None:
        raise NumSimUnavailable(reason)
    os.environ.setdefault(OPT_LEVEL_ENV, DEFAULT_OPT_LEVEL)


def simulate(prim_func, inputs: dict[str, np.ndarray], outputs: list[str],
             cache_dir: str | None = None) -> dict[str, np.ndarray]:
    """Run one launch of `prim_func` in NumSim; the named outputs, as float32 arrays.

    `inputs` binds every buffer parameter by name; bfloat16 buffers take uint16 bit patterns
    (numpy has no bfloat16) and come back decoded. Raises NumSimUnavailable when NumSim cannot
    run here, SimulationFailed when the kernel does not complete (a deadlock, for one)."""
    _require_available()
    results = _harness_run(prim_func, inputs, outputs, cache_dir)
    dtypes = buffer_dtypes(prim_func)
    return {name: _as_float32(results[name], dtypes[name]) for name in outputs}


def buffer_dtypes(prim_func) -> dict[str, str]:
    """Buffer parameter name -> dtype, the names NumSim binds inputs by."""
    from tvm.tirx.buffer import BufferType

    return {p.name: str(p.dtype) for p in prim_func.params if isinstance(p.ty, BufferType)}


def _as_float32(array, dtype: str) -> np.ndarray:
    array = np.asarray(array)
    if dtype == "bfloat16" and array.dtype == np.uint16:
        return bf16_value(array)  # NumSim hands a bf16 buffer back in its uint16 carrier
    return array.astype(np.float32)


def _harness_run(prim_func, inputs, outputs, cache_dir):
    """The boundary: the only code that runs kernels in tirx_harness (API of tirx-harness 0.1.2)."""
    from tirx_harness import numsim

    try:
        module = numsim.transpile(prim_func, cache_dir=cache_dir)
        return numsim.Engine(max_workers="auto").run(module, inputs, outputs=outputs).outputs
    except numsim.NumSimExecutionError as err:
        raise SimulationFailed(str(err)) from err


@dataclasses.dataclass(frozen=True)
class CheckReport:
    """One synccheck or racecheck run: its verdict (clean, review, incomplete, error) and text."""

    tool: str
    verdict: str
    text: str

    @property
    def clean(self) -> bool:
        return self.verdict == "clean"


CHECK_TOOLS = ("synccheck", "racecheck")


def check(tool: str, prim_func, inputs: dict[str, np.ndarray]) -> CheckReport:
    """Run NumSim's synchronization (`synccheck`) or shared/global-memory race (`racecheck`)
    analysis on one launch. Both follow one schedule: clean is evidence, not proof."""
    if tool not in CHECK_TOOLS:
        raise ValueError(f"unknown NumSim check {tool!r}; one of {', '.join(CHECK_TOOLS)}")
    _require_available()
    return _harness_check(tool, prim_func, inputs)


def _harness_check(tool, prim_func, inputs):
    """The boundary for the analyses (API of tirx-harness 0.1.2)."""
    import tirx_harness

    report = getattr(tirx_harness, tool)(prim_func, inputs)
    return CheckReport(tool=tool, verdict=report.verdict, text=report.format())


# -- helpers for validators ---------------------------------------------------------------------

def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), rounding to nearest even."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns -> float32 values."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def operand(rng: np.random.Generator, shape, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """A standard-normal kernel input: (what the kernel is given, the float32 value it holds)."""
    x = rng.standard_normal(shape).astype(np.float32)
    if dtype == "bfloat16":
        bits = bf16_bits(x)
        return bits, bf16_value(bits)
    half = x.astype(np.float16)
    return half, half.astype(np.float32)


def poisoned(shape, dtype: str) -> np.ndarray:
    """A NaN-filled output buffer: an element the kernel never writes fails the comparison."""
    if dtype == "bfloat16":
        return np.full(shape, 0x7FC0, dtype=np.uint16)
    return np.full(shape, np.nan, dtype=dtype)


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """||actual - expected|| / ||expected|| (Frobenius), the runner's correctness metric.

    Positions where both are the same infinity agree (an attention row that sees no key has
    LSE +inf); any other non-finite value makes the error infinite."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        return float("inf")
    same_inf = np.isinf(expected) & (actual == expected)
    actual = np.where(same_inf, 0.0, actual)
    expected = np.where(same_inf, 0.0, expected)
    if not (np.isfinite(actual).all() and np.isfinite(expected).all()):
        return float("inf")
    denom = np.linalg.norm(expected)
    err = np.linalg.norm(actual - expected)
    return float(err / denom) if denom else float(err)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Outcome of one simulated validation: skipped (with why), failed to run (with why),
    or ran with the relative error of its worst output."""

    skipped: str | None = None  # the reason NumSim could not run; None when it ran
    failure: str | None = None  # why the kernel did not complete in NumSim (e.g. a deadlock)
    error: float | None = None  # relative error of the worst output
    tolerance: float | None = None
    worst: str | None = None  # the output with that error

    @property
    def ok(self) -> bool:
        return (self.skipped is None and self.failure is None and self.error is not None
                and self.error <= self.tolerance)

    def __str__(self) -> str:
        if self.skipped is not None:
            return f"NumSim skipped: {self.skipped}"
        if self.failure is not None:
            return f"NumSim FAILED: the kernel did not complete: {self.failure}"
        state = "passed" if self.ok else "FAILED"
        where = f" in {self.worst}" if self.worst else ""
        return (f"NumSim {state}: relative error {self.error:.3g}{where} "
                f"(tolerance {self.tolerance:g})")


def compare(actual: dict[str, np.ndarray], expected: dict[str, np.ndarray],
            tolerance: float) -> Verdict:
    """The Verdict of simulated outputs against their references (worst output counts)."""
    errors = {name: relative_error(actual[name], ref) for name, ref in expected.items()}
    worst = max(errors, key=errors.get)
    return Verdict(error=errors[worst], tolerance=tolerance,
                   worst=worst if len(errors) > 1 else None)


def run_and_compare(prim_func, inputs: dict[str, np.ndarray], expected: dict[str, np.ndarray],
                    tolerance: float, cache_dir: str | None = None) -> Verdict:
    """Simulate one launch and compare its outputs (the keys of `expected`) with references;
    a skipped Verdict where NumSim cannot run, a failed one where the kernel does not complete."""
    reason = unavailable_reason()
    if reason is not None:
        return Verdict(skipped=reason)
    try:
        out = simulate(prim_func, inputs, list(expected), cache_dir=cache_dir)
    except SimulationFailed as err:
        return Verdict(failure=str(err))
    return compare(out, expected, tolerance)
