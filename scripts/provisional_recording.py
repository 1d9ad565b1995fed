"""A PROVISIONAL recording from measurements we already have: the timing-protocol probe's JSONL
(scripts/gemm_protocol_probe.py run: per config and round, the `graph` timer's time in ms) as a
recording of gemm_sm90 (autotune.record.Recording), so that the sampler benchmark can be built
and tested before `autotune record` has measured a space on a GPU. It is small (the probe
measured tens of hand-chosen configs per shape, not a uniform sample): results on it show that
the machinery works, not which sampler is best.

    python scripts/provisional_recording.py PROBE_DIR OUT_DIR

PROBE_DIR holds protocol.jsonl and protocol_meta.json (e.g.
studies/results/fewtile_h100_2026-11-23/sweep)."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import pandas as pd

from autotune.record import Recording
from autotune.spaces import get_space

TIMER = "graph"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("probe_dir")
    parser.add_argument("out")
    args = parser.parse_args()
    space = get_space("gemm_sm90")
    probe = Path(args.probe_dir)
    probe_meta = json.loads((probe / "protocol_meta.json").read_text())
    rows = []
    for line in (probe / "protocol.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if "config" not in entry:  # the vendor's rows
            continue
        problem = space.parse_problem(entry["problem"])
        row = {"problem": problem.key, "source": "default" if entry.get("tag") == "default"
               else "probe", **entry["config"]}
        times = [r[TIMER] for r in entry.get("rounds", []) if r.get(TIMER) is not None]
        if entry.get("ok") and times:
            row.update(time_ms=statistics.median(times), min_ms=min(times), max_ms=max(times),
                       rounds=len(times))
        else:
            row["cause"] = "validation" if entry.get("ok") is False else "error"
        rows.append(row)
    frame = pd.DataFrame(rows)
    fixed = {k: frame[k].iloc[0] for k in ("l2_evict",) if frame[k].nunique() == 1}
    problems = {}
    for key, g in frame.groupby("problem", sort=False):
        problems[key] = {"legal_space": "not counted (see the GPU plan for the real spaces)",
                         "sample": f"{len(g)} configs chosen by hand around the default "
                                   "(tile rows x BLK_N x split-K x swap-AB, and seeds): "
                                   "NOT uniform",
                         "plan": {"fixed": {k: str(v) for k, v in fixed.items()}}}
    meta = {"space": space.name, "kernel": space.kernel, "arch": space.arch,
            "provisional": True,
            "note": ("PROVISIONAL: converted from the timing-protocol probe's measurements "
                     f"({probe}); tens of hand-chosen configs per shape, not a sample of the "
                     "legal space. For building and testing the sampler benchmark only."),
            "device": probe_meta["device"], "date": probe_meta["date"], "timer": TIMER,
            "command": probe_meta["command"],
            "versions": {k: probe_meta[k] for k in ("torch", "cuda") if k in probe_meta},
            "problems": problems}
    folder = Recording(frame, meta).write(args.out)
    print(f"{len(frame)} rows over {len(problems)} shapes -> {folder}")


if __name__ == "__main__":
    main()
