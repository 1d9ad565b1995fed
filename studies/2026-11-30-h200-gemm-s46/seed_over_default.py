"""What the committed GEMM studies measured for a candidate default beside the default it would
replace (today's without session 37's rule at 256 < M <= 320, COVERING_DEFAULT_MAX_M): per
study whose trials include both configs, the default's time over the candidate's (> 1: the
candidate faster). CPU only; the trials are every study's `*trials*.csv` (model_order.studies).

    python studies/2026-11-30-h200-gemm-s46/seed_over_default.py vendor 256 1024
    python studies/2026-11-30-h200-gemm-s46/seed_over_default.py 256x192 1024 100000

`vendor`: the first cuBLAS-layout seed where no covering tile fits one wave, outside the
swapped fours (GemmSm90Space._covering_default: session 37's rule at 256 < M <= 320 and list
s48's note); `256x192`: two 128-row consumers, BLK_N 192, the deepest ring (3 stages), over the
default where it is 128x256 tiles unswapped and N >= 6144, K >= 2048 (list s49's regime)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np

from autotune.spaces import gemm_sm90

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "model_order", ROOT / "studies/2026-11-29-h200-gemm-s37/model_order.py")
model_order = importlib.util.module_from_spec(spec)
spec.loader.exec_module(model_order)
SPACE = model_order.SPACE
gemm_sm90.COVERING_DEFAULT_MAX_M = gemm_sm90.STREAMING_DEFAULT_MAX_M  # the default it replaced


def vendor(problem, default):
    return None if SPACE._swapped_fours(problem) else SPACE._covering_default(problem)


def rows_256x192(problem, default):
    large_default = (default["wg_m"], default["consumers"], default["blk_n"]) == (64, 2, 256)
    if not (large_default and not default["swap_ab"] and problem["N"] >= 6144
            and problem["K"] >= 2048):
        return None
    return SPACE._deepest(problem, {**default, "wg_m": 128, "consumers": 2, "blk_n": 192})


CANDIDATES = {"vendor": vendor, "256x192": rows_256x192}


def main(name: str, low: int, high: int) -> None:
    for device in ("h200", "h100"):
        ratios = []
        for problem, trials in model_order.studies(device):
            if not low < problem["M"] <= high:
                continue
            default = SPACE.default_config(problem)
            candidate = CANDIDATES[name](problem, default)
            if candidate is None or candidate == default:
                continue
            timed = [[t for c, t in trials if {**config, **c} == config]
                     for config in (default, candidate)]
            if all(timed):
                shape = f"{problem['M']}x{problem['N']}x{problem['K']}"
                ratios.append(min(timed[0]) / min(timed[1]))
                print(f"{device} {shape:20s} default {min(timed[0]):.4f} ms, candidate "
                      f"{min(timed[1]):.4f} ms: {ratios[-1]:.3f}")
        if ratios:
            print(f"{device}: {len(ratios)} studies, geomean {np.exp(np.mean(np.log(ratios))):.3f}"
                  f", candidate faster at {sum(r > 1 for r in ratios)}, lowest {min(ratios):.3f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
