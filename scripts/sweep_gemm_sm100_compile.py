"""Compile every compile class of the gemm_sm100 space at the CI problem for sm_100a and record
registers, spills, stack and shared memory per class. tests/test_gemm_sm100_sweep_record.py
checks the record (every legal config compiles with zero spills): the sweep itself is about a
CPU-hour, too much for CI.

    .venv/bin/python scripts/sweep_gemm_sm100_compile.py --jobs 16     # the full sweep
    .venv/bin/python scripts/sweep_gemm_sm100_compile.py --limit 8     # a quick look

A compile class is a legal config minus its runtime knobs (group_m is a launch argument), so
1,225 compiles cover the 6,125 legal configs. The record (JSON lines: a header, then one row per
class) is written and resumed as tirx/sweep.py describes.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autotune.spaces.gemm_sm100 import GemmSm100Space  # noqa: E402
from autotune.store import template_hash  # noqa: E402
from tirx import sweep  # noqa: E402

SPACE = GemmSm100Space()
PROBLEM = "4000x4096x4096"  # the CI problem: M is no multiple of a tile height (the M tail)
RECORD = ROOT / "studies" / "2026-11-22-gemm-sm100-compile-sweep" / "gemm_sm100_compile_sweep.jsonl"


def build_class(config: dict):
    return SPACE.build(config, SPACE.parse_problem(PROBLEM))


def identity() -> dict:
    from tirx.compile import toolchain_versions

    return {"space": SPACE.name, "arch": SPACE.arch, "problem": SPACE.parse_problem(PROBLEM).key,
            "template": template_hash(SPACE), "versions": toolchain_versions()}


if __name__ == "__main__":
    classes = SPACE.compile_classes(SPACE.parse_problem(PROBLEM))
    raise SystemExit(sweep.main(__doc__, classes, build_class, SPACE.arch, RECORD, identity))
