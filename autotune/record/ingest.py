"""A measured bundle (record/bundle.py, record/measure.py) read into a Recording: per job, the
median over rounds of each round's time, and as its spread the fastest and slowest round (what
one measurement by a tuner could have read: the replayed runner draws within it), or the
failure's cause; the vendor's time per shape and the machine's description in the header.
A later measurement (a neighbourhood, configs timed again) merges into a recording."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pandas as pd

from ..spaces import get_space
from ..spaces.base import Config
from .bundle import HEADER, neighbourhood_source, read_jobs
from .dataset import SPREAD, Recording
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
    warm = runs_warm_ms(runs)
    rows, unmeasured = [], 0
    for job in jobs:
        row = {"problem": job["problem"], "source": job["source"], **job["config"]}
        if job["id"] in failures:
            row["cause"] = failures[job["id"]]
        elif job["id"] in times:
            t = times[job["id"]]
            row.update(time_ms=statistics.median(t), min_ms=min(t), max_ms=max(t), rounds=len(t),
                       warm_ms=warm)
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


def runs_warm_ms(runs: list[dict]) -> float | None:
    """The warm-up (ms) every run of a measured bundle timed with (0: runs from before
    measure.py had one), or None if they differ."""
    warm = {run.get("warm_ms", 0.0) for run in runs}
    return warm.pop() if len(warm) == 1 else None


def _neighbourhood_index(source) -> int:
    """i of a source "neighbourhood-i" (bundle.neighbourhood_source), else 0."""
    match = re.fullmatch(r"neighbourhood-(\d+)", str(source))
    return int(match.group(1)) if match else 0


def _renumbered(source: str, after: int) -> str:
    """A neighbourhood's source numbered after a recording's `after` neighbourhoods."""
    i = _neighbourhood_index(source)
    return neighbourhood_source(i + after) if i else source


def merge(old: Recording, new: Recording) -> Recording:
    """`new` (measured later: a neighbourhood, configs timed again) added to `old`: a config in
    both takes its new measurement and keeps its old source, a new neighbourhood is numbered
    after the old ones (its centre added to the plan), and the header keeps every measuring run
    and says what each merge added and measured again (the vendor's time is the newest)."""
    for key in ("space", "template"):
        if old.meta.get(key) != new.meta.get(key):
            raise ValueError(f"cannot merge recordings of different {key}s: "
                             f"{old.meta.get(key)} and {new.meta.get(key)}")
    if old.knobs() != new.knobs():
        raise ValueError(f"cannot merge recordings of different knobs: {old.knobs()} and "
                         f"{new.knobs()}")
    knobs = old.knobs()
    frame = old.frame.copy()
    unwarmed = frame["time_ms"].notna() & frame["warm_ms"].isna()
    frame.loc[unwarmed, "warm_ms"] = runs_warm_ms(old.meta.get("measuring_runs", []))

    def key(row) -> tuple[str, ...]:
        return tuple(str(row[k]) for k in ("problem", *knobs))

    index = {key(row): i for i, row in frame.iterrows()}
    meta = json.loads(json.dumps(old.meta, default=str))
    added, retimed, appended = {}, {}, []
    for problem in new.problems:
        before = [_neighbourhood_index(s) for s in frame[frame["problem"] == problem]["source"]]
        after = max(before, default=0)
        info = meta.setdefault("problems", {}).setdefault(problem, {})
        new_info = new.meta.get("problems", {}).get(problem, {})
        centres = info.setdefault("plan", {}).get("centres", [])[:after]
        info["plan"]["centres"] = centres + new_info.get("plan", {}).get("centres", [])
        if new_info.get("vendor_ms"):
            info["vendor_ms_before"], info["vendor_ms"] = info.get("vendor_ms"), \
                new_info["vendor_ms"]
        for _, row in new.of(problem).iterrows():
            cells = {c: row[c] for c in SPREAD}
            if key(row) in index:
                i = index[key(row)]
                frame.loc[i, list(cells)] = list(cells.values())
                retimed[problem] = retimed.get(problem, 0) + 1
            else:
                appended.append({**row.to_dict(), "source": _renumbered(row["source"], after)})
                added[problem] = added.get(problem, 0) + 1
    if appended:
        frame = pd.concat([frame, pd.DataFrame(appended)], ignore_index=True)
    meta["measuring_runs"] = meta.get("measuring_runs", []) + new.meta.get("measuring_runs", [])
    # what the newest measurement left out (an older plan's leftovers may be what it measured)
    meta["unmeasured_jobs"] = new.meta.get("unmeasured_jobs", 0)
    meta["timer"] = ", ".join(dict.fromkeys(
        t for t in (*str(meta.get("timer", "")).split(", "), new.meta.get("timer")) if t))
    meta["merges"] = meta.get("merges", []) + [{
        "date": new.meta.get("date"), "device": new.meta.get("device"),
        "command": new.meta.get("command"), "versions": new.meta.get("versions"),
        "note": new.meta.get("note"), "added": added, "measured_again": retimed,
        "unmeasured_before": old.meta.get("unmeasured_jobs", 0)}]
    if new.meta.get("note"):
        meta["note"] = f"{meta.get('note', '')}\n\nMerged {new.meta.get('date')}: " \
                       f"{new.meta['note']}".strip()
    return Recording(frame, meta)
