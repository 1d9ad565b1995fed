"""A measured bundle (record/bundle.py, record/measure.py) read into a Recording: per job, the
median over rounds of each round's time, and as its spread the fastest and slowest round (what
one measurement by a tuner could have read: the replayed runner draws within it), or the
failure's cause; the vendor's time per shape and the machine's description in the header."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd

from ..spaces import get_space
from ..spaces.base import Config
from .bundle import HEADER, read_jobs
from .dataset import Recording
from .measure import META, RESULTS, VENDOR


def read_results(measured: Path) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Per job id, its rounds' times; and the cause of each job that failed."""
    entries = [json.loads(line) for line in (measured / RESULTS).read_text().splitlines()
               if line.strip()]
    times: dict[str, list[float]] = {}
    failures: dict[str, str] = {}
    for e in entries:
        if "cause" in e:
            failures[e["id"]] = e["cause"]
        else:
            times.setdefault(e["id"], []).append(e["time_ms"])
    return times, failures


def fastest_configs(bundle: str | Path, measured: str | Path) -> dict[str, Config]:
    """Per shape, the config of the fastest job measured so far (median over its rounds): the
    centre of the next neighbourhood to record."""
    times, failures = read_results(Path(measured))
    best: dict[str, tuple[float, Config]] = {}
    for job in read_jobs(bundle):
        t = times.get(job["id"])
        if t and job["id"] not in failures:
            median = statistics.median(t)
            if job["problem"] not in best or median < best[job["problem"]][0]:
                best[job["problem"]] = (median, job["config"])
    return {problem: config for problem, (_, config) in best.items()}


def ingest(bundle: str | Path, measured: str | Path, note: str = "") -> Recording:
    bundle, measured = Path(bundle), Path(measured)
    jobs = read_jobs(bundle)
    if not jobs:
        raise ValueError(f"{bundle} holds no jobs")
    plan = json.loads((bundle / HEADER).read_text())
    runs = json.loads((measured / META).read_text())["runs"]
    times, failures = read_results(measured)
    space = get_space(plan["target"])
    rows, unmeasured = [], 0
    for job in jobs:
        row = {"problem": job["problem"], "source": job["source"], **job["config"]}
        if job["id"] in failures:
            row["cause"] = failures[job["id"]]
        elif job["id"] in times:
            t = times[job["id"]]
            row.update(time_ms=statistics.median(t), min_ms=min(t), max_ms=max(t), rounds=len(t))
        else:
            unmeasured += 1  # the measuring ran out of time before it: not a row
            continue
        rows.append(row)
    last = runs[-1]
    problems = {}
    for key, info in plan["problems"].items():
        vendor = times.get(f"{VENDOR}|{key}")
        problems[key] = {**info, "vendor_ms": statistics.median(vendor) if vendor else None}
    meta = {"space": space.name, "kernel": space.kernel, "arch": space.arch,
            "template": plan.get("template"), "note": note,
            "device": last["device"], "date": last["date"], "timer": last["timer"],
            "command": f"{plan.get('command')} ; {last['command']}",
            "versions": {**plan.get("versions", {}),
                         **{k: last[k] for k in ("torch", "cuda", "driver", "python")}},
            "measuring_runs": runs, "unmeasured_jobs": unmeasured, "problems": problems}
    return Recording(pd.DataFrame(rows), meta)
