"""Run-time dispatch of tuned kernels: `op = autotune.load("gemm"); d = op(a, b)`."""

from .artifacts import ArtifactIndex, config_id
from .dispatcher import VENDOR, VENDOR_FASTER, Dispatcher, KernelProvider, NoKernelWarning, Route
from .first_use import FirstUse, FirstUseWarning
from .load import load, resolve_space
from .rules import BUCKET, DEFAULT, EXACT, NEAREST, Choice, Selector

__all__ = [
    "ArtifactIndex", "BUCKET", "Choice", "DEFAULT", "Dispatcher", "EXACT", "FirstUse",
    "FirstUseWarning", "KernelProvider", "NEAREST", "NoKernelWarning", "Route", "Selector",
    "VENDOR", "VENDOR_FASTER", "config_id", "load", "resolve_space",
]
