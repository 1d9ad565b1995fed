"""Runners by name: the `autotune.runners` entry-point group (the built-ins register there too),
or an explicit `package.module:function`. A runner factory takes (space, RunnerOptions) and
returns a Runner, usually a Scheduler over a builder and a device pool of its own."""

from __future__ import annotations

import importlib
import importlib.metadata

from ..errors import UserError

ENTRY_POINT_GROUP = "autotune.runners"


def runner_names() -> list[str]:
    return sorted(ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def runner_factory(name: str):
    """The factory registered as `name` (or `module:function`); UserError naming the choices."""
    if ":" in name:
        target = name
    else:
        eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
        if name not in eps:
            registered = ", ".join(sorted(eps)) or "none"
            raise UserError(f"unknown runner {name!r} (registered: {registered})")
        target = eps[name]
    module, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except Exception as exc:  # a broken plugin may raise anything at import time
        raise UserError(f"runner {name!r} cannot be loaded from {target}: "
                        f"{type(exc).__name__}: {exc}") from None


def make_runner(name: str, space, options):
    return runner_factory(name)(space, options)
