"""`autotune compare`'s table, plots and report, fed by measurements (no GPU)."""

import json
import math

import pandas as pd
import pytest

from autotune.compare import Measurement, comparison_table, markdown_report, write_report
from autotune.compare.__main__ import main as compare_cli
from autotune.spaces.base import Problem
from autotune.store import ConfigStore, Entry, Header

KEY = Problem.of("bfloat16", M=16, N=4096, K=4096).key
BIG = Problem.of("bfloat16", M=4096, N=4096, K=4096).key
FLOPS = 2 * 16 * 4096 * 4096


def test_table_has_tflops_ratios_and_geomeans():
    table = comparison_table([
        Measurement(KEY, FLOPS, tuned_ms=0.01, default_ms=0.02, vendor_ms=0.04),
        Measurement(BIG, 2 * 4096**3, tuned_ms=0.2, default_ms=0.2, vendor_ms=0.1),
    ])
    first = table.iloc[0]
    assert first.tuned_tflops == pytest.approx(FLOPS / 0.01 / 1e9)
    assert (first.tuned_vs_default, first.tuned_vs_vendor) == (2.0, 4.0)
    geo = table.iloc[-1]
    assert geo.problem == "geomean"
    assert geo.tuned_vs_default == pytest.approx(math.sqrt(2.0 * 1.0))
    assert geo.tuned_vs_vendor == pytest.approx(math.sqrt(4.0 * 0.5))


def test_missing_variants_stay_empty_and_out_of_the_geomean():
    table = comparison_table([
        Measurement(KEY, FLOPS, tuned_ms=0.01, default_ms=None, vendor_ms=0.02, note="no default"),
        Measurement(BIG, 0.0, tuned_ms=0.2, default_ms=0.4, vendor_ms=None),
    ])
    assert math.isnan(table.iloc[0].tuned_vs_default) and math.isnan(table.iloc[1].tuned_tflops)
    assert table.iloc[-1].tuned_vs_default == 2.0 and table.iloc[-1].tuned_vs_vendor == 2.0


def test_markdown_report_has_summary_table_and_plots(tmp_path):
    table = comparison_table([Measurement(KEY, FLOPS, 0.01, 0.02, None)])
    text = markdown_report(table, "T", {"device": "NVIDIA H200"}, [tmp_path / "tflops.png"])
    lines = text.splitlines()
    assert lines[0] == "# T" and "- device: NVIDIA H200" in lines
    assert "2.00x the hand-tuned default" in text
    rows = [line for line in lines if line.startswith("| ")]
    assert len(rows) == 3  # header, one shape, geomean
    assert rows[1].split(" | ")[0] == f"| {KEY}" and " - " in rows[1]  # vendor missing: "-"
    assert "**geomean**" in rows[2]
    assert "![tflops](tflops.png)" in lines


def test_write_report_writes_csv_plots_and_markdown(tmp_path):
    write_report([Measurement(KEY, FLOPS, 0.01, 0.02, 0.015),
                  Measurement(BIG, 2 * 4096**3, 0.2, 0.25, 0.19)], tmp_path, "T", {})
    for name in ("report.md", "table.csv", "tflops.png", "ratios.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / "tflops.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "table.csv").read_text().splitlines()[0].startswith("problem,tuned_ms")


def test_the_table_says_which_config_ran_as_our_kernel(tmp_path):
    # first use's pick or a store's entry: the CSV names it (JSON), the geomeans name none
    config = {"blk_n": 256, "wg_m": 64, "persistent": True}
    write_report([Measurement(KEY, FLOPS, 0.01, 0.02, 0.015, tuned_config=config),
                  Measurement(BIG, 2 * 4096**3, 0.2, 0.25, 0.19)], tmp_path, "T", {})
    table = pd.read_csv(tmp_path / "table.csv", keep_default_na=False)
    assert json.loads(table.tuned_config[0]) == config
    assert list(table.tuned_config[1:]) == ["", ""]  # none recorded; the geomean row
    assert "blk_n" not in (tmp_path / "report.md").read_text()


def test_compare_from_a_store_file(tmp_path, capsys):
    store = ConfigStore(Header(space="gemm_sm90", kernel="gemm", arch="sm_90a",
                               device="NVIDIA H200", template="x"))
    store.add(Entry(KEY, {"blk_n": 32}, 0.01, default_ms=0.012, vendor_ms=0.02))
    store.add(Entry(BIG, {"blk_n": 256}, 0.2, default_ms=0.21, vendor_ms=0.19))
    path = store.write(tmp_path / "h200.json")
    assert compare_cli(["--from-store", str(path), "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "geomean" in out and "report:" in out
    table = pd.read_csv(tmp_path / "r" / "table.csv", keep_default_na=False)
    assert [json.loads(c) for c in table.tuned_config[:2]] == [{"blk_n": 32}, {"blk_n": 256}]
    report = (tmp_path / "r" / "report.md").read_text()
    assert "NVIDIA H200" in report and "1.20" in report  # 0.012 / 0.01
    assert f"{FLOPS / 0.01 / 1e9:.1f}" in report  # TFLOP/s from the plugin's flops


def test_compare_of_a_corrupt_store_names_it(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text("{")
    assert compare_cli(["--from-store", str(path)]) == 2
    assert "bad.json" in capsys.readouterr().err


def test_python_m_compare_records_the_command_it_was_given(monkeypatch):
    # the report's "command" line; `python -m autotune.compare` (what a GPU machine without
    # the `autotune` script runs) once recorded a bare "autotune compare"
    import autotune.compare.cli as cli

    seen = {}
    monkeypatch.setattr(cli, "compare_main", lambda args: seen.setdefault("argv", args.argv) and 0)
    assert compare_cli(["gemm", "--shapes", "16x4096x4096", "--first-use", "0"]) == 0
    assert seen["argv"] == ["compare", "gemm", "--shapes", "16x4096x4096", "--first-use", "0"]
