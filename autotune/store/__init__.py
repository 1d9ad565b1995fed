"""The config store: tuned configs per (space, GPU model, shape) in diff-able JSON files under
studies/configs/, with a header that a loader checks against the running GPU and template."""

from .compat import (Gpu, StoreMismatchWarning, current_gpu, expected_header, load_compatible,
                     mismatches, store_path, template_hash)
from .format import SCHEMA_VERSION, ConfigStore, CorruptStoreError, Entry, Header, config_id
from .merge import MergeConflict, merge, merge_into

__all__ = [
    "SCHEMA_VERSION", "ConfigStore", "CorruptStoreError", "Entry", "Gpu", "Header",
    "MergeConflict", "StoreMismatchWarning", "config_id", "current_gpu", "expected_header",
    "load_compatible", "merge", "merge_into", "mismatches", "store_path", "template_hash",
]
