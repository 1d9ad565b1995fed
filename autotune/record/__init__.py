"""Recordings of a search space measured on a GPU: a uniform sample of its legal configs and the
neighbourhood of the best, per shape, compiled here (bundle.py), measured where the GPU is
(measure.py: torch and cuda-bindings only), read into a dataset (ingest.py, dataset.py) that the
replayed runner (`autotune tune --simulate`) and the sampler benchmark replay."""

from .dataset import Recording

__all__ = ["Recording"]
