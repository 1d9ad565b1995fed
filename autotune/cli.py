"""Command line: `autotune spaces`, `autotune tune <space> ...`, `autotune results`.

User mistakes (unknown space, malformed shape, illegal fixed parameter, unreachable storage)
end with one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import argparse
import sys

from .arguments import device_list, fixed_params, parse_shapes
from .errors import UserError

EXIT_USER_ERROR, EXIT_INTERRUPTED = 2, 130


def _require_toolchain() -> None:
    """A missing CUDA compiler piece is the machine's fault: say so once, before any trial."""
    from tirx.errors import CompileError
    from tirx.toolchain import cuda_root

    try:
        cuda_root()
    except CompileError as exc:
        raise UserError(str(exc)) from None


def _runner_name(args, space) -> str:
    """The runner asked for (--runner, or its shortcuts); a measuring runner with no GPU of the
    space's arch here falls back to validation in NumSim where the space has one and NumSim
    runs here, else to compile-only, saying so."""
    from .runner.devices import gpus_for_arch, visible_gpus

    named = [n for n, on in (("simulated", args.simulate), ("compile-only", args.compile_only),
                             ("ray", args.ray is not None)) if on]
    if args.runner:
        named.append(args.runner)
    if len(set(named)) > 1:
        raise UserError(f"choose one runner, not {' and '.join(sorted(set(named)))}")
    name = named[0] if named else "local"
    if name == "local" and not gpus_for_arch(space.arch):
        present = ", ".join(f"{g.name} (sm_{g.capability[0]}{g.capability[1]})"
                            for g in visible_gpus()) or "none"
        print(f"autotune: no GPU of arch {space.arch} is present (GPUs here: {present}).",
              file=sys.stderr)
        if _simulates(space):
            print("autotune: running SIMULATED VALIDATION (runner numsim): every trial is "
                  "legality-checked, compiled, resource-checked and validated in NumSim at a "
                  "small proxy shape; none is timed.", file=sys.stderr)
            return "numsim"
        print("autotune: running COMPILE-ONLY: every trial is legality-checked, compiled and "
              "resource-checked; none is timed.", file=sys.stderr)
        return "compile-only"
    return name


def _simulates(space) -> bool:
    """Whether candidates of `space` can be validated in NumSim here (runner numsim)."""
    if not callable(getattr(space, "validate_numsim", None)):
        return False
    from tirx.numsim import unavailable_reason

    return unavailable_reason() is None


def _indexed_compiler(args):
    """--artifacts' compiler (a directory or an archive), or None."""
    if not args.artifacts:
        return None
    from .bench.compiler import IndexedCompiler
    from .dispatch.artifacts import open_artifacts

    return IndexedCompiler(str(open_artifacts(args.artifacts).resolve()))


def _make_runner(args, space, compiler=None):
    from .runner import RunnerOptions, make_runner

    devices = device_list(args.gpus)
    name = _runner_name(args, space)
    if name != "simulated":  # every other runner compiles
        _require_toolchain()
    if args.compile_workers is not None and args.compile_workers < 0:
        raise UserError(f"--compile-workers {args.compile_workers}: expected 0 (compile in this "
                        "process) or more")
    options = RunnerOptions(devices=devices, compile_workers=args.compile_workers,
                            timeout_s=args.timeout, compile_timeout_s=args.compile_timeout,
                            cache_dir=args.cache_dir, seed=args.seed,
                            address=args.ray or None, table=args.simulate)
    if compiler is not None:
        options.compiler = compiler
    return make_runner(name, space, options)


def _summary_lines(space, summaries, timed: bool, untimed_verb: str = "compiled") -> list[str]:
    lines = []
    for s in summaries:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(s.outcomes.items())) or "nothing new"
        verb = "measured" if timed else untimed_verb
        head = f"{s.problem.key}: {s.finished} trials ({s.measured} {verb} now: {outcomes})"
        if timed and s.best is not None:
            flops = s.study.user_attrs.get("flops")
            rate = f", {flops / s.best_time_ms / 1e9:.4g} TFLOP/s" if flops else ""
            how = (f"final round winner, median of {s.final['rounds']}" if s.final
                   else "fastest trial")
            head += (f"\n  best {s.best_time_ms:.4g} ms{rate} (trial {s.best.number}, {how}): "
                     f"{s.best.params}")
            if s.default_time_ms and s.best_time_ms:
                head += (f"\n  default {s.default_time_ms:.4g} ms: best is "
                         f"{s.default_time_ms / s.best_time_ms:.3f}x")
            if s.vendor_ms and s.best_time_ms:
                head += (f"\n  vendor {s.vendor_ms:.4g} ms: best is "
                         f"{s.vendor_ms / s.best_time_ms:.3f}x")
        elif timed:
            head += "\n  no successful trial"
        if s.stopped:
            head += f"\n  stopped: {s.stopped}"
        lines.append(head)
    return lines


def cmd_tune(args) -> int:
    import optuna

    from .spaces import get_space
    from .study import default_storage_url, make_sampler, open_storage, tune
    from .dispatch.load import tvm_available
    from .study.final import FINAL_ROUNDS

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = get_space(args.space)
    problems = parse_shapes(space, args.shapes, args.dtype)
    fixed = fixed_params(space, problems, args.fix)
    # fail early on a sampler that cannot be made
    make_sampler(args.sampler, args.seed, fixed, space=space, problem=problems[0])
    storage_url = args.storage or default_storage_url(space.name)
    storage = open_storage(storage_url)
    compiler = _indexed_compiler(args)
    runner = _make_runner(args, space, compiler)
    final_rounds = FINAL_ROUNDS if args.final_rounds is None else args.final_rounds
    # no TVM here: the guided sampler proposes only what --artifacts holds
    prebuilt = compiler.prebuilt if compiler and not tvm_available() else None
    if prebuilt and args.sampler != "guided":
        print(f"note: no TVM here, and sampler {args.sampler!r} cannot be kept to the kernels "
              f"in {args.artifacts}: a config not there fails its trial (`guided` proposes only "
              "those)", file=sys.stderr)
    with runner:
        summaries = tune(space, problems, runner, storage=storage, trials=args.trials,
                         sampler_factory=lambda problem: make_sampler(
                             args.sampler, args.seed, fixed, space=space, problem=problem,
                             allowed=prebuilt and prebuilt(space, problem)),
                         retime_best=not args.no_retime, progress=not args.no_progress, fixed=fixed,
                         final_top=args.final_top, final_rounds=final_rounds)
    print(f"{space.name} [{runner.mode}] storage: {storage_url}")
    validated = runner.provenance.kind == "validated"
    if validated:
        print("validated in simulation (NumSim, at a small proxy shape of each problem): "
              "NOTHING WAS TIMED; trials are stored PRUNED (outcome 'validated') or FAIL with "
              "their cause, in studies named <space>/<problem>/validated")
    elif not runner.timed:
        print("compile-only: no GPU timing was done; trials are stored PRUNED (outcome "
              "'compiled') or FAIL with their cause")
    print("\n".join(_summary_lines(space, summaries, runner.timed,
                                   "validated" if validated else "compiled")))
    return 0


def cmd_spaces(args) -> int:
    from .spaces import discover

    plugins = discover()
    if not plugins:
        print("no search spaces registered (entry-point group 'autotune.spaces')")
    for name, info in plugins.items():
        if info.space_class is None:
            print(f"{name}  [BROKEN] {info.error}")
            continue
        cls = info.space_class
        print(f"{name}  ({cls.kernel}, {cls.arch})  {info.target}")
        try:
            space = cls()
            problems = space.default_problems()
            print(f"  default shapes: {', '.join(space.default_shapes) or '(none)'}")
            if problems:
                for pname, dist in space.parameters(problems[0]).items():
                    values = getattr(dist, "choices", None)
                    values = list(values) if values is not None else f"[{dist.low}, {dist.high}]"
                    print(f"  {pname}: {values}")
        except Exception as exc:  # a plugin's bug must not hide the others
            print(f"  [BROKEN] {type(exc).__name__}: {exc}")
    return 0


def cmd_results(args) -> int:
    import pandas as pd

    from .study import best_configs, default_storage_url, open_storage

    if not args.storage and not args.space:
        raise UserError("pass --storage URL or --space NAME (whose default storage is read)")
    storage = open_storage(args.storage or default_storage_url(args.space), create=False)
    table = best_configs(storage, args.space)
    if table.empty:
        print("no studies")
        return 0
    with pd.option_context("display.max_colwidth", None, "display.width", 200):
        print(table.to_string(index=False))
    return 0


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="autotune", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("spaces", help="list search-space plugins and their parameters")

    tune = sub.add_parser("tune", help="tune a search space over shapes (resumable)")
    tune.add_argument("space", help="a registered space (see `autotune spaces`) or module:Class")
    tune.add_argument("--shapes", nargs="+", help="shapes in the space's syntax (default: its own)")
    tune.add_argument("--dtype", help="element type (default: the space's)")
    tune.add_argument("--trials", type=int, default=50,
                      help="finished trials per shape (default 50)")
    tune.add_argument("--gpus", default="all", help="'all' or device indices, e.g. 0,1")
    tune.add_argument("--runner", metavar="NAME",
                      help="a registered runner (local, ray, simulated, compile-only, numsim, "
                           "or a plugin's; default local: this machine's GPUs; with none of the "
                           "space's arch, numsim where the space validates in NumSim, else "
                           "compile-only)")
    tune.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                      help="run on a Ray cluster (no ADDRESS: start a local one)")
    tune.add_argument("--compile-only", action="store_true", help="compile and check; time nothing")
    tune.add_argument("--simulate", metavar="TABLE.csv",
                      help="replay a recorded table of config -> time_ms/cause instead of running")
    tune.add_argument("--storage", help="Optuna storage URL (default sqlite:///studies/<space>.db)")
    # guided and 50 trials: on four recorded H100 shapes it came within 2% of the best in a
    # median of 1-22 trials on each, TPE missed one (studies/2026-11-23-h100-sampler-bench-s4/)
    tune.add_argument("--sampler", default="guided",
                      help="guided (default; ours: legal one-knob moves of the best measured, "
                           "ranked by the space's cost model), tpe (multivariate), "
                           "tpe-univariate, random, gp, cmaes, brute")
    tune.add_argument("--seed", type=int)
    tune.add_argument("--fix", action="append", default=[], metavar="NAME=VALUE",
                      help="pin a parameter (repeatable)")
    tune.add_argument("--timeout", type=float, default=60.0,
                      help="hard limit in seconds per candidate on a GPU (default 60)")
    tune.add_argument("--compile-workers", type=int,
                      help="CPU compile processes (default: cores/2; 0: in this process)")
    tune.add_argument("--compile-timeout", type=float, default=600.0,
                      help="hard limit in seconds per compile (default 600): a hung compile is "
                           "killed and fails its trial")
    tune.add_argument("--cache-dir", help="compile cache directory (default: tirx's)")
    tune.add_argument("--artifacts", metavar="DIR",
                      help="artifact index (a directory or its .tar.xz): candidates found "
                           "there are not compiled, those compiled are added. A --compile-only "
                           "study of the same seed fills it for a GPU machine without TVM, "
                           "where the guided sampler proposes only what it holds (the seeds, "
                           "then the model's best-ranked: give the compile-only study more "
                           "trials than the GPU's)")
    tune.add_argument("--no-retime", action="store_true", help="do not re-time a new best")
    tune.add_argument("--final-top", type=_non_negative, default=3, metavar="N",
                      help="final round: re-time the N fastest configs and the default side by "
                           "side; the fastest median among those faster than the default's "
                           "median in every round wins, else the default (default 3; 0: the "
                           "fastest trial wins)")
    tune.add_argument("--final-rounds", type=_non_negative, metavar="R",
                      help="rounds of the final round (default: autotune.study.final.FINAL_ROUNDS)")
    tune.add_argument("--no-progress", action="store_true", help="no progress bar")

    results = sub.add_parser("results", help="best config per shape of stored studies")
    results.add_argument("--space", help="only this space (and its default storage)")
    results.add_argument("--storage", help="Optuna storage URL")

    from .bench.cli import add_commands as add_bench_commands
    from .bench.sampler_cli import add_sampler_bench_command
    from .compare import add_compare_command  # pandas/matplotlib load only when it runs
    from .record.cli import add_record_commands

    add_compare_command(sub)
    add_bench_commands(sub)
    add_record_commands(sub)
    add_sampler_bench_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if getattr(args, "trials", 1) < 1:
        parser.error("--trials must be at least 1")
    command = {"tune": cmd_tune, "spaces": cmd_spaces, "results": cmd_results}.get(
        args.command, getattr(args, "func", None))
    try:
        return command(args)
    except (UserError, FileNotFoundError) as exc:  # both name what the user got wrong
        print(f"autotune: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("autotune: interrupted; run the same command again to resume", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
