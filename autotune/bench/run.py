"""What `autotune validate` and `autotune bench` do, as functions: the runner that checks (never
times) candidates, the job lists, the grouped timing, the tables and the record of where and
when it ran."""

from __future__ import annotations

import datetime
import math
import multiprocessing.connection
import platform
import subprocess
import sys

from ..runner.base import Candidate, Provenance, Runner
from ..runner.builders import InlineBuilder, ProcessBuilder
from ..runner.compile import Compiler
from ..runner.cuda_eval import CudaEvaluator
from ..runner.devices import gpus_for_arch
from ..runner.isolation import IsolatedWorker
from ..runner.pools import NoDevices, WorkerPool
from ..runner.scheduler import Scheduler
from ..spaces.base import Config, Problem, SearchSpace
from .group import VENDOR, GroupJob, GroupTimer

Pick = tuple[Problem, str, Config]  # (problem, tag, config)


def problem_of(space: SearchSpace, key: str) -> Problem:
    return space.op.from_key(key) if space.op else Problem.from_key(key)


def check_runner(space: SearchSpace, compiler: Compiler, devices: list[int] | None = None,
                 compile_workers: int | None = None, timeout_s: float = 60.0,
                 checks: int = 2) -> Runner:
    """Compile here; check each candidate on `checks` fresh input draws (never timed) on the
    GPUs of the space's arch, one isolated worker each. With none here: compile only."""
    builder = (InlineBuilder(compiler) if compile_workers == 0
               else ProcessBuilder(compiler, compile_workers))
    usable = {g.index: g.name for g in gpus_for_arch(space.arch)}
    devices = sorted(usable) if devices is None else [d for d in devices if d in usable]
    if not devices:
        print(f"autotune: no GPU of arch {space.arch} here: compiling only (nothing runs)",
              file=sys.stderr)
        return Scheduler(builder, NoDevices(), mode="compile-only")
    names = [usable[d] for d in devices]
    provenance = Provenance("validated", {"devices": sorted(set(names)),
                                          "host": platform.node()})
    pool = WorkerPool(CudaEvaluator(timed=False, checks=checks), devices, provenance, names)
    return Scheduler(builder, pool, mode="check", timeout_s=timeout_s)


def check(space: SearchSpace, picks: list[Pick], runner: Runner) -> list[dict]:
    """Every pick through the runner: one row each (outcome, error, resources, artifact)."""
    results = runner.run([Candidate(space, config, problem) for problem, _, config in picks])
    ran = runner.provenance.kind != "compile-only"
    return [{"problem": problem.key, "tag": tag, "config": config,
             "outcome": r.cause.value if r.cause else ("ok" if ran else "compiled"),
             "ok": r.ok, "message": r.message,
             "rel_error": max(r.rel_errors) if r.rel_errors else None,
             "resources": r.resources, "device": r.device, "artifact": r.artifact}
            for (problem, tag, config), r in zip(picks, results)]


def bench_picks(space: SearchSpace, problems: list[Problem], store=None,
                seeds: bool = True) -> list[Pick]:
    """Per problem: the default, the space's seed configs (unless not `seeds`) and the store's
    tuned config; a config appears once, whatever roles it plays (the tuned config that is
    also the default is timed once: the same kernel timed twice differed by up to 4% on the
    H100, which would read as a gap)."""
    out = []
    for problem in problems:
        configs = [space.default_config(problem)] + (space.seed_configs(problem) if seeds else [])
        picks = [(problem, "default" if i == 0 else f"c{i}", c) for i, c in enumerate(configs)]
        entry = store.get(problem) if store else None
        if entry is not None:
            same = [i for i, (_, _, c) in enumerate(picks) if c == entry.config]
            if same:
                p, tag, c = picks[same[0]]
                picks[same[0]] = (p, f"{tag}+tuned", c)
            else:
                picks.append((problem, "tuned", entry.config))
        out += picks
    return out


def time_groups(space: SearchSpace, rows: list[dict], rounds: int, device: int,
                timeout_s: float = 60.0) -> None:
    """Time each shape's passing rows and its vendor baseline together (group.py), in an
    isolated worker on `device`; adds ms, ms_rounds and the vendor's to each row. A
    shape whose timing hangs or fails gets the reason in `timing_error` and the worker is
    restarted for the next."""
    timer = GroupTimer()
    worker = IsolatedWorker(timer.evaluate, timer.setup, device, name="autotune-bench")
    try:
        for key in dict.fromkeys(r["problem"] for r in rows):
            group = [r for r in rows if r["problem"] == key and r["ok"] and r["artifact"]]
            if not group:
                continue
            problem = problem_of(space, key)
            worker.submit(GroupJob(space, problem, [(r["tag"], r["config"], r["artifact"])
                                                   for r in group], rounds))
            limit = timeout_s * rounds * (len(group) + 1)
            multiprocessing.connection.wait([worker.connection], timeout=limit)
            finished, times = worker.poll()
            if not finished:
                worker.restart()
                times = f"no result within {limit:g} s: worker killed"
            for r in group:
                if isinstance(times, dict):
                    r.update(times[r["tag"]], vendor_ms=times[VENDOR]["ms"],
                             vendor_ms_rounds=times[VENDOR]["ms_rounds"], rounds=rounds)
                else:
                    r["timing_error"] = times if isinstance(times, str) else times.message
    finally:
        worker.close()


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan


def bench_table(rows: list[dict], flops) -> str:
    """Per shape: TFLOP/s of the default, the tuned config, the best candidate and the vendor,
    with ratios and their geomeans (> 1: faster than the vendor). `flops(problem key)`."""
    lines = ["| shape | default TFLOP/s | tuned TFLOP/s | best TFLOP/s | vendor TFLOP/s "
             "| default/vendor | tuned/vendor | best/vendor | best config |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    ratios: dict[str, list[float]] = {"default": [], "tuned": [], "best": []}
    for key in dict.fromkeys(r["problem"] for r in rows):
        timed = [r for r in rows if r["problem"] == key and r.get("ms")]
        if not timed:
            why = next((r.get("timing_error") or r["message"] for r in rows
                        if r["problem"] == key and (r.get("timing_error") or r["message"])), "")
            lines.append(f"| {key} | not timed | | | | | | | {why or 'nothing ran on a GPU'} |")
            continue
        f = flops(key)
        best = min(timed, key=lambda r: r["ms"])
        vendor = timed[0]["vendor_ms"]
        ms = {"default": next((r["ms"] for r in timed if r["tag"].startswith("default")), None),
              "tuned": next((r["ms"] for r in timed if r["tag"].endswith("tuned")), None),
              "best": best["ms"]}
        for role, t in ms.items():
            if t:
                ratios[role].append(vendor / t)
        cells = [f"{f / t / 1e9:.1f}" if t else "-" for t in (*ms.values(), vendor)]
        cells += [f"{vendor / t:.3f}" if t else "-" for t in ms.values()]
        config = ",".join(f"{k}={v}" for k, v in best["config"].items())
        lines.append(f"| {key} | " + " | ".join(cells) + f" | {best['tag']}: {config} |")
    lines.append("\n" + "; ".join(f"geomean {role}/vendor = {_geomean(xs):.3f} over {len(xs)} "
                                  "shapes" for role, xs in ratios.items()))
    return "\n".join(lines)


def gpu_state() -> str:
    """SM clock, temperature, power draw and limit, throttle reasons (nvidia-smi): large GEMMs
    run at the power limit, and their times move with it."""
    fields = "clocks.sm,temperature.gpu,power.draw,power.limit,clocks_event_reasons.active"
    try:
        query = ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader", "-i", "0"]
        return subprocess.run(query, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable: {exc}"


def run_record(runner: Runner, argv: list[str]) -> dict:
    """Where, when and with what a check or benchmark ran."""
    record = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "host": platform.node(), "python": platform.python_version(),
              "command": " ".join(["autotune", *argv]),
              "provenance": runner.provenance.describe()}
    try:
        import torch

        if torch.cuda.is_available():
            record.update(device=torch.cuda.get_device_name(0), torch=torch.__version__,
                          cuda=torch.version.cuda, gpu_state=gpu_state())
    except ImportError:
        pass
    return record
