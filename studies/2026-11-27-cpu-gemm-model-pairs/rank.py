"""How well gemm_sm90's cost model (autotune/spaces/gemm_sm90_model.py) orders the configs the H100
studies measured, for values of its pair factor PAIR_SLOWDOWN: fitted on the studies of
sessions <= 12, held on the later ones. CPU only, from the committed trial CSVs.

    .venv/bin/python studies/2026-11-27-cpu-gemm-model-pairs/rank.py   # from the repository root

Prints and writes results.csv beside this file: per part and factor, the share of a study's
trial pairs (times > 3% apart) the model orders right, and the time of the trial it ranks first
over the study's best (geomean)."""

from __future__ import annotations

import glob
import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd

import autotune.spaces.gemm_sm90_model as model
from autotune.spaces.gemm_sm90 import GemmSm90Space

ROOT = Path(__file__).resolve().parents[2]
SPACE = GemmSm90Space()
INTS = ("wg_m", "consumers", "blk_n", "blk_k", "stages", "group", "split_k")
BOOLS = ("persistent", "swap_ab", "stream_k")
KNOBS = INTS + BOOLS + ("cluster", "raster", "epilogue", "l2_evict")
FACTORS = (1.0, 1.2, 1.4, 1.5, 1.6, 1.7, 2.0)
NOISE = 0.03  # the protocol's run-to-run noise: closer pairs are not scored


def config(row) -> dict:
    return {k: int(row[f"params_{k}"]) if k in INTS else str(row[f"params_{k}"]) == "True"
            if k in BOOLS else row[f"params_{k}"] for k in KNOBS}


def studies() -> list[tuple[int, object, list[tuple[dict, float]]]]:
    """(session, problem, [(config, time)]) of every H100 GEMM study's completed trials."""
    out = []
    for path in sorted(glob.glob(f"{ROOT}/studies/*h100-gemm*/**/*trials*.csv", recursive=True)):
        frame = pd.read_csv(path)
        frame = frame[frame.state == "COMPLETE"]
        if "params_stream_k" not in frame:  # recorded before the knob existed
            frame["params_stream_k"] = False
        session = int(m.group(1)) if (m := re.search(r"-s(\d+)/", path)) else 0
        for name, trials in frame.groupby("study"):
            m, n, k = re.search(r"M=(\d+),N=(\d+),K=(\d+)", name).groups()
            problem = SPACE.parse_problem(f"{m}x{n}x{k}")
            out.append((session, problem, [(config(r), r.value) for _, r in trials.iterrows()]))
    return out


def score(part, factor: float) -> tuple[float, int, float]:
    model.PAIR_SLOWDOWN = factor
    right = scored = 0
    picks = []
    for _, problem, trials in part:
        est = [SPACE.estimate_ms(c, problem) for c, _ in trials]
        for (e1, (_, t1)), (e2, (_, t2)) in itertools.combinations(zip(est, trials), 2):
            if abs(t1 / t2 - 1) > NOISE:
                scored += 1
                right += (e1 < e2) == (t1 < t2)
        picks.append(min(t for _, t in trials) / trials[int(np.argmin(est))][1])
    return right / scored, scored, float(np.exp(np.mean(np.log(picks))))


def twins(every) -> str:
    """A pair beside its unpaired twin (the same config in a 1x1 cluster, stages aside) where
    a study measured both: the model's speed-up (factor 1) against the measured one."""
    model.PAIR_SLOWDOWN = 1.0
    predicted, measured = [], []

    def key(c):
        return tuple((k, v) for k, v in c.items() if k not in ("stages", "cluster"))

    for _, problem, trials in every:
        alone = {key(c): (c, t) for c, t in trials if c["cluster"] == "1x1"}
        for c, t in trials:
            if c["cluster"] != "1x1" and c["split_k"] == 1 and key(c) in alone:
                twin, twin_t = alone[key(c)]
                predicted.append(SPACE.estimate_ms(twin, problem) / SPACE.estimate_ms(c, problem))
                measured.append(twin_t / t)
    gm = lambda x: float(np.exp(np.mean(np.log(x))))  # noqa: E731
    return (f"{len(measured)} pairs beside their unpaired twin: the model (factor 1) puts the "
            f"pair {gm(predicted):.3f}x as fast, measured {gm(measured):.3f}x; the pair faster in "
            f"{np.mean(np.array(measured) > 1):.0%} "
            f"(model: {np.mean(np.array(predicted) > 1):.0%})")


def main() -> None:
    every = studies()
    print(twins(every))
    parts = {"sessions <= 12 (fit)": [s for s in every if s[0] <= 12],
             "sessions 13-20 (held)": [s for s in every if s[0] > 12]}
    rows = []
    for name, part in parts.items():
        for factor in FACTORS:
            order, scored, pick = score(part, factor)
            rows.append({"part": name, "studies": len(part), "pair_slowdown": factor,
                         "pairs_scored": scored, "order_right": round(order, 3),
                         "top_pick_vs_best": round(pick, 3)})
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    table.to_csv(Path(__file__).with_name("results.csv"), index=False)


if __name__ == "__main__":
    main()
