"""Benchmark of the sm90 GEMM over the issue's shape suite: per shape, TFLOP/s of the hand-tuned
default, of the best config found, and of cuBLAS (torch.matmul) measured in the same run.

    python scripts/bench_gemm_sm90.py build .gpu/bench [SHAPE ...] [--store FILE] [--no-neighbours]
    python scripts/bench_gemm_sm90.py run .gpu/bench OUT [--rounds R] # GPU machine
    python scripts/bench_gemm_sm90.py report OUT/gemm_sm90_bench.jsonl  # table again, anywhere

Candidates per shape: the hand-tuned default, the tuned config from a config store (`--store`,
the tuner's output: studies/configs/gemm_sm90/<gpu>.json), and the space's seed configs,
neighbours of the default (unless --no-neighbours). Each distinct config is timed once: a tuned
config that is also the default or a seed is that candidate's measurement (timing the same
kernel twice differed by up to 4% at 4096^3, which reads as a gap that is not there). "Best" is
the fastest candidate in this run.
Every candidate is validated (poisoned output, fresh inputs) before it is timed. A shape's
candidates and cuBLAS are timed in interleaved rounds (`--rounds`, each in a rotated order, so
drift in clocks and temperature hits all alike); each figure is the median over the rounds of
triton's do_bench median over input sets rotated past the L2 (and, reported beside it, of the
tuner's back-to-back timer).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import _gemm_sm90_jobs as jobs

SPACE = jobs.SPACE


def candidates(problem) -> list[dict]:
    """The default first, then the space's seed configs (neighbours of the default)."""
    return [SPACE.default_config(problem)] + SPACE.seed_configs(problem)


def bench_jobs(shapes, store=None, neighbours=True) -> list[dict]:
    out = []
    for text in shapes:
        problem = SPACE.parse_problem(text)
        configs = candidates(problem) if neighbours else [SPACE.default_config(problem)]
        for i, c in enumerate(configs):
            out.append({"problem": text, "config": c, "time": True,
                        "tag": "default" if i == 0 else f"c{i}"})
        entry = store.get(problem) if store else None
        if entry:
            same = [j for j in out if j["problem"] == text and j["config"] == entry.config]
            if same:
                same[0]["tuned"] = True
            else:
                out.append({"problem": text, "config": entry.config, "time": True,
                            "tag": "tuned", "tuned": True})
    return out


def _role_value(rows: list[dict], role: str, key: str):
    """`key` of the row playing `role`, or None. The tuned row is flagged (results written
    before candidates were shared carry only the tag)."""
    return next((r[key] for r in rows
                 if r.get("tag") == role or (role == "tuned" and r.get("tuned"))), None)


def report(results: list[dict]) -> str:
    """Per shape: default, tuned (from a store, if given), the best candidate and cuBLAS, with
    ratios and their geomeans."""
    by_shape: dict[str, list[dict]] = {}
    for r in results:
        by_shape.setdefault(r["problem"], []).append(r)
    lines = ["| shape (MxNxK) | default TFLOP/s | tuned TFLOP/s | best TFLOP/s | cuBLAS TFLOP/s "
             "| default/cuBLAS | tuned/cuBLAS | best/cuBLAS | default/best | best config |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    ratios: dict[str, list[float]] = {"default": [], "tuned": [], "best": []}
    for shape in sorted(by_shape, key=lambda s: [int(x) for x in s.split("x")]):
        rs = by_shape[shape]
        timed = [r for r in rs if r.get("ok") and "tflops" in r]
        if not timed:
            lines.append(f"| {shape} | failed | | | | | | | | {rs[0].get('error', '')} |")
            continue
        best = max(timed, key=lambda r: r["tflops"])
        cub = best["cublas_tflops"]
        tf = {role: _role_value(timed, role, "tflops") or math.nan
              for role in ("default", "tuned")}
        tf["best"] = best["tflops"]
        for tag, v in tf.items():
            if not math.isnan(v):
                ratios[tag].append(v / cub)
        cfg = ",".join(f"{k}={v}" for k, v in best["config"].items())
        lines.append(f"| {shape} | {tf['default']:.1f} | {tf['tuned']:.1f} | {tf['best']:.1f} | "
                     f"{cub:.1f} | {tf['default'] / cub:.3f} | {tf['tuned'] / cub:.3f} | "
                     f"{tf['best'] / cub:.3f} | {tf['default'] / tf['best']:.3f} | "
                     f"{best.get('tag')}{' (tuned)' if best.get('tuned') else ''}: {cfg} |")

    lines.append("\n" + _geomeans(ratios))
    b2b = _b2b_ratios(by_shape)
    if b2b["best"]:
        lines.append("With the tuner's timer (back-to-back launches over the same rotated inputs, "
                     "cuBLAS likewise): " + _geomeans(b2b))
    return "\n".join(lines)


def _geomeans(ratios: dict[str, list[float]]) -> str:
    def geomean(xs):
        return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan

    return "; ".join(f"geomean {tag}/cuBLAS = {geomean(xs):.3f} over {len(xs)} shapes"
                     for tag, xs in ratios.items())


def _b2b_ratios(by_shape: dict[str, list[dict]]) -> dict[str, list[float]]:
    """default/tuned/best vs cuBLAS, all timed back to back (rows from runs that recorded it)."""
    ratios: dict[str, list[float]] = {"default": [], "tuned": [], "best": []}
    for rs in by_shape.values():
        timed = [r for r in rs if r.get("ok") and r.get("b2b_ms")]
        if not timed:
            continue
        vendor = timed[0]["cublas_b2b_ms"]
        for role in ("default", "tuned"):
            ms = _role_value(timed, role, "b2b_ms")
            if ms:
                ratios[role].append(vendor / ms)
        ratios["best"].append(vendor / min(r["b2b_ms"] for r in timed))
    return ratios


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir", type=Path)
    b.add_argument("shapes", nargs="*", default=list(SPACE.default_shapes))
    b.add_argument("--store", type=Path, help="a config store: its tuned config per shape joins")
    b.add_argument("--no-neighbours", action="store_true", help="only the default (and tuned)")
    b.add_argument("--procs", type=int, default=1, help="compile processes")
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("out", type=Path)
    r.add_argument("--rounds", type=int, default=3,
                   help="interleaved timing rounds per shape (default 3); each figure is the "
                        "median over them")
    p = sub.add_parser("report")
    p.add_argument("jsonl", type=Path)
    args = ap.parse_args()
    if args.cmd == "build":
        from autotune.store import ConfigStore

        store = ConfigStore.read(args.store) if args.store else None
        jobs.build_jobs(bench_jobs(args.shapes, store, not args.no_neighbours), args.dir,
                        args.procs)
    elif args.cmd == "run":
        args.out.mkdir(parents=True, exist_ok=True)
        info = jobs.device_info()
        results = jobs.run_jobs(args.dir, args.out / "gemm_sm90_bench.jsonl", args.rounds)
        info.update(gpu_state_after=jobs.gpu_state(), rounds=args.rounds,
                    command=" ".join(sys.argv))
        text = f"{json.dumps(info)}\n\n{report(results)}\n"
        (args.out / "gemm_sm90_bench.md").write_text(text)
        print(text)
    else:
        rows = [json.loads(line) for line in args.jsonl.read_text().splitlines() if line.strip()]
        print(report(rows))


if __name__ == "__main__":
    main()
