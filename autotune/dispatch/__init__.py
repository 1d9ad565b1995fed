"""Run-time dispatch of tuned kernels: `op = autotune.load("gemm"); d = op(a, b)`."""

from .artifacts import ArtifactIndex, config_id
from .dispatcher import VENDOR, Dispatcher, KernelProvider, NoKernelWarning, Route
from .load import load, resolve_space
from .rules import (ATTENTION_RULE, BUCKET, DEFAULT, EXACT, GEMM_RULE, NEAREST, BucketRule, Choice,
                    Selector, next_pow2, rule_for)

__all__ = [
    "ATTENTION_RULE", "ArtifactIndex", "BUCKET", "BucketRule", "Choice", "DEFAULT", "Dispatcher",
    "EXACT", "GEMM_RULE", "KernelProvider", "NEAREST", "NoKernelWarning", "Route", "Selector",
    "VENDOR", "config_id", "load", "next_pow2", "resolve_space", "rule_for",
]
