"""The committed compile sweep of the Hopper attention template (scripts/sweep_fa4_sm90_compile.py)
is current and clean: made from this template and toolchain, covering exactly the binaries of
the legal space at the sweep problem, every one compiled for sm_90a with zero spills and zero
stack.

The sweep takes about a CPU-hour, so CI checks its record instead of compiling it again (`-m slow`
compiles it again). Any change to the template's files changes its hash and fails this test
until the sweep is re-run."""

import dataclasses

import pytest

import fa4_sm90_kernels as K
from tirx import sweep

RERUN = ".venv/bin/python scripts/sweep_fa4_sm90_compile.py --jobs <cores>"


def load_record():
    head, rows = sweep.read(K.RECORD)
    if head is None:
        pytest.fail(f"no compile sweep record {K.RECORD.relative_to(K.ROOT)}: run `{RERUN}`")
    return head, rows


def test_record_is_of_this_template_toolchain_and_problem():
    head, _ = load_record()
    now = K.identity()
    assert head["template"] == now["template"], (
        f"the sweep record is of template {head['template']}, the template is now "
        f"{now['template']}: re-run the sweep with `{RERUN}` and commit {K.RECORD.name}")
    assert head["versions"] == now["versions"], f"another toolchain: re-run `{RERUN}`"
    assert (head["space"], head["arch"]) == ("fa4_sm90", "sm_90a")
    assert head["problem"] == dataclasses.asdict(K.SWEEP_PROBLEM)


def test_record_covers_every_binary_of_the_legal_space():
    _, rows = load_record()
    gaps = sweep.coverage_gaps(rows, K.sweep_configs())
    assert gaps is None, f"{gaps}: finish or re-run the sweep with `{RERUN}`"


def test_every_binary_compiled_without_spills():
    _, rows = load_record()
    bad = sweep.bad_rows(rows)
    assert not bad, f"{len(bad)} of {len(rows)} failed or spilled: {bad[:3]}"


@pytest.mark.slow
def test_every_legal_binary_compiles_clean_again():
    bad = sweep.bad_rows([sweep.compile_row(K.build_config, K.ARCH, c)
                          for c in K.sweep_configs()])
    assert not bad, bad[:3]
