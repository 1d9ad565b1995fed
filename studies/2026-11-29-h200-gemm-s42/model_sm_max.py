"""How the cost model's per-SM load ceiling (gemm_sm90_model.SM_MAX_BYTES_PER_S) orders the
recorded studies' trials, by group of studies, and the pair and split factors re-swept at the
value taken (session 35). Each cell: trial pairs > 3% apart ordered right, the model's first
pick over the study's best (session 26's measure, via .../2026-11-29-h200-gemm-s37/model_order.py).

    python studies/2026-11-29-h200-gemm-s42/model_sm_max.py > .../model_sm_max.txt  # repo root
"""

import importlib.util
import re
from pathlib import Path

from autotune.spaces import gemm_sm90_model as model

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "model_order", ROOT / "studies/2026-11-29-h200-gemm-s37/model_order.py")
order = importlib.util.module_from_spec(spec)
spec.loader.exec_module(order)


def session(path: str) -> int | None:
    found = re.search(r"-s(\d+)/", path)
    return int(found.group(1)) if found else None


def group(device: str, keep) -> list:
    return order.studies(device, keep)


GROUPS = {
    "H100 <= s12": group("h100", lambda p: session(p) is None or session(p) <= 12),
    "H100 s13-23": group("h100", lambda p: session(p) is not None and session(p) > 12),
    "H200 before s42": group("h200", lambda p: (session(p) or 0) < 42),
    "H200 list s42": group("h200", lambda p: "s42/study/" in p),
    "H200 suite": group("h200", lambda p: "suite_study" in p),
}


def row(label: str) -> str:
    cells = []
    for part in GROUPS.values():
        right, _, pick = order.score(part)
        cells.append(f"{right:.3f} / {pick:.3f}")
    return f"| {label} | " + " | ".join(cells) + " |"


if __name__ == "__main__":
    print("| setting | " + " | ".join(f"{k} ({len(v)})" for k, v in GROUPS.items()) + " |")
    print("|---|" + "---|" * len(GROUPS))
    taken = model.SM_MAX_BYTES_PER_S
    for value in (1.6e11, 1.2e11, 1e11, 8e10, 7e10, 6e10, 5e10, 4e10, 3e10):
        model.SM_MAX_BYTES_PER_S = value
        print(row(f"SM_MAX_BYTES_PER_S {value:.1e}"))
    model.SM_MAX_BYTES_PER_S = taken
    for name, values in (("PAIR_SLOWDOWN", (1.3, 1.45, 1.6, 1.8)),
                         ("SPLIT_SLOWDOWN", (1.0, 1.15, 1.3))):
        kept = getattr(model, name)
        for value in values:
            setattr(model, name, value)
            print(row(f"at {taken:.0e}: {name} {value}"))
        setattr(model, name, kept)
