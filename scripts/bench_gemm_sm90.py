"""Benchmark of the sm90 GEMM over the issue's shape suite: per shape, TFLOP/s of the hand-tuned
default, of the best config found, and of cuBLAS (torch.matmul) measured in the same run.

    python scripts/bench_gemm_sm90.py build .gpu/bench [SHAPE ...]   # here (needs TVM)
    python scripts/bench_gemm_sm90.py run .gpu/bench OUT              # GPU machine
    python scripts/bench_gemm_sm90.py report OUT/gemm_sm90_bench.jsonl  # table again, anywhere

"Best config found" is the best of a small candidate set per shape class (the default and its
hand-picked neighbours below), not a full tuning study: the autotuner proper searches the whole
space. Every candidate is validated (poisoned output, fresh inputs) before it is timed; timing is
the median of triton's do_bench over input sets rotated past the L2.
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

    if M <= 128:  # skinny: bandwidth and tile count
        bn = base["blk_n"]
        tries = [v(blk_k=64), v(stages=6), v(blk_n=max(bn, 32)), v(persistent=True),
                 v(consumers=2, stages=6), v(cluster="1x2"),
                 v(swap_ab=False, blk_n=64, wg_m=64, consumers=1),
                 v(swap_ab=False, blk_n=128, wg_m=64, consumers=1, epilogue="tma", stages=6)]
    elif M <= 1024:
        tries = [v(stages=4, epilogue="reg"), v(cluster="2x1"), v(cluster="1x2"),
                 v(persistent=False), v(blk_n=256, stages=3, cluster="2x1"),
                 v(blk_n=256, stages=4, epilogue="reg", cluster="2x1"),
                 v(wg_m=128, consumers=1, stages=5), v(blk_k=128, stages=3)]
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


def bench_jobs(shapes) -> list[dict]:
    out = []
    for text in shapes:
        problem = SPACE.parse_problem(text)
        for i, c in enumerate(candidates(problem)):
            out.append({"problem": text, "config": c, "time": True,
                        "tag": "default" if i == 0 else f"c{i}"})
    return out


def report(results: list[dict]) -> str:
    by_shape: dict[str, list[dict]] = {}
    for r in results:
        by_shape.setdefault(r["problem"], []).append(r)
    lines = ["| shape (MxNxK) | default TFLOP/s | best TFLOP/s | cuBLAS TFLOP/s | default/cuBLAS "
             "| best/cuBLAS | default/best | best config |",
             "|---|---|---|---|---|---|---|---|"]
    ratios_best, ratios_default = [], []
    for shape in sorted(by_shape, key=lambda s: [int(x) for x in s.split("x")]):
        rs = by_shape[shape]
        timed = [r for r in rs if r.get("ok") and "tflops" in r]
        default = next((r for r in rs if r.get("tag") == "default"), None)
        if not timed:
            lines.append(f"| {shape} | failed | failed | - | - | - | - | "
                         f"{default.get('error') if default else ''} |")
            continue
        best = max(timed, key=lambda r: r["tflops"])
        cub = best["cublas_tflops"]
        d = default["tflops"] if default and "tflops" in default else float("nan")
        ratios_best.append(best["tflops"] / cub)
        if not math.isnan(d):
            ratios_default.append(d / cub)
        cfg = ",".join(f"{k}={v}" for k, v in best["config"].items())
        lines.append(f"| {shape} | {d:.1f} | {best['tflops']:.1f} | {cub:.1f} | {d / cub:.3f} | "
                     f"{best['tflops'] / cub:.3f} | {d / best['tflops']:.3f} | {cfg} |")

    def geomean(xs):
        return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")

    lines.append(f"\ngeomean best/cuBLAS = {geomean(ratios_best):.3f} over {len(ratios_best)} "
                 f"shapes; geomean default/cuBLAS = {geomean(ratios_default):.3f}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir", type=Path)
    b.add_argument("shapes", nargs="*", default=list(SPACE.default_shapes))
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("out", type=Path)
    p = sub.add_parser("report")
    p.add_argument("jsonl", type=Path)
    args = ap.parse_args()
    if args.cmd == "build":
        jobs.build_jobs(bench_jobs(args.shapes), args.dir)
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
