"""Autotuning for TIRx GPU kernels: search-space plugins, runners, and Optuna studies."""

from .errors import UserError

__all__ = ["UserError"]
