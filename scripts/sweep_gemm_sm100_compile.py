"""Compile every compile class of the gemm_sm100 space at the CI problem for sm_100a and record
registers, spills, stack and shared memory per class. tests/test_gemm_sm100_sweep_record.py
checks the record (every legal config compiles with zero spills): the sweep itself is about a
CPU-hour, too much for CI.

    .venv/bin/python scripts/sweep_gemm_sm100_compile.py --jobs 16     # the full sweep
    .venv/bin/python scripts/sweep_gemm_sm100_compile.py --limit 8     # a quick look

A compile class is a legal config minus its runtime knobs (group_m is a launch argument), so
1,225 compiles cover the 6,125 legal configs. Output (JSON lines): a header, then one row per
class. Rows are appended as compiles finish, so a killed run loses nothing: run the same command
again and it skips the classes already recorded for the same template and toolchain (a record
of another template or toolchain is started over). When the run ends the file is rewritten with
its rows in the space's order.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import json
import multiprocessing
import os
import platform
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autotune.spaces.gemm_sm100 import GemmSm100Space  # noqa: E402
from autotune.store import template_hash  # noqa: E402

SPACE = GemmSm100Space()
PROBLEM = "4000x4096x4096"  # the CI problem: M is no multiple of a tile height (the M tail)
RECORD = ROOT / "studies" / "2026-11-22-gemm-sm100-compile-sweep" / "gemm_sm100_compile_sweep.jsonl"
# Header fields a resumed run must share with the record it extends.
IDENTITY = ("space", "arch", "problem", "template", "versions")


def _warm_up() -> None:
    """Import TVM and the template once per process, outside every row's compile_s."""
    import kernels.gemm._sm100_kernel  # noqa: F401
    import tirx.compile  # noqa: F401


def compile_class(config: dict) -> dict:
    """One row: compile `config` (no disk cache: the sweep would fill gigabytes)."""
    import tirx

    start = time.perf_counter()
    row = {"config": config}
    try:
        art = tirx.build(SPACE.build(config, SPACE.parse_problem(PROBLEM)), SPACE.arch,
                         use_cache=False)
    except Exception as exc:  # the row says why; the sweep goes on
        row.update(ok=False, error=f"{type(exc).__name__}: {str(exc)[:500]}")
    else:
        res = art.resources
        row.update(ok=True, registers=res.registers, spill_bytes=res.spill_bytes,
                   stack_bytes=res.stack_frame_bytes, smem_bytes=res.smem_bytes)
    row["compile_s"] = round(time.perf_counter() - start, 2)
    return row


def header(jobs: int) -> dict:
    from tirx.compile import toolchain_versions

    problem = SPACE.parse_problem(PROBLEM)
    return {"kind": "header", "space": SPACE.name, "arch": SPACE.arch, "problem": problem.key,
            "template": template_hash(SPACE), "versions": toolchain_versions(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "host": platform.node(), "cpus": os.cpu_count(), "jobs": jobs,
            "command": shlex.join([sys.executable, *sys.argv])}


def read_record(path: Path) -> tuple[dict | None, list[dict]]:
    """(header, rows) of a record; a torn last line (a killed writer) is dropped."""
    if not path.exists():
        return None, []
    lines = []
    for line in path.read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            break
    if not lines or lines[0].get("kind") != "header":
        return None, []
    return lines[0], lines[1:]


def write_record(path: Path, head: dict, rows: list[dict]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(x, sort_keys=True) + "\n" for x in [head, *rows]))
    os.replace(tmp, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="compile processes")
    parser.add_argument("--limit", type=int, help="compile at most this many new classes")
    parser.add_argument("--out", type=Path, default=RECORD)
    args = parser.parse_args(argv)
    from tqdm import tqdm

    classes = SPACE.compile_classes(SPACE.parse_problem(PROBLEM))
    order = {SPACE.compile_key(c): i for i, c in enumerate(classes)}
    head = header(args.jobs)
    old_head, rows = read_record(args.out)
    if old_head is not None and any(old_head[k] != head[k] for k in IDENTITY):
        changed = [k for k in IDENTITY if old_head[k] != head[k]]
        print(f"{args.out}: recorded for another {', '.join(changed)}: starting over")
        rows = []
    rows = [r for r in rows if SPACE.compile_key(r["config"]) in order]  # classes still legal
    done = {SPACE.compile_key(r["config"]) for r in rows}
    todo = [c for c in classes if SPACE.compile_key(c) not in done][:args.limit]
    print(f"{len(classes)} compile classes at {PROBLEM}: {len(done)} recorded, compiling "
          f"{len(todo)} with {args.jobs} processes")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_record(args.out, head, rows)
    pool = cf.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=_warm_up)
    try:
        with open(args.out, "a") as out:
            futures = [pool.submit(compile_class, c) for c in todo]
            for future in tqdm(cf.as_completed(futures), total=len(futures), unit="class"):
                row = future.result()
                rows.append(row)
                out.write(json.dumps(row, sort_keys=True) + "\n")
                out.flush()
    finally:  # also when interrupted: drop what is queued, keep the rows so far, in order
        pool.shutdown(wait=False, cancel_futures=True)
        rows.sort(key=lambda r: order[SPACE.compile_key(r["config"])])
        write_record(args.out, head, rows)
    bad = [r for r in rows if not r["ok"] or r["spill_bytes"] or r["stack_bytes"]]
    print(f"{args.out}: {len(rows)}/{len(classes)} classes recorded, {len(bad)} failed or spilled")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
