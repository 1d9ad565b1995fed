"""Every binary of the Hopper attention search space compiles for sm_90a without spills.

The sweep is an hour of CPU: CI checks its committed record (made from this template, covering
exactly the legal space's binaries at the CI problem, all clean); `-m slow` compiles it again."""

import json

import pytest

import fa4_sm90_kernels as K
from kernels.fa4._sm90_config import compile_key

RERUN = ".venv/bin/python tests/fa4_sm90_kernels.py sweep --jobs <cores>"


def record():
    if not K.RECORD.exists():
        pytest.fail(f"no compile sweep record {K.RECORD.relative_to(K.ROOT)}: run `{RERUN}`")
    head, *rows = (json.loads(line) for line in K.RECORD.read_text().splitlines())
    return head, rows


def clean(row) -> bool:
    return row["ok"] and not (row["spill_bytes"] or row["stack_bytes"]
                              or row["setmaxnreg_ignored"])


def test_record_is_of_this_template_and_covers_every_binary():
    head, rows = record()
    assert head["template"] == K.template_hash(), (
        f"the sweep record is of template {head['template']}, the template is now "
        f"{K.template_hash()}: re-run `{RERUN}` and commit {K.RECORD.name}")
    assert head["problem"] == repr(K.SWEEP_PROBLEM)
    from kernels.fa4._sm90_config import AttentionSm90Config

    recorded = [compile_key(AttentionSm90Config.from_dict(r["config"])) for r in rows]
    assert sorted(recorded) == sorted(compile_key(c) for c in K.sweep_classes())


def test_every_recorded_binary_compiled_clean():
    _, rows = record()
    bad = [r for r in rows if not clean(r)]
    assert not bad, f"{len(bad)} of {len(rows)} failed, spilled or lost setmaxnreg: {bad[:3]}"


@pytest.mark.slow
def test_every_legal_binary_compiles_clean_again():
    bad = [r for r in map(K.compile_row, K.sweep_classes()) if not clean(r)]
    assert not bad, bad[:3]
