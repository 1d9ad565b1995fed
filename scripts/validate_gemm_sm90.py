"""Correctness sweep of the sm90 GEMM on a GPU: sampled legal configs over ragged and suite shapes.

    python scripts/validate_gemm_sm90.py build .gpu/val     # here: compile the sample (needs TVM)
    python scripts/validate_gemm_sm90.py run .gpu/val OUT   # GPU machine: check every artifact

The sample is deterministic: for each shape, configs drawn (seeded) from the legal space until
every value of every knob has been drawn at least once over the whole sweep, plus the shape's
default. Each job runs on two fresh random input draws with NaN-poisoned output.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import _gemm_sm90_jobs as jobs

# Ragged M (1, 77, 333, 1000), K not a multiple of BLK_K (1000, 136, 4104), N not a multiple
# of BLK_N (520, 1000), skinny decode and suite-sized problems.
SHAPES = ("1x4096x4096", "16x6144x4096", "77x1024x1000", "128x4096x14336", "333x520x136",
          "1000x1024x4104", "2048x2048x2048", "4096x4096x4096")
PER_SHAPE = 8
SEED = 4
FP16_SHAPES = ("77x1024x1000", "2048x2048x2048")  # fp16 inputs and output: a few configs each
FP16_PER_SHAPE = 3


def sample(shapes=SHAPES, per_shape=PER_SHAPE, seed=SEED) -> list[dict]:
    rng = random.Random(seed)
    space = jobs.SPACE
    unseen = {(k, v) for k, vals in space.knob_values(space.parse_problem(shapes[0])).items()
              for v in vals}
    out = []
    for text in shapes:
        problem = space.parse_problem(text)
        legal = list(space.legal_configs(problem))
        picks = [space.default_config(problem)]
        # prefer configs that show a knob value not yet drawn, then plain random ones
        for _ in range(per_shape):
            pool = rng.sample(legal, min(64, len(legal)))
            best = max(pool, key=lambda c: len({(k, v) for k, v in c.items()} & unseen))
            picks.append(best)
            unseen -= set(best.items())
        out += [{"problem": text, "config": c, "time": False,
                 "tag": "default" if i == 0 else f"s{i}"} for i, c in enumerate(picks)]
    if unseen:
        raise SystemExit(f"sample misses knob values {sorted(unseen, key=str)}")
    for text in FP16_SHAPES:
        problem = space.parse_problem(text, "float16")
        legal = list(space.legal_configs(problem))
        picks = [space.default_config(problem)] + rng.sample(legal, FP16_PER_SHAPE)
        out += [{"problem": text, "dtype": "float16", "config": c, "time": False,
                 "tag": f"fp16-{'default' if i == 0 else f's{i}'}"} for i, c in enumerate(picks)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir", type=Path)
    b.add_argument("--procs", type=int, default=1, help="compile processes")
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("out", type=Path)
    args = ap.parse_args()
    if args.cmd == "build":
        jobs.build_jobs(sample(), args.dir, args.procs)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    info = jobs.device_info()
    results = jobs.run_jobs(args.dir, args.out / "gemm_sm90_validate.jsonl")
    bad = [r for r in results if not r["ok"]]
    summary = {**info, "command": " ".join(sys.argv), "jobs": len(results), "failed": len(bad),
               "max_rel_err_passing": max((r["rel_err"] for r in results if r["ok"]), default=None),
               "failures": [{k: r.get(k) for k in ("problem", "config", "error")} for r in bad]}
    (args.out / "gemm_sm90_validate_summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "failures"}))
    for f in summary["failures"]:
        print("FAIL", f)


if __name__ == "__main__":
    main()
