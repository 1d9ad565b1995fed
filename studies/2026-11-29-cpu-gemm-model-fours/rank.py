"""Does gemm_sm90's cost model (autotune/spaces/gemm_sm90_model.py) order what the H200 measured,
and should clusters of four pay the pairs' factor (PAIR_SLOWDOWN, fitted on H100 studies)?
CPU only, from committed records: the H200 study of list s25 (session 24, every trial) and the
held-busy tables of sessions 25-27 built from the committed template (their diagnostic patches'
folders left out). A held-busy variant is JSON over the default of its day: resolved here over
today's default without the SWAPPED_FOURS rule, which came after them.

    .venv/bin/python studies/2026-11-29-cpu-gemm-model-fours/rank.py   # from the repository root

Prints and writes results.csv beside this file: per record set and factors, the share of
config pairs (times > 3% apart) the model orders right, and the time of the config it ranks
first over the set's best (geomean over shapes)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd

import autotune.spaces.gemm_sm90_model as model
from autotune.spaces.gemm_sm90 import GemmSm90Space, kernel_config

ROOT = Path(__file__).resolve().parents[2]
SPACE = GemmSm90Space()
NOISE = 0.03  # the protocol's run-to-run noise: closer pairs are not scored
HELD = ["2026-11-28-h200-gemm-s25/four", "2026-11-28-h200-gemm-s26/alongm",
        "2026-11-28-h200-gemm-s26/judge27", "2026-11-29-h200-gemm-s27/gpcorder",
        "2026-11-29-h200-gemm-s27/swapclusters", "2026-11-29-h200-gemm-s27/judge28",
        "2026-11-29-h200-gemm-s27/judge29"]
STUDY = "2026-11-28-h200-gemm-s24/study/s25_trials.csv"
INTS = ("wg_m", "consumers", "blk_n", "blk_k", "stages", "group", "split_k")
BOOLS = ("persistent", "swap_ab", "stream_k")
# (PAIR_SLOWDOWN, factor of swapped fours in raster 'm', factor of other fours)
FACTORS = [(1.0, 1.0, 1.0), (1.6, 1.6, 1.6), (1.6, 1.0, 1.6), (1.6, 1.2, 1.6), (1.6, 0.8, 1.6),
           (1.6, 1.0, 2.0)]


def _old_default(problem) -> dict:
    fours = SPACE._swapped_fours
    SPACE._swapped_fours = lambda p, judged=True: None if judged else fours(p, judged)
    try:
        return SPACE.default_config(problem)
    finally:
        SPACE._swapped_fours = fours


def held_busy() -> list[tuple[str, object, list[tuple[dict, float]]]]:
    out = []
    for folder in HELD:
        for path in sorted((ROOT / "studies" / folder).glob("power_*.csv")):
            frame = pd.read_csv(path)
            frame = frame[frame.variant != "vendor"]
            problem = SPACE.parse_problem(frame["shape"].iloc[0])
            base = _old_default(problem)
            out.append((folder, problem, [({**base, **json.loads(r.variant)}, r.ms)
                                          for r in frame.itertuples()]))
    return out


def study() -> list[tuple[str, object, list[tuple[dict, float]]]]:
    frame = pd.read_csv(ROOT / "studies" / STUDY)
    frame = frame[frame.state == "COMPLETE"]
    knobs = [c[len("params_"):] for c in frame.columns if c.startswith("params_")]
    out = []
    for name, trials in frame.groupby("study"):
        problem = SPACE.parse_problem("x".join(f.split("=")[1] for f in name.split(",")[:3])
                                      .split("/")[-1])
        configs = [{k: int(getattr(r, f"params_{k}")) if k in INTS else
                    str(getattr(r, f"params_{k}")) == "True" if k in BOOLS else
                    getattr(r, f"params_{k}") for k in knobs} for r in trials.itertuples()]
        out.append(("s24 study (H200, list s25)", problem, list(zip(configs, trials.value))))
    return out


def estimate(config: dict, problem, factors) -> float:
    pair, four_m, four = factors
    cfg = kernel_config(config)
    raw = model.estimate_ms(cfg, problem["M"], problem["N"], problem["K"])
    if cfg.multicast_size > 1:
        raw /= model.PAIR_SLOWDOWN
    if cfg.multicast_size == 4:
        return raw * (four_m if cfg.swap_ab and cfg.raster == "m" else four)
    return raw * (pair if cfg.multicast_size == 2 else 1.0)


def score(part, factors) -> tuple[float, int, float]:
    right = scored = 0
    picks = []
    for _, problem, rows in part:
        est = [estimate(c, problem, factors) for c, _ in rows]
        for (e1, (_, t1)), (e2, (_, t2)) in itertools.combinations(zip(est, rows), 2):
            if max(t1, t2) / min(t1, t2) < 1 + NOISE:
                continue
            scored += 1
            right += (t1 < t2) == (e1 < e2)
        picks.append(min(t for _, t in rows) / rows[int(np.argmin(est))][1])
    return right / max(scored, 1), scored, float(np.exp(np.mean(np.log(picks))))


def main() -> None:
    held = held_busy()
    parts = {"held busy s25-s27": held, "held busy s27 only": [p for p in held if "s27" in p[0]],
             "s24 study": study()}
    rows = []
    for name, part in parts.items():
        for factors in FACTORS:
            right, scored, first = score(part, factors)
            rows.append(dict(part=name, shapes=len(part), pair=factors[0],
                             four_swapped_m=factors[1], four_other=factors[2], pairs_scored=scored,
                             ordered_right=round(right, 3), first_ranked_over_best=round(first, 3)))
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    table.to_csv(Path(__file__).with_name("results.csv"), index=False)


if __name__ == "__main__":
    main()
