"""Autotuning for TIRx GPU kernels: search-space plugins, runners, and Optuna studies."""

from .dispatch import load  # run-time dispatch of tuned kernels: autotune.load("gemm")
from .errors import UserError

__all__ = ["UserError", "load"]
