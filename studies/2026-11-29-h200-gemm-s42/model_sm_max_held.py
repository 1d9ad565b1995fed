"""The held-busy tables (scripts/power.py: each variant back to back beside cuBLAS, at the power
limit) as a second check of the cost model's per-SM load ceiling: per device, the share of
variant pairs > 3% apart that the model orders right (equal estimates count half), at each
SM_MAX_BYTES_PER_S. Variants the space now refuses are left out. A variant is the full config
its check logged beside the table (check_<shape>.log, in the table's order; JSON over the
default of its day, which a later default rule would change); JSON over today's default only
where no such log matches.

    python studies/2026-11-29-h200-gemm-s42/model_sm_max_held.py > .../model_sm_max_held.txt
"""

import csv
import glob
import json
from pathlib import Path

from autotune.spaces import gemm_sm90_model as model
from autotune.spaces.gemm_sm90 import GemmSm90Space
from autotune.store.format import LATE_KNOBS

ROOT = Path(__file__).resolve().parents[2]
SPACE = GemmSm90Space()


def tables(device: str) -> list:
    out = []
    for path in sorted(glob.glob(f"{ROOT}/studies/*{device}-gemm*/**/power_*.csv",
                                 recursive=True)):
        rows = list(csv.DictReader(open(path)))
        try:
            problem = SPACE.parse_problem(rows[0]["shape"])
        except (ValueError, IndexError, KeyError):
            continue
        base = SPACE.default_config(problem)
        measured = []
        for row in rows:
            try:
                measured.append(({**base, **json.loads(row["variant"])}, float(row["ms"])))
            except (json.JSONDecodeError, TypeError):
                continue  # the vendor's row
        checked = checked_configs(Path(path).parent / f"check_{rows[0]['shape']}.log")
        if len(checked) == len(measured):
            measured = [(config, ms) for config, (_, ms) in zip(checked, measured)]
        timed = [(c, ms) for c, ms in measured if not SPACE.violations(c, problem)]
        if len(timed) > 1:
            out.append((problem, timed))
    return out


def checked_configs(log: Path) -> list[dict]:
    """The full configs scripts/check_configs.py logged, in order ('<problem> {json}: ok'), the
    knobs the space gained since at the values they then had (LATE_KNOBS; `pingpong` became
    `schedule`)."""
    if not log.exists():
        return []
    out = []
    for line in log.read_text().splitlines():
        if line.startswith("M=") and "{" in line:
            config = json.loads(line[line.index("{"):line.rindex("}") + 1])
            if config.pop("pingpong", False):
                config["schedule"] = "pingpong"
            out.append({**LATE_KNOBS, **config})
    return out


def ordered_right(part) -> tuple[float, int]:
    right = pairs = 0
    for problem, timed in part:
        est = [SPACE.estimate_ms(c, problem) for c, _ in timed]
        for i in range(len(timed)):
            for j in range(i + 1, len(timed)):
                a, b = timed[i][1], timed[j][1]
                if max(a, b) / min(a, b) < 1.03:
                    continue
                pairs += 1
                right += 0.5 if est[i] == est[j] else float((est[i] < est[j]) == (a < b))
    return right / pairs, pairs


if __name__ == "__main__":
    parts = {d: tables(d) for d in ("h100", "h200")}
    print("| SM_MAX_BYTES_PER_S | " + " | ".join(
        f"{d.upper()} ({len(p)} tables, {ordered_right(p)[1]} pairs)" for d, p in parts.items())
        + " |")
    print("|---|---|---|")
    taken = model.SM_MAX_BYTES_PER_S
    for value in (1.6e11, 1.2e11, 1e11, 8e10, 7e10):
        model.SM_MAX_BYTES_PER_S = value
        print(f"| {value:.1e} | " + " | ".join(
            f"{ordered_right(p)[0]:.3f}" for p in parts.values()) + " |")
    model.SM_MAX_BYTES_PER_S = taken
