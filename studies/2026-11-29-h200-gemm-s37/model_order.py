"""How well gemm_sm90's cost model orders what the committed GEMM studies measured: per device,
the share of a study's trial pairs (times > 3% apart, the protocol's noise) the model orders
right, and the time of the trial it ranks first over the study's best (geomean). CPU only.

    python studies/2026-11-29-h200-gemm-s37/model_order.py      # from the repository root

Session 33 ran it before and after the model counted a cluster's CTAs that have no tile, then
after SPLIT_SLOWDOWN (autotune/spaces/gemm_sm90_model.py); model_order.txt holds the outputs."""

import glob
import importlib.util
import re
from pathlib import Path

import numpy as np
import pandas as pd

import autotune.spaces.gemm_sm90_model as model
from autotune.spaces.gemm_sm90 import GemmSm90Space

ROOT = Path(__file__).resolve().parents[2]
SPACE = GemmSm90Space()
INTS = ("wg_m", "consumers", "blk_n", "blk_k", "stages", "group", "split_k", "multicast")
BOOLS = ("persistent", "swap_ab", "stream_k")
TEXT = ("cluster", "raster", "epilogue", "l2_evict", "schedule", "epi_tail")


def config(row) -> dict:
    """The trial's knobs; those recorded before a knob existed take the space's default."""
    out = {}
    for k in INTS + BOOLS + TEXT:
        v = row.get(f"params_{k}")
        if v is None or v != v:
            continue
        out[k] = int(v) if k in INTS else str(v) == "True" if k in BOOLS else v
    return out


def studies(device: str, keep=lambda path: True) -> list:
    """(problem, [(config, ms), ...]) of each committed study on `device` whose trials file's
    path `keep` accepts."""
    out = []
    pattern = f"{ROOT}/studies/*{device}-gemm*/**/*trials*.csv"
    for path in filter(keep, sorted(glob.glob(pattern, recursive=True))):
        frame = pd.read_csv(path)
        frame = frame[(frame.state == "COMPLETE")
                      & frame.study.astype(str).str.startswith("gemm_sm90")]
        for name, trials in frame.groupby("study"):
            m, n, k = re.search(r"M=(\d+),N=(\d+),K=(\d+)", name).groups()
            problem = SPACE.parse_problem(f"{m}x{n}x{k}")
            out.append((problem, [(config(r), r.value) for _, r in trials.iterrows()]))
    return out


def score(part) -> tuple[float, int, float]:
    """Session 26's measure (.../2026-11-27-cpu-gemm-model-pairs/rank.py's score) at the model's
    own pair factor: (share ordered right, pairs scored, first pick over the study's best)."""
    path = ROOT / "studies/2026-11-27-cpu-gemm-model-pairs/rank.py"
    spec = importlib.util.spec_from_file_location("rank_pairs", path)
    rank = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rank)
    return rank.score([(0, problem, trials) for problem, trials in part], model.PAIR_SLOWDOWN)


def split_bias(part) -> dict[int, float]:
    """Per split_k: the model's speed-up over the study's default trial against the measured
    one (geomean over the trials; > 1: the model rates those configs too fast)."""
    ratios: dict[int, list[float]] = {}
    for problem, trials in part:
        default = SPACE.default_config(problem)
        timed = [t for c, t in trials if {**default, **c} == default]
        if not timed:
            continue
        base_est = SPACE.estimate_ms(default, problem)
        for c, t in trials:
            model_gain = base_est / SPACE.estimate_ms({**default, **c}, problem)
            ratios.setdefault(c.get("split_k", 1), []).append(model_gain / (timed[0] / t))
    return {s: float(np.exp(np.mean(np.log(r)))) for s, r in sorted(ratios.items())}


if __name__ == "__main__":
    for device in ("h100", "h200"):
        part = studies(device)
        order, scored, pick = score(part)
        bias = ", ".join(f"split {s} {b:.3f}" for s, b in split_bias(part).items())
        print(f"{device}: {len(part)} studies, {scored} trial pairs: ordered right {order:.3f}, "
              f"the model's first pick {pick:.3f}x the study's best; model over measured: {bias}")
