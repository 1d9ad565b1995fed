"""Shared pytest setup: tests marked `gpu` are skipped where no NVIDIA GPU is visible."""

import pytest

from autotune.runner.devices import visible_gpus


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and not visible_gpus():
        skip = pytest.mark.skip(reason="needs an NVIDIA GPU")
        for item in gpu_items:
            item.add_marker(skip)
