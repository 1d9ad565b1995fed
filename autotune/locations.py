"""Where autotune reads and writes when not told: the working directory or the environment,
never the package's own location (in an installed wheel that is site-packages, and in a
checkout it is the repository, whose committed results a default must not overwrite)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """$AUTOTUNE_CACHE, else ~/.cache/autotune (tirx keeps its compile cache there too)."""
    return Path(os.environ.get("AUTOTUNE_CACHE", Path.home() / ".cache" / "autotune"))


def store_root() -> Path:
    """Config stores: $AUTOTUNE_STORES, else ./studies/configs."""
    return Path(os.environ.get("AUTOTUNE_STORES", "studies/configs"))


def artifacts_dir() -> Path:
    """Prebuilt kernels for dispatch: $AUTOTUNE_ARTIFACTS, else <cache root>/dispatch."""
    return Path(os.environ.get("AUTOTUNE_ARTIFACTS", cache_root() / "dispatch"))


def results_dir(command: str) -> Path:
    """What `autotune compare`, `validate` and `bench` write when given no --out."""
    return Path("autotune-results") / command
