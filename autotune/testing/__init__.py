"""Test helpers: the plugin conformance kit (`SpaceConformance`, needs pytest) and a CPU-only
synthetic space (`autotune.testing.synthetic`)."""


def __getattr__(name):
    # Imported on demand so that workers unpickling the synthetic space do not import pytest.
    if name == "SpaceConformance":
        from .conformance import SpaceConformance

        return SpaceConformance
    raise AttributeError(name)


__all__ = ["SpaceConformance"]
