"""Compile sweeps: compile many variants of a template for one arch and record what ptxas says
of each (registers, spills, stack, shared memory) in a JSON-lines file: a header (what was
swept, with which toolchain, by which command), then one row per variant.

Rows are appended as compiles finish, so a killed sweep loses nothing: run it again and it
skips the variants already recorded under the same identity (a record of another template or
toolchain is started over). When it ends the file is rewritten with its rows in sweep order.
Compiles bypass the artifact cache (a sweep would fill gigabytes with binaries nobody runs).

    rows = tirx.sweep.run(configs, build, "sm_100a", path, identity, jobs=2)

where `build(config) -> PrimFunc` can be pickled (a module-level function, or a
functools.partial of one): worker processes receive it.
"""

from __future__ import annotations

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

# Header fields a resumed sweep must share with the record it extends.
IDENTITY = ("space", "arch", "problem", "template", "versions")


def header(identity: dict, jobs: int) -> dict:
    """The record's first line: `identity` (space, arch, problem, template, versions) plus when,
    where and how it was made."""
    return {"kind": "header", **identity,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "host": platform.node(), "cpus": os.cpu_count(), "jobs": jobs,
            "command": shlex.join([os.path.basename(sys.executable), *sys.argv])}


def read(path: Path) -> tuple[dict | None, list[dict]]:
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


def write(path: Path, head: dict, rows: list[dict]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(x, sort_keys=True) + "\n" for x in [head, *rows]))
    os.replace(tmp, path)


def bad_rows(rows: list[dict]) -> list[dict]:
    """Rows that failed to compile, spilled or used a stack frame."""
    return [r for r in rows if not r["ok"] or r["spill_bytes"] or r["stack_bytes"]]


def coverage_gaps(rows: list[dict], wanted: list[dict]) -> str | None:
    """What keeps a record from covering exactly `wanted` (one row per config), or None."""
    recorded = [_key(r["config"]) for r in rows]
    want = {_key(c) for c in wanted}
    missing, extra = want - set(recorded), set(recorded) - want
    if missing or extra:
        return (f"{len(missing)} of {len(want)} configs are not in the record and {len(extra)} "
                f"recorded ones are no longer legal")
    if len(recorded) != len(set(recorded)):
        return f"{len(recorded) - len(set(recorded))} configs are recorded more than once"
    return None


def compile_row(builder, arch: str, config: dict) -> dict:
    """One row: compile `builder(config)` for `arch` and read its resources, or say why not."""
    from . import build

    start = time.perf_counter()
    row = {"config": config}
    try:
        art = build(builder(config), arch, use_cache=False)
    except Exception as exc:  # the row says why; the sweep goes on
        row.update(ok=False, error=f"{type(exc).__name__}: {str(exc)[:500]}")
    else:
        res = art.resources
        row.update(ok=True, registers=res.registers, spill_bytes=res.spill_bytes,
                   stack_bytes=res.stack_frame_bytes, smem_bytes=res.smem_bytes)
    row["compile_s"] = round(time.perf_counter() - start, 2)
    return row


def _warm_up() -> None:
    """Import TVM once per process, outside every row's compile_s."""
    import tirx.compile  # noqa: F401


def _key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def run(configs: list[dict], builder, arch: str, path: Path, identity: dict,
        jobs: int = 1, limit: int | None = None, progress=None) -> list[dict]:
    """Compile every config not yet in the record at `path` (at most `limit` of them) in `jobs`
    processes and return the record's rows, in `configs` order (rows of configs no longer
    listed are dropped). `progress` wraps the completions (e.g. tqdm)."""
    order = {_key(c): i for i, c in enumerate(configs)}
    head = header(identity, jobs)
    old_head, rows = read(path)
    if old_head is not None and any(old_head.get(k) != head[k] for k in IDENTITY):
        changed = [k for k in IDENTITY if old_head.get(k) != head[k]]
        print(f"{path}: recorded for another {', '.join(changed)}: starting over")
        rows = []
    rows = [r for r in rows if _key(r["config"]) in order]
    done = {_key(r["config"]) for r in rows}
    todo = [c for c in configs if _key(c) not in done][:limit]
    print(f"{len(configs)} variants: {len(done)} recorded, compiling {len(todo)} with {jobs} "
          "processes")
    path.parent.mkdir(parents=True, exist_ok=True)
    write(path, head, rows)
    pool = cf.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=_warm_up)
    try:
        with open(path, "a") as out:
            futures = [pool.submit(compile_row, builder, arch, c) for c in todo]
            done_futures = cf.as_completed(futures)
            for future in (progress(done_futures, total=len(futures)) if progress else done_futures):
                row = future.result()
                rows.append(row)
                out.write(json.dumps(row, sort_keys=True) + "\n")
                out.flush()
    finally:  # also when interrupted: drop what is queued, keep the rows so far, in order
        pool.shutdown(wait=False, cancel_futures=True)
        rows.sort(key=lambda r: order[_key(r["config"])])
        write(path, head, rows)
    return rows


def main(description: str, configs: list[dict], builder, arch: str, record: Path,
         identity, argv=None) -> int:
    """The command line of a sweep script: --jobs, --limit, --out; exit 1 when a recorded
    variant failed or spilled. `identity()` is called only when the sweep runs."""
    import argparse

    from tqdm import tqdm

    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="compile processes")
    parser.add_argument("--limit", type=int, help="compile at most this many new variants")
    parser.add_argument("--out", type=Path, default=record)
    args = parser.parse_args(argv)
    rows = run(configs, builder, arch, args.out, identity(), args.jobs, args.limit,
               progress=lambda it, total: tqdm(it, total=total, unit="variant"))
    bad = bad_rows(rows)
    print(f"{args.out}: {len(rows)}/{len(configs)} variants recorded, {len(bad)} failed or "
          "spilled")
    return 1 if bad else 0
