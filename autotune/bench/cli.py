"""`autotune validate` and `autotune bench`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import UserError
from ..locations import results_dir


def _common(p: argparse.ArgumentParser, out: str) -> None:
    p.add_argument("space", help="a registered space (see `autotune spaces`) or module:Class")
    p.add_argument("--shapes", nargs="+", help="shapes in the space's syntax (default: its own)")
    p.add_argument("--dtype", help="element type (default: the space's)")
    p.add_argument("--gpus", default="all", help="'all' or device indices, e.g. 0,1")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per candidate on a GPU")
    p.add_argument("--compile-workers", type=int, help="compile processes (default: cores/2)")
    p.add_argument("--artifacts", help="artifact index: kernels found there are not compiled, "
                                       "kernels compiled are added (carry it to a GPU machine)")
    p.add_argument("--out", default=str(results_dir(out)),
                   help=f"results directory (default ./{results_dir(out)})")


def add_commands(sub) -> None:
    v = sub.add_parser("validate", help="check a sample of legal configs on the GPUs here")
    _common(v, "validate")
    v.add_argument("--per-shape", type=int, default=8, help="sampled configs per shape (8)")
    v.add_argument("--seed", type=int, default=4)
    v.set_defaults(func=validate_main)
    b = sub.add_parser("bench", help="default, seeds and tuned config vs the vendor, per shape")
    _common(b, "bench")
    b.add_argument("--store", help="a config store: its tuned config per shape joins")
    b.add_argument("--no-seeds", action="store_true", help="only the default (and tuned)")
    b.add_argument("--rounds", type=int, default=3,
                   help="interleaved rounds of the timing protocol (3)")
    b.set_defaults(func=bench_main)


def _setup(args):
    from ..arguments import device_list, parse_shapes
    from ..runner.compile import compile_with_tirx
    from ..spaces import get_space
    from ..dispatch.artifacts import open_artifacts
    from .compiler import IndexedCompiler
    from .run import check_runner

    if args.compile_workers is not None and args.compile_workers < 0:
        raise UserError(f"--compile-workers {args.compile_workers}: expected 0 or more")
    space = get_space(args.space)
    problems = parse_shapes(space, args.shapes, args.dtype)
    compiler = (IndexedCompiler(str(open_artifacts(args.artifacts).resolve())) if args.artifacts
                else compile_with_tirx)
    runner = check_runner(space, compiler, device_list(args.gpus), args.compile_workers,
                          args.timeout)
    return space, problems, runner


def _write(out: Path, name: str, rows: list[dict], record: dict, text: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{name}.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row, default=str) + "\n")
    (out / f"{name}.md").write_text(f"{json.dumps(record, indent=1)}\n\n{text}\n")
    print(f"{text}\nresults: {out / name}.jsonl, {out / name}.md")


def validate_main(args) -> int:
    from ..spaces.sampling import covering_sample
    from .run import check, run_record

    space, problems, runner = _setup(args)
    with runner:
        rows = check(space, covering_sample(space, problems, args.per_shape, args.seed), runner)
        record = run_record(runner, args.argv)
    bad = [r for r in rows if not r["ok"]]
    passing = [r["rel_error"] for r in rows if r["ok"] and r["rel_error"] is not None]
    record.update(jobs=len(rows), failed=len(bad), max_rel_error_passing=max(passing, default=None))
    lines = [f"{len(rows)} configs over {len(problems)} shapes: {len(rows) - len(bad)} "
             f"{rows[0]['outcome'] if rows and not bad else 'passed'}, {len(bad)} failed"]
    lines += [f"FAILED {r['problem']} {r['tag']} {r['config']}: {r['outcome']}: {r['message']}"
              for r in bad]
    _write(Path(args.out), "validate", rows, record, "\n".join(lines))
    return 1 if bad else 0


def bench_main(args) -> int:
    from ..store import ConfigStore
    from .run import (bench_picks, bench_table, check, gpu_state, problem_of, run_record,
                      time_groups)

    space, problems, runner = _setup(args)
    store = ConfigStore.read(args.store) if args.store else None
    with runner:
        rows = check(space, bench_picks(space, problems, store, not args.no_seeds), runner)
        record = run_record(runner, args.argv)
    if runner.provenance.kind == "validated":  # it ran on a GPU: time there
        time_groups(space, rows, args.rounds, runner.pool.devices[0], args.timeout)
        record.update(rounds=args.rounds, gpu_state_after=gpu_state())
    flops = {r["problem"]: space.flops(problem_of(space, r["problem"])) for r in rows}
    _write(Path(args.out), "bench", rows, record, bench_table(rows, flops.get))
    return 0
