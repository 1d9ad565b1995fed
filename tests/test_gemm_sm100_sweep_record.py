"""The committed full compile sweep of gemm_sm100 (scripts/sweep_gemm_sm100_compile.py) is
current and clean: made from this template, covering exactly the legal space's compile classes
at the CI problem, every one compiled for sm_100a with zero spills and zero stack.

The sweep is about a CPU-hour, so CI checks its record instead of compiling it again. Any change
to the template's files changes its hash and fails this test until the sweep is re-run."""

import json
from pathlib import Path

import pytest

from autotune.spaces.gemm_sm100 import GemmSm100Space
from autotune.store import template_hash

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "studies" / "2026-11-22-gemm-sm100-compile-sweep" / "gemm_sm100_compile_sweep.jsonl"
RERUN = ".venv/bin/python scripts/sweep_gemm_sm100_compile.py --jobs <cores>"
SPACE = GemmSm100Space()
PROBLEM = SPACE.parse_problem("4000x4096x4096")


def load_record():
    if not RECORD.exists():
        pytest.fail(f"no compile sweep record {RECORD.relative_to(ROOT)}: run `{RERUN}`")
    head, *rows = (json.loads(line) for line in RECORD.read_text().splitlines())
    return head, rows


def test_record_is_of_this_template_and_problem():
    head, _ = load_record()
    assert head["template"] == template_hash(SPACE), (
        f"the sweep record is of template {head['template']}, the template is now "
        f"{template_hash(SPACE)}: re-run the sweep with `{RERUN}` and commit {RECORD.name}")
    assert (head["space"], head["arch"], head["problem"]) == (SPACE.name, SPACE.arch, PROBLEM.key)


def test_record_covers_every_compile_class():
    _, rows = load_record()
    recorded = {SPACE.compile_key(r["config"]) for r in rows}
    legal = {SPACE.compile_key(c) for c in SPACE.compile_classes(PROBLEM)}
    missing, extra = legal - recorded, recorded - legal
    assert not missing and not extra, (
        f"{len(missing)} of {len(legal)} compile classes are not in the record and {len(extra)} "
        f"recorded ones are no longer legal: finish or re-run the sweep with `{RERUN}`")
    assert len(rows) == len(recorded)  # one row per class


def test_every_class_compiled_without_spills():
    _, rows = load_record()
    bad = [r for r in rows if not r["ok"] or r["spill_bytes"] or r["stack_bytes"]]
    assert not bad, f"{len(bad)} classes failed or spilled, e.g. {bad[:3]}"
