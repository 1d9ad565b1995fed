"""Search-space plugins: the contract (`SearchSpace`) and the registry that finds them."""

from .base import Config, IllegalConfig, Problem, SearchSpace
from .registry import (ENTRY_POINT_GROUP, PluginInfo, PluginLoadError, UnknownSpace, discover,
                       get_space)

__all__ = [
    "Config", "ENTRY_POINT_GROUP", "IllegalConfig", "PluginInfo", "PluginLoadError", "Problem",
    "SearchSpace", "UnknownSpace", "discover", "get_space",
]
