"""`autotune compare` for attention on the CPU: FlashAttention-2 reported beside cuDNN (the op's
other vendors become columns with their TFLOP/s and the tuned kernel's ratio), and a store of
the fa4_sm90 plugin reported from its recorded times."""

import math

import pytest

from autotune.compare import Measurement, comparison_table, markdown_report
from autotune.compare.__main__ import main as compare_cli
from autotune.ops.attention import ATTENTION, VENDORS
from autotune.spaces.fa4_sm90 import Fa4Sm90Space
from autotune.store import ConfigStore, Entry, Gpu, expected_header

torch = pytest.importorskip("torch")
SPACE = Fa4Sm90Space()


def test_vendors_are_sdpa_backends_and_one_refusing_gqa_gets_repeated_heads(monkeypatch):
    """cuDNN is `vendor`, FlashAttention-2 the other; a backend that refuses GQA is called
    with k and v whose heads are repeated (made once, outside the timed call)."""
    calls = []

    def fake_sdpa(q, k, v, causal, backend=None):
        if backend == "cudnn" and k.shape[2] != q.shape[2]:
            raise RuntimeError("No available kernel")
        calls.append((backend, k.shape[2], causal))

    monkeypatch.setattr("autotune.ops.attention.sdpa", fake_sdpa)
    p = ATTENTION.parse("1x16/4:2/64/causal")
    inputs = ATTENTION.make_inputs(p, seed=0, device="cpu")
    others = ATTENTION.other_vendors(p, inputs)
    assert list(VENDORS) == ["cudnn", "fa2"] and list(others) == ["fa2"]
    calls.clear()
    others["fa2"]()
    ATTENTION.vendor(p, inputs)()
    assert calls == [("fa2", 2, True), ("cudnn", 4, True)]


def test_other_vendors_get_columns_and_ratios():
    p = SPACE.parse_problem("4x4096/16/128/causal")
    rows = [Measurement(p.key, SPACE.flops(p), 0.5, 0.6, 0.55, others={"fa2": 1.0}),
            Measurement(p.key.replace("batch=4", "batch=2"), SPACE.flops(p) / 2, 0.3, 0.3, 0.2,
                        others={"fa2": 0.6})]
    table = comparison_table(rows)
    assert list(table.columns[-5:]) == ["fa2_ms", "fa2_tflops", "tuned_vs_fa2", "note",
                                        "tuned_config"]
    assert table.loc[0, "tuned_vs_fa2"] == pytest.approx(2.0)
    assert table.loc[0, "fa2_tflops"] == pytest.approx(SPACE.flops(p) / 1.0 / 1e9)
    assert table.iloc[-1]["tuned_vs_fa2"] == pytest.approx(2.0)  # the geomean row
    report = markdown_report(table, "t", {}, [])
    assert "| fa2 TFLOP/s | ours / fa2 |" in report and "| 2.000 |" in report


def test_a_gemm_table_has_no_other_vendor_columns():
    table = comparison_table([Measurement("M=1,N=2,K=3,dtype=bfloat16", 12.0, 1.0, 1.0, 1.0)])
    assert not [c for c in table.columns if c.startswith("fa2")]
    assert math.isclose(table.loc[0, "tuned_vs_vendor"], 1.0)


def test_compare_reports_an_attention_store(tmp_path):
    gpu = Gpu("sm_90a", "NVIDIA H100 80GB HBM3", "13.0", "13.0")
    store = ConfigStore(expected_header(SPACE, gpu))
    for text, ms in (("4x4096/16/128", 1.0), ("4x4096/16/128/causal", 0.6)):
        p = SPACE.parse_problem(text)
        store.add(Entry(p.key, SPACE.default_config(p), ms, default_ms=ms * 1.1, vendor_ms=ms))
    path = store.write(tmp_path / "store.json")
    assert compare_cli(["attention", "--from-store", str(path), "--out", str(tmp_path / "r")]) == 0
    report = (tmp_path / "r" / "report.md").read_text()
    p = SPACE.parse_problem("4x4096/16/128")
    assert p.key in report and f"{SPACE.flops(p) / 1.0 / 1e9:.1f}" in report
