"""`autotune bench-samplers RECORDING...`: the sampler benchmark (bench/samplers.py) on recordings
(`autotune record`'s output): tables (Markdown, CSV), every run's curve (JSONL) and the
best-found curves (PNG, one per start)."""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from pathlib import Path

from ..errors import UserError
from ..locations import results_dir


# The starts (bench/samplers.py's docstring) and samplers a run may take. Here, not beside the
# benchmark: building `autotune`'s parser must not import Optuna, which commands such as
# `autotune compare` never need (a GPU machine with torch alone runs them).
STARTS = ("cold", "default", "warm", "transfer")
SAMPLERS = ("random", "tpe-univariate", "tpe", "gp", "cmaes", "guided")


def add_sampler_bench_command(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("bench-samplers", help="trials each sampler needs to reach a recording's "
                                              "best, replayed with its noise, over seeds",
                       description=__doc__)
    p.add_argument("recordings", nargs="+", help="recording directories (or their CSV)")
    p.add_argument("--shapes", nargs="+", metavar="PROBLEM_KEY", help="only these shapes")
    p.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=SAMPLERS)
    p.add_argument("--starts", nargs="+", default=list(STARTS), choices=STARTS)
    p.add_argument("--seeds", type=int, default=20, help="seeds per sampler (default 20)")
    p.add_argument("--budget", type=int, default=200,
                   help="trials per run at most (default 200; never more than the shape's "
                        "recorded configs)")
    p.add_argument("--warm", type=int, default=8,
                   help="configs a warm or transfer start measures first (default 8)")
    p.add_argument("--processes", type=int, default=1,
                   help="worker processes running the runs (default 1)")
    p.add_argument("--out", default=str(results_dir("bench-samplers")),
                   help=f"results directory (default ./{results_dir('bench-samplers')})")
    p.set_defaults(func=bench_samplers_main)
    return p


def load_landscapes(paths: list[str], shapes: list[str] | None = None):
    """Every recorded shape of the recordings (of one space), as Landscapes."""
    from ..bench.run import problem_of
    from ..record import Recording
    from ..spaces import get_space
    from .landscape import Landscape

    recordings = [Recording.read(p) for p in paths]
    names = {r.meta.get("space") for r in recordings}
    if len(names) != 1 or None in names:
        raise UserError(f"the recordings must be of one space, with a header naming it; got "
                        f"{sorted(map(str, names))}")
    space = get_space(names.pop())
    landscapes = []
    for recording in recordings:
        for key in recording.problems:
            if shapes and key not in shapes:
                continue
            plan = recording.meta.get("problems", {}).get(key, {}).get("plan", {})
            problem = problem_of(space, key)
            fixed = {k: _value(space, problem, k, v) for k, v in plan.get("fixed", {}).items()}
            landscapes.append(Landscape.of(space, problem, recording.of(key), fixed))
    if not landscapes:
        raise UserError(f"no shape of {shapes} in the recordings")
    return space, recordings, landscapes


def _value(space, problem, knob: str, text):
    """A fixed knob's value as the space offers it (a header stores it as JSON or text)."""
    for choice in space.parameters(problem)[knob].choices:
        if str(choice) == str(text):
            return choice
    raise UserError(f"the recording fixes {knob}={text!r}, which {space.name} does not offer")


def bench_samplers_main(args) -> int:
    from .samplers import (benchmark, markdown, overall_frame, plot_curves, runs_frame,
                           summary_frame)

    if args.seeds < 1 or args.budget < 1 or args.warm < 0:
        raise UserError("--seeds and --budget must be at least 1, --warm not negative")
    space, recordings, landscapes = load_landscapes(args.recordings, args.shapes)

    def progress(run):
        print(f"{run.problem} {run.start} {run.sampler} seed {run.seed}: "
              f"{len(run.curve)} trials, to 2%: {run.trials_to(0.02)} ({run.wall_s:.1f} s)",
              file=sys.stderr)

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    runs, skipped = benchmark(landscapes, args.samplers, args.starts, args.seeds, args.budget,
                              args.warm, progress, args.processes)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frame = runs_frame(runs)
    frame.to_csv(out / "runs.csv", index=False)
    with open(out / "curves.jsonl", "w") as f:
        for r in runs:
            f.write(json.dumps({"problem": r.problem, "start": r.start, "sampler": r.sampler,
                                "seed": r.seed, "best_ms": r.best_ms,
                                "curve": [None if v == float("inf") else v for v in r.curve]})
                    + "\n")
    summary, overall = summary_frame(frame), overall_frame(frame)
    summary.to_csv(out / "summary.csv", index=False)
    for start in args.starts:
        if any(r.start == start for r in runs):
            plot_curves(runs, [start], out / f"curves_{start}.png")
    if len({r.start for r in runs}) > 1:
        plot_curves(runs, args.starts, out / "curves_starts.png")
    record = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "host": platform.node(), "python": platform.python_version(),
              "command": " ".join(["autotune", *args.argv]), "space": space.name,
              "recordings": [{"path": p, **{k: r.meta.get(k) for k in
                                            ("device", "date", "timer", "command")}}
                             for p, r in zip(args.recordings, recordings)],
              "shapes": {land.problem.key: {"recorded": len(land.configs),
                                            "best_ms": land.best_ms, "dropped": land.dropped,
                                            "fixed": {k: str(v) for k, v in land.fixed.items()}}
                         for land in landscapes},
              "not applicable": skipped}
    text = (f"```json\n{json.dumps(record, indent=1)}\n```\n\n## Over shapes\n\n"
            f"{markdown(overall)}\n\n## Per shape\n\n"
            f"{markdown(summary)}\n")
    (out / "summary.md").write_text(text)
    print(f"{markdown(overall)}\n\nresults: {out}/summary.md, summary.csv, "
          f"runs.csv, curves.jsonl, curves_*.png")
    return 0
