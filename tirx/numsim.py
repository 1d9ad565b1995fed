"""Optional numerical validation of a TIRx kernel on the CPU, through tirx-harness's NumSim.

NumSim (PyPI `tirx-harness`, Python >= 3.12) simulates tcgen05 / TMEM / TMA / mbarrier /
cluster kernels on the CPU: it transpiles the PrimFunc to Rust and builds it with cargo, which
fetches crates from crates.io. So it runs only where tirx-harness, a Rust toolchain and crate
access all exist; everywhere else `unavailable_reason()` says which one is missing and callers
skip. Nothing here is a dependency of the project: tirx_harness is imported only inside
`simulate`, the one boundary call (tests stub it).

    reason = tirx.numsim.unavailable_reason()
    if reason is None:
        outputs = tirx.numsim.simulate(prim_func, {"A": a, "B": b, "D": d}, outputs=["D"])
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


class NumSimUnavailable(RuntimeError):
    """NumSim cannot run on this machine; the message says why."""


def unavailable_reason() -> str | None:
    """None when NumSim can run here, else one sentence naming what is missing."""
    if sys.version_info < (3, 12):
        return (f"tirx-harness needs Python >= 3.12 (this is "
                f"{sys.version_info.major}.{sys.version_info.minor})")
    if not _harness_installed():
        return "tirx-harness is not installed (pip install tirx-harness)"
    missing = _missing_rust_tools()
    if missing:
        return f"no Rust toolchain: {' and '.join(missing)} not on PATH"
    if not _crates_reachable():
        return (f"cargo cannot fetch crates: {CRATES_HOST[0]} is unreachable and "
                "CARGO_NET_OFFLINE is not set to use a local registry")
    return None


def _harness_installed() -> bool:
    return importlib.util.find_spec("tirx_harness") is not None


def _missing_rust_tools() -> list[str]:
    return [tool for tool in ("cargo", "rustc") if shutil.which(tool) is None]


def _crates_reachable(timeout_s: float = 3.0) -> bool:
    if os.environ.get("CARGO_NET_OFFLINE", "").lower() in ("1", "true"):
        return True  # the user vendored the crates; cargo will not go online
    try:
        with socket.create_connection(CRATES_HOST, timeout=timeout_s):
            return True
    except OSError:
        return False


def simulate(prim_func, inputs: dict[str, np.ndarray], outputs: list[str],
             cache_dir: str | None = None) -> dict[str, np.ndarray]:
    """Run one launch of `prim_func` in NumSim; the named outputs, as float32 arrays.

    `inputs` binds every buffer parameter by name; bfloat16 buffers take uint16 bit patterns
    (numpy has no bfloat16). Raises NumSimUnavailable when NumSim cannot run here."""
    reason = unavailable_reason()
    if reason is not None:
        raise NumSimUnavailable(reason)
    results = _harness_run(prim_func, inputs, outputs, cache_dir)
    return {name: np.asarray(results[name], dtype=np.float32) for name in outputs}


def _harness_run(prim_func, inputs, outputs, cache_dir):
    """The boundary: the only code that touches tirx_harness (API of tirx-harness 0.1.2)."""
    from tirx_harness import numsim

    module = numsim.transpile(prim_func, cache_dir=cache_dir)
    return numsim.Engine(max_workers="auto").run(module, inputs, outputs=outputs).outputs


# -- helpers for validators ---------------------------------------------------------------------

def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), rounding to nearest even."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns -> float32 values."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """||actual - expected|| / ||expected|| (Frobenius), the runner's correctness metric."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        return float("inf")
    denom = np.linalg.norm(expected)
    err = np.linalg.norm(actual - expected)
    if not np.isfinite(err):
        return float("inf")
    return float(err / denom) if denom else float(err)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Outcome of one simulated validation: skipped (with why), passed, or failed."""

    skipped: str | None = None  # the reason NumSim could not run; None when it ran
    error: float | None = None  # relative error of the worst output
    tolerance: float | None = None

    @property
    def ok(self) -> bool:
        return self.skipped is None and self.error is not None and self.error <= self.tolerance

    def __str__(self) -> str:
        if self.skipped is not None:
            return f"NumSim skipped: {self.skipped}"
        state = "passed" if self.ok else "FAILED"
        return f"NumSim {state}: relative error {self.error:.3g} (tolerance {self.tolerance:g})"
