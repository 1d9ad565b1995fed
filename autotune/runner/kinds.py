"""The built-in runners, each a builder and a device pool under the scheduler, made from one
set of options. They are registered by name in the `autotune.runners` entry-point group
(registry.py), exactly as a third party's would be: a runner factory takes (space, options)."""

from __future__ import annotations

import dataclasses
import socket

from ..errors import UserError
from ..spaces.base import SearchSpace
from .base import Evaluator, Provenance
from .builders import InlineBuilder, ProcessBuilder
from .compile import Compiler, compile_nothing, compile_with_tirx
from .devices import gpus_for_arch
from .pools import NoDevices, WorkerPool
from .scheduler import DEFAULT_COMPILE_TIMEOUT_S, DEFAULT_TIMEOUT_S, Scheduler
from .simulated import RecordedTable, ReplayDevices


@dataclasses.dataclass
class RunnerOptions:
    devices: list[int] | None = None  # GPU indices (local) or count (ray); None: all of the arch
    compile_workers: int | None = None  # None: cores/2 (local), every CPU (ray); 0: in-process
    timeout_s: float = DEFAULT_TIMEOUT_S  # per candidate on a device
    compile_timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S  # per compile
    cache_dir: str | None = None  # compile cache (default: tirx's)
    seed: int | None = None
    address: str | None = None  # Ray: a cluster's address; None or "": start a local one
    table: str | None = None  # simulated: the recorded table (CSV)
    compiler: Compiler = compile_with_tirx
    evaluator: Evaluator | None = None  # default: CudaEvaluator (the timing protocol)

    def make_evaluator(self) -> Evaluator:
        if self.evaluator is not None:
            return self.evaluator
        from .cuda_eval import CudaEvaluator

        return CudaEvaluator()

    def builder(self):
        if self.compile_workers == 0:
            return InlineBuilder(self.compiler, self.cache_dir)
        return ProcessBuilder(self.compiler, self.compile_workers, self.cache_dir)


def _scheduler(builder, pool, name: str, options: RunnerOptions, on_close=None) -> Scheduler:
    return Scheduler(builder, pool, mode=name, timeout_s=options.timeout_s,
                     compile_timeout_s=options.compile_timeout_s, seed=options.seed,
                     on_close=on_close)


def _closing(side_factory, *args):
    """Make a side; a failure closes the ones made before (passed in args)."""
    try:
        return side_factory()
    except Exception:
        for side in args:
            side.close()
        raise


def local(space: SearchSpace, options: RunnerOptions) -> Scheduler:
    """Compile in processes here; validate and time on this machine's GPUs of the space's arch,
    one isolated worker each (with an evaluator given, on the devices named, GPU or not)."""
    devices = options.devices
    names = None
    if options.evaluator is None:
        usable = {g.index: g.name for g in gpus_for_arch(space.arch)}
        devices = sorted(usable) if devices is None else devices
        missing = sorted(set(devices) - set(usable))
        if not devices or missing:
            raise UserError(f"no {space.arch} GPU with index {missing or 'any'} here "
                            f"(have {sorted(usable)})")
        names = [usable[d] for d in devices]
    devices = devices if devices is not None else [0]
    evaluator = options.make_evaluator()
    provenance = Provenance("measured", {
        "runner": "local", "timer": getattr(evaluator, "timer", None),
        "devices": sorted(set(names)) if names else [type(evaluator).__name__],
        "host": socket.gethostname()})
    builder = options.builder()
    pool = _closing(lambda: WorkerPool(evaluator, devices, provenance, names), builder)
    return _scheduler(builder, pool, "local", options)


def ray(space: SearchSpace, options: RunnerOptions) -> Scheduler:
    """Every GPU of a Ray cluster (one actor each), compiles as Ray tasks on its CPUs."""
    import ray as ray_module

    from .ray_sides import RayBuilder, RayDevices

    owned = not ray_module.is_initialized()
    if owned:
        ray_module.init(address=options.address or None, include_dashboard=False,
                        log_to_driver=False)
    shutdown = ray_module.shutdown if owned else None
    try:
        builder = RayBuilder(options.compiler, options.compile_workers or None,
                             options.cache_dir)
        pool = RayDevices(options.make_evaluator(), len(options.devices)
                          if options.devices else None)
    except Exception:
        if shutdown:
            shutdown()
        raise
    return _scheduler(builder, pool, "ray", options, on_close=shutdown)


def replay(table: RecordedTable, slots: int = 1, delay_s: float = 0.0,
           table_name: str = "<table>", seed: int = 0) -> Scheduler:
    """A runner replaying `table`: `slots` candidates at once, each `delay_s` long, its noise
    drawn from `seed`."""
    return Scheduler(InlineBuilder(compile_nothing),
                     ReplayDevices(table, slots, delay_s, table_name, seed), mode="simulated")


def simulated(space: SearchSpace, options: RunnerOptions) -> Scheduler:
    """Replays a recorded table (options.table), one candidate per device at once."""
    if not options.table:
        raise UserError("the simulated runner needs a recorded table (--simulate TABLE.csv)")
    try:
        table = RecordedTable.from_csv(options.table)
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(f"cannot read recorded table {options.table}: {exc}") from None
    return replay(table, len(options.devices) if options.devices else 1,
                  table_name=options.table, seed=options.seed or 0)


def compile_only(space: SearchSpace, options: RunnerOptions) -> Scheduler:
    """Legality, compile and resource check; nothing runs, nothing is timed."""
    return _scheduler(options.builder(), NoDevices(), "compile-only", options)
