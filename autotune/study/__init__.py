"""Studies: Optuna ask/tell driven tuning of a search space over shapes, and their results."""

from .driver import StudySummary, open_study, study_name, tune, tune_problem
from .results import best_configs, trials_table
from .samplers import SAMPLERS, make_sampler
from .storage import StorageError, default_storage_url, open_storage

__all__ = [
    "SAMPLERS", "StorageError", "StudySummary", "best_configs", "default_storage_url",
    "make_sampler", "open_storage", "open_study", "study_name", "trials_table", "tune",
    "tune_problem",
]
