"""Finds search-space plugins: entry points of the `autotune.spaces` group (built-ins register
there too), or an explicit `package.module:ClassName`. A plugin that fails to import is reported,
never fatal to the others."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata

from ..errors import UserError
from .base import SearchSpace

ENTRY_POINT_GROUP = "autotune.spaces"


class UnknownSpace(UserError):
    pass


class PluginLoadError(UserError):
    pass


@dataclasses.dataclass(frozen=True)
class PluginInfo:
    name: str
    target: str  # "module:attr"
    space_class: type[SearchSpace] | None
    error: str | None  # why it could not be loaded

    @property
    def loaded(self) -> bool:
        return self.space_class is not None


def _load_target(target: str) -> type[SearchSpace]:
    module_name, _, attr = target.partition(":")
    if not attr:
        raise PluginLoadError(f"{target!r} is not of the form 'package.module:ClassName'")
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except Exception as exc:  # a broken plugin may raise anything at import time
        raise PluginLoadError(f"cannot load {target}: {type(exc).__name__}: {exc}") from exc
    if not (isinstance(obj, type) and issubclass(obj, SearchSpace)):
        raise PluginLoadError(f"{target} is not a subclass of autotune.spaces.SearchSpace")
    return obj


def discover() -> dict[str, PluginInfo]:
    """Every registered plugin by name, loaded or with the reason it is not."""
    plugins = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            cls, error = _load_target(ep.value), None
        except PluginLoadError as exc:
            cls, error = None, str(exc)
        plugins[ep.name] = PluginInfo(ep.name, ep.value, cls, error)
    return dict(sorted(plugins.items()))


def get_space(name: str) -> SearchSpace:
    """An instance of the plugin registered as `name`, or of `package.module:ClassName`."""
    if ":" in name:
        return _load_target(name)()
    plugins = discover()
    if name not in plugins:
        known = ", ".join(plugins) or "none"
        raise UnknownSpace(f"unknown search space {name!r} (registered: {known})")
    info = plugins[name]
    if info.space_class is None:
        raise PluginLoadError(f"search space {name!r} is registered but broken: {info.error}")
    return info.space_class()
