"""The committed full compile sweep of the sm_100a FA4 template
(scripts/sweep_fa4_sm100_compile.py) is current and clean: made from this template and
toolchain, covering exactly the legal configs of its problem, every one compiled for sm_100a
with zero spills and zero stack.

The sweep takes about a CPU-hour, so CI checks its record instead of compiling it again. Any
change to the template's files changes its hash and fails this test until the sweep is re-run."""

import dataclasses
import types
from pathlib import Path

import pytest

from autotune.store import template_hash
from kernels.fa4 import sm100
from kernels.fa4.problem import AttentionProblem
from tirx import sweep

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "studies" / "2026-11-23-fa4-sm100-compile-sweep" / "fa4_sm100_compile_sweep.jsonl"
RERUN = ".venv/bin/python scripts/sweep_fa4_sm100_compile.py --jobs <cores>"
# causal GQA 4:1 at head_dim 128: every code path of that head dim (mask, packed query rows)
PROBLEM = AttentionProblem(head_dim=128, heads_q=4, heads_kv=1, causal=True, dtype="bfloat16")


def load_record():
    head, rows = sweep.read(RECORD)
    if head is None:
        pytest.fail(f"no compile sweep record {RECORD.relative_to(ROOT)}: run `{RERUN}`")
    return head, rows


def test_record_is_of_this_template_toolchain_and_problem():
    from tirx.compile import toolchain_versions

    head, _ = load_record()
    now = template_hash(types.SimpleNamespace(template_files=sm100.template_files))
    assert head["template"] == now, (
        f"the sweep record is of template {head['template']}, the template is now {now}: "
        f"re-run the sweep with `{RERUN}` and commit {RECORD.name}")
    assert head["versions"] == toolchain_versions(), f"another toolchain: re-run `{RERUN}`"
    assert (head["space"], head["arch"]) == ("fa4_sm100", "sm_100a")
    assert head["problem"] == dataclasses.asdict(PROBLEM)


def test_record_covers_every_legal_config():
    _, rows = load_record()
    legal = [dataclasses.asdict(c) for c in sm100.legal_configs(PROBLEM)]
    gaps = sweep.coverage_gaps(rows, legal)
    assert gaps is None, f"{gaps}: finish or re-run the sweep with `{RERUN}`"


def test_every_config_compiled_without_spills():
    _, rows = load_record()
    bad = sweep.bad_rows(rows)
    assert not bad, f"{len(bad)} configs failed or spilled, e.g. {bad[:3]}"
