"""What a space's runtime knobs cost: each config's kernel with the knobs passed at launch (the
binary its compile class shares) against the same config with them compiled in
(SearchSpace.build_fixed), validated, then timed side by side with the tuner's protocol in
interleaved rounds. Build where TVM is, run on the GPU machine (torch and cuda-bindings only):

    python -m autotune.bench.runtime_knobs build DIR --space gemm_sm90 --shapes 2048x4096x4096 ...
    python -m autotune.bench.runtime_knobs run DIR --out OUT [--rounds 5]

Per shape: the default and, for each runtime knob, the default with each other value of that
knob offered (one knob changed at a time). Writes OUT/runtime_knobs.jsonl and .md (device,
date, versions, command, the table and the geomean of fixed / runtime time)."""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import statistics
import sys
from pathlib import Path

MANIFEST = "manifest.json"


def variants(space, problem) -> list[dict]:
    """The default, then the default with one runtime knob set to another offered value."""
    default = space.default_config(problem)
    out = [default]
    for knob in space.runtime_knobs:
        for value in space.parameters(problem)[knob].choices:
            config = {**default, knob: value}
            if config not in out and not space.violations(config, problem):
                out.append(config)
    return out


def build(directory: Path, space_name: str, shapes: list[str], dtype: str) -> list[dict]:
    import tirx

    from ..runner.compile import resources_of
    from ..spaces import get_space

    space = get_space(space_name)
    jobs = []
    for text in shapes:
        problem = space.parse_problem(text, dtype)
        shared = tirx.build(space.build(space.compile_config(space.default_config(problem)),
                                        problem), arch=space.arch)
        shared.save(directory / shared.key)
        for config in variants(space, problem):
            fixed = tirx.build(space.build_fixed(config, problem), arch=space.arch)
            fixed.save(directory / fixed.key)
            jobs.append({"problem": problem.key, "config": config, "runtime": shared.key,
                         "fixed": fixed.key, "resources": {"runtime": resources_of(shared),
                                                           "fixed": resources_of(fixed)}})
    (directory / MANIFEST).write_text(json.dumps({"space": space_name, "jobs": jobs}, indent=1))
    return jobs


def run(directory: Path, out: Path, rounds: int, argv: list[str]) -> str:
    import torch

    import tirx

    from ..runner.protocol import input_sets, time_on_sets
    from ..runner.timing import interleaved
    from ..runner.validate import check_outputs, poison
    from ..spaces import get_space
    from .run import gpu_state

    manifest = json.loads((directory / MANIFEST).read_text())
    space = get_space(manifest["space"])
    rows = []
    for job in manifest["jobs"]:
        problem = space.op.from_key(job["problem"])
        inputs = space.make_inputs(problem, seed=1, device="cuda")
        scalars = space.launch_scalars(job["config"])
        binders, row = {}, dict(job)
        for side in ("runtime", "fixed"):
            kernel = tirx.Kernel(tirx.Artifact.load(directory / job[side]))
            binders[side] = lambda s, k=kernel: lambda: k(*s, *scalars)
            outputs = [inputs[i] for i in space.output_indices(problem)]
            poison(outputs)
            binders[side](inputs)()
            errors, wrong = check_outputs(outputs, space.reference(problem, inputs),
                                          space.tolerance(problem))
            row[f"{side}_rel_error"] = max(errors) if errors else None
            row[f"{side}_wrong"] = wrong
        if not (row["runtime_wrong"] or row["fixed_wrong"]):
            sets = input_sets(inputs)
            per_round = interleaved({side: (lambda b=b: time_on_sets(b, sets).median_ms)
                                     for side, b in binders.items()}, rounds)
            row.update({f"{side}_ms": statistics.median(ts) for side, ts in per_round.items()},
                       rounds_ms=per_round)
        rows.append(row)
        print(f"{job['problem']} {_order(space, job['config'])}: "
              f"{row.get('runtime_ms')} / {row.get('fixed_ms')} ms", flush=True)
        del inputs
        torch.cuda.empty_cache()
    record = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "cuda": torch.version.cuda, "host": platform.node(), "rounds": rounds,
              "protocol": "graph (autotune/runner/protocol.py)", "gpu_state_after": gpu_state(),
              "command": " ".join(["python -m autotune.bench.runtime_knobs", *argv])}
    text = table(space, rows)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "runtime_knobs.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row, default=str) + "\n")
    (out / "runtime_knobs.md").write_text(f"{json.dumps(record, indent=1)}\n\n{text}\n")
    return text


def _order(space, config) -> str:
    return ",".join(f"{k}={config[k]}" for k in space.runtime_knobs)


def table(space, rows: list[dict]) -> str:
    lines = ["| shape | runtime knobs | passed at launch, ms | compiled in, ms | "
             "compiled in / at launch | registers (launch / in) |", "|---|---|---:|---:|---:|---|"]
    ratios = []
    for r in rows:
        regs = f"{r['resources']['runtime']['registers']} / {r['resources']['fixed']['registers']}"
        if r.get("runtime_ms"):
            ratios.append(r["fixed_ms"] / r["runtime_ms"])
            cells = f"{r['runtime_ms']:.5f} | {r['fixed_ms']:.5f} | {ratios[-1]:.3f}"
        else:
            cells = f"wrong: {r['runtime_wrong'] or r['fixed_wrong']} | | "
        lines.append(f"| {r['problem']} | {_order(space, r['config'])} | {cells} | {regs} |")
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        lines.append(f"\ngeomean compiled in / at launch = {geo:.4f} over {len(ratios)} configs "
                     f"(min {min(ratios):.3f}, max {max(ratios):.3f}; > 1: passing them costs "
                     "nothing)")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m autotune.bench.runtime_knobs",
                                     description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile both variants (needs TVM)")
    b.add_argument("dir", type=Path)
    b.add_argument("--space", default="gemm_sm90")
    b.add_argument("--shapes", nargs="+", required=True)
    b.add_argument("--dtype", default="bfloat16")
    r = sub.add_parser("run", help="validate and time both variants on this GPU")
    r.add_argument("dir", type=Path)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    if args.command == "build":
        jobs = build(args.dir, args.space, args.shapes, args.dtype)
        print(f"{args.dir}: {len(jobs)} configs, each compiled with its runtime knobs in")
    else:
        print(run(args.dir, args.out, args.rounds, argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
