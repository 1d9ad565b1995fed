"""The run-time dispatcher: `op(*tensors)` runs the best kernel we have for the call's shape.

Per call: one dict lookup keyed by the call's shapes and dtypes, then the cached launcher.
On a new shape (once): where the user allows it and no study stored the shape, first-use
tuning times a few configs and the vendor op on it and stores the outcome (first_use.py); then
the selection rules rank configs (rules.py), and the first that is legal
and has a kernel (memory cache -> artifact index on disk -> build, where TVM is) becomes the
route, unless the recorded times say the vendor op is faster beyond noise (rules.py): then the
vendor op serves it. If no config has a kernel (e.g. a GPU machine with no prebuilt artifact
for the shape), the vendor op serves the call with a warning: a legal call never raises."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Hashable

from ..spaces.base import Config, Problem, SearchSpace
from .artifacts import ArtifactIndex, config_id
from .rules import Choice, Selector

if TYPE_CHECKING:
    from .first_use import FirstUse

VENDOR = "vendor"  # no kernel could serve: the vendor op does
VENDOR_FASTER = "vendor-faster"  # a kernel could serve, the vendor op was timed faster


class NoKernelWarning(UserWarning):
    """A shape is served by the vendor op because no tuned or default kernel exists for it."""


@dataclasses.dataclass(frozen=True)
class Route:
    problem: Problem
    reason: str  # rules.EXACT/BUCKET/NEAREST/DEFAULT, VENDOR_FASTER or VENDOR
    tuned: str | None  # the entry whose config runs (or lost to the vendor op), if any
    config: Config | None  # the config that runs (or lost to the vendor op)
    launch: Callable
    why: str = ""  # the records behind a config tuned elsewhere, or behind the vendor op


def with_scalars(kernel: Callable, scalars: list) -> Callable:
    """`kernel` with the config's runtime-knob values appended to every launch's buffers."""
    if not scalars:
        return kernel

    def launch(*buffers, **kwargs):
        return kernel(*buffers, *scalars, **kwargs)

    return launch


class KernelProvider:
    """Kernels for (problem, config): in memory, else from the artifact index, else built.
    Configs that differ only in runtime knobs, and problems that differ only in runtime fields,
    share one binary, loaded once."""

    def __init__(self, space: SearchSpace, index: ArtifactIndex | None,
                 load_kernel: Callable[[Path], Callable], build: Callable | None = None):
        self.space, self.index = space, index
        self.load_kernel, self.build = load_kernel, build
        self.kernels: dict[tuple[str, str], Callable] = {}

    def get(self, problem: Problem, config: Config):
        compiled = self.space.compile_config(config)
        binary = self.space.binary_problem(problem)
        key = (binary.key, config_id(compiled))
        kernel = self.kernels.get(key)
        if kernel is None:
            path = self.index.lookup(self.space, binary, compiled) if self.index else None
            if path is None and self.build is not None:
                path = self.build(self.space, problem, compiled, self.index)
            if path is None:
                return None
            kernel = self.kernels[key] = self.load_kernel(path)
        return with_scalars(kernel, self.space.launch_scalars(config))


class Dispatcher:
    """Serves calls of `space.op` with `space`'s kernels."""

    def __init__(self, space: SearchSpace, selector: Selector, provider: KernelProvider,
                 store_path: str | None = None, first_use: "FirstUse | None" = None):
        self.space, self.selector, self.provider = space, selector, provider
        self.op = space.op
        self.store_path = store_path  # None: no usable store, defaults only
        self.first_use = first_use  # None: shapes no study stored are not timed here
        self.routes: dict[Hashable, Route] = {}

    def __call__(self, *args, out=None):
        route = self.routes.get(self.op.call_key(args))
        if route is None:
            route = self.route(*args)
        return route.launch(args, out)

    def route(self, *args) -> Route:
        """Choose (and cache) the route for this call's shape."""
        key = self.op.call_key(args)
        route = self.routes.get(key)
        if route is None:
            route = self.routes[key] = self._choose(args, self.op.call_problem(args))
        return route

    def settle(self, problem: Problem) -> None:
        """Tune `problem` on first use where allowed and no entry holds it yet; the outcome
        joins the selector's entries as a tuned shape's."""
        if self.first_use is None or problem.key in self.selector.entries:
            return
        entry = self.first_use.tune(self, problem)
        if entry is not None:
            self.selector.add(entry)

    def pick(self, problem: Problem) -> tuple[Choice, Callable] | None:
        """The first ranked config that is legal and has a kernel, with the kernel."""
        for choice in self.selector.choices(problem):
            kernel = self.kernel(choice.config, problem, choice.reason)
            if kernel is not None:
                return choice, kernel
        return None

    def _choose(self, args, problem: Problem) -> Route:
        self.settle(problem)
        picked = self.pick(problem)
        if picked is not None:
            choice, kernel = picked
            faster = self.selector.vendor_faster(problem, choice.config)
            if faster:
                return Route(problem, VENDOR_FASTER, choice.tuned, choice.config,
                             self.op.vendor_launcher(args, problem), faster)
            launch = self.op.launcher(args, problem, kernel)
            return Route(problem, choice.reason, choice.tuned, choice.config, launch,
                         choice.evidence)
        warnings.warn(f"{self.space.name}: {self._why_no_kernel(problem)}: using the vendor op",
                      NoKernelWarning, stacklevel=3)
        return Route(problem, VENDOR, None, None, self.op.vendor_launcher(args, problem))

    def _why_no_kernel(self, problem: Problem) -> str:
        try:
            reasons = self.space.violations(self.space.default_config(problem), problem)
        except ImportError:
            reasons = []
        if reasons:  # the default is legal for every shape the template takes: not this one
            return f"no kernel of this template can take {problem.key} ({'; '.join(reasons)})"
        return (f"no kernel for {problem.key} here (neither tuned nor default is built; build "
                "one where TVM is, or `python -m autotune.dispatch prebuild` it)")

    def kernel(self, config: Config, problem: Problem, role: str):
        """The launch of `config` on `problem`, or None when it is illegal there or has no
        kernel; `role` (e.g. "bucket") names it in the warning a failed build gives."""
        if self.space.is_legal(config, problem) is False:
            return None
        try:
            return self.provider.get(problem, config)
        except Exception as exc:  # a failed build or load must not fail the call: next choice
            warnings.warn(f"{self.space.name}: {role} config for {problem.key} has no "
                          f"kernel ({type(exc).__name__}: {exc})", NoKernelWarning, stacklevel=4)
            return None
