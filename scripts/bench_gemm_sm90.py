"""Benchmark of the sm90 GEMM over the issue's shape suite: per shape, TFLOP/s of the hand-tuned
default, of the best config found, and of cuBLAS (torch.matmul) measured in the same run.

    python scripts/bench_gemm_sm90.py build .gpu/bench [SHAPE ...] [--store FILE] [--no-neighbours]
    python scripts/bench_gemm_sm90.py run .gpu/bench OUT              # GPU machine
    python scripts/bench_gemm_sm90.py report OUT/gemm_sm90_bench.jsonl  # table again, anywhere

Candidates per shape: the hand-tuned default, the tuned config from a config store (`--store`,
the tuner's output: studies/configs/gemm_sm90/<gpu>.json), and hand-picked neighbours of the
default (unless --no-neighbours). "Best" is the fastest of them in this run. Every candidate is
validated (poisoned output, fresh inputs) before it is timed; timing is the median of triton's
do_bench over input sets rotated past the L2.
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
    """The default first, then neighbours that change one or two decisions of it."""
    base = SPACE.default_config(problem)
    M = problem["M"]

    def v(**kw):
        return {**base, **kw}

    one_tile = dict(persistent=False, epilogue="reg")  # what split-K needs
    if M <= 128:  # skinny: bandwidth and tile count
        bn = base["blk_n"]
        tries = [v(blk_k=64), v(stages=6), v(blk_n=max(bn, 32)), v(persistent=True),
                 v(consumers=2, stages=6), v(cluster="1x2"),
                 v(swap_ab=False, blk_n=64, wg_m=64, consumers=1),
                 v(swap_ab=False, blk_n=128, wg_m=64, consumers=1, epilogue="tma", stages=6),
                 v(split_k=2), v(split_k=4), v(split_k=2, blk_k=64, stages=8),
                 v(swap_ab=False, blk_n=64, wg_m=64, consumers=1, split_k=2),
                 v(swap_ab=False, blk_n=128, wg_m=64, consumers=1, split_k=4)]
    elif M <= 1024:
        tries = [v(stages=4, epilogue="reg"), v(cluster="2x1"), v(cluster="1x2"),
                 v(persistent=False), v(blk_n=256, stages=3, cluster="2x1"),
                 v(blk_n=256, stages=4, epilogue="reg", cluster="2x1"),
                 v(wg_m=128, consumers=1, stages=5), v(blk_k=128, stages=3),
                 v(blk_n=192, stages=4), v(split_k=2, stages=6, **one_tile),
                 v(blk_n=256, stages=4, split_k=2, **one_tile),
                 v(blk_n=192, stages=4, split_k=2, **one_tile)]
    else:
        tries = [v(stages=4, epilogue="reg"), v(cluster="1x1"), v(cluster="1x2"),
                 v(persistent=False), v(raster="n"), v(group=16),
                 v(wg_m=128, blk_n=128, stages=3), v(wg_m=128, blk_n=128, stages=4, epilogue="reg"),
                 v(stages=4, epilogue="reg", cluster="1x1")]
    out = [base]
    for c in tries:
        if c not in out and not SPACE.violations(c, problem):
            out.append(c)
    return out


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
            out.append({"problem": text, "config": entry.config, "time": True, "tag": "tuned"})
    return out


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
        tf = {tag: next((r["tflops"] for r in timed if r.get("tag") == tag), math.nan)
              for tag in ("default", "tuned")}
        tf["best"] = best["tflops"]
        for tag, v in tf.items():
            if not math.isnan(v):
                ratios[tag].append(v / cub)
        cfg = ",".join(f"{k}={v}" for k, v in best["config"].items())
        lines.append(f"| {shape} | {tf['default']:.1f} | {tf['tuned']:.1f} | {tf['best']:.1f} | "
                     f"{cub:.1f} | {tf['default'] / cub:.3f} | {tf['tuned'] / cub:.3f} | "
                     f"{tf['best'] / cub:.3f} | {tf['default'] / tf['best']:.3f} | "
                     f"{best.get('tag')}: {cfg} |")

    def geomean(xs):
        return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan

    lines.append("\n" + "; ".join(f"geomean {tag}/cuBLAS = {geomean(xs):.3f} over {len(xs)} shapes"
                                  for tag, xs in ratios.items()))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir", type=Path)
    b.add_argument("shapes", nargs="*", default=list(SPACE.default_shapes))
    b.add_argument("--store", type=Path, help="a config store: its tuned config per shape joins")
    b.add_argument("--no-neighbours", action="store_true", help="only the default (and tuned)")
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("out", type=Path)
    p = sub.add_parser("report")
    p.add_argument("jsonl", type=Path)
    args = ap.parse_args()
    if args.cmd == "build":
        from autotune.store import ConfigStore

        store = ConfigStore.read(args.store) if args.store else None
        jobs.build_jobs(bench_jobs(args.shapes, store, not args.no_neighbours), args.dir)
    elif args.cmd == "run":
        args.out.mkdir(parents=True, exist_ok=True)
        info = jobs.device_info()
        results = jobs.run_jobs(args.dir, args.out / "gemm_sm90_bench.jsonl")
        text = f"{json.dumps({**info, 'command': ' '.join(sys.argv)})}\n\n{report(results)}\n"
        (args.out / "gemm_sm90_bench.md").write_text(text)
        print(text)
    else:
        rows = [json.loads(line) for line in args.jsonl.read_text().splitlines() if line.strip()]
        print(report(rows))


if __name__ == "__main__":
    main()
