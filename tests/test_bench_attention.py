"""The Hopper attention benchmark's CPU side: its candidates are legal, one binary each, every
launch-time knob value covered; its table names the default, the best candidate and the
baselines of each shape; its store holds each shape's fastest candidate for dispatch."""

import json
from pathlib import Path

from autotune.bench import attention as A
from autotune.ops.attention import ATTENTION
from autotune.spaces.fa4_sm90 import Fa4Sm90Space
from autotune.store.compat import store_path, template_hash
from autotune.store.format import ConfigStore, config_id
from kernels.fa4._sm90_config import ORDERS, compile_key, default_config, violations


def test_candidates_are_legal_distinct_binaries_with_every_launch_knob():
    assert len(A.classes()) == 4  # 16 heads causal or not, the block's prefill and decode
    for p in A.classes():
        binaries = A.binaries(p)
        issue = (p.heads_q, p.heads_kv) == (A.HEADS, A.HEADS)
        assert len({compile_key(c) for c in binaries.values()}) == len(binaries) == (
            (4 if p.causal else 2) if issue else 3)
        assert default_config(p) in binaries.values()
        assert any(c.q_stages == 2 for c in binaries.values())
        assert any(c.ctas_per_sm == 2 for c in binaries.values()) == (p.causal or not issue)
        cands = A.candidates(p)
        assert len(cands) == 2 * len(ORDERS) * len(binaries)
        assert all(not violations(c, p) and compile_key(c) == compile_key(binaries[name])
                   for name, c in cands.values())
        assert A.default_label(p) in cands


def results(tmp_path):
    shape = "4x4096/16/128"
    default = A.default_label(A.problem(False))
    rows = [{"shape": shape, "name": n, "tflops": t, "ms": 600.0 / t}
            for n, t in ((default, 600.0), ("full_bn128_s2_pp1_ov1_th8_q2_grid_head", 700.0),
                         ("cudnn", 650.0), ("fa2", 350.0))]
    rows.append({"shape": shape, "name": "x", "failed": ["o_nan"]})
    head = {"kind": "header", "device": "NVIDIA H100 80GB HBM3", "driver": "13.0", "date": "d",
            "command": "c", "torch": "t", "triton": "t", "cuda": "13.0", "cudnn": 1,
            "python": "3", "dtype": "bfloat16", "protocol": "graph-warm: time_on_sets"}
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [head, *rows]))
    return path


def test_table_reports_default_tuned_and_baselines(tmp_path):
    path = results(tmp_path)
    row = [line for line in A.report(path).splitlines() if line.startswith("| 4x4096/16/128")][0]
    assert row.split(" | ")[1:7] == ["600", "700", "650", "350", "1.08", "2.00"]
    assert "full_bn128_s2_pp1_ov1_th8_q2_grid_head (2 timed, failed: x)" in row
    assert (tmp_path / "r.md").read_text().count("| 4x4096/16/128") == 1


def test_store_holds_the_fastest_candidate_with_its_evidence(tmp_path):
    A.store(results(tmp_path), tmp_path / "configs")
    store = ConfigStore.read(tmp_path / "configs" / "fa4_sm90" / "nvidia-h100-80gb-hbm3.json")
    space = Fa4Sm90Space()
    assert store.header.template == template_hash(space) and store.header.timer == "graph-warm"
    (entry,) = store.entries.values()
    best = A.candidates(A.problem(False))["full_bn128_s2_pp1_ov1_th8_q2_grid_head"][1]
    assert entry.config == best.as_dict() and not space.violations(entry.config,
                                                                   entry.parsed_problem)
    assert (entry.time_ms, entry.default_ms, entry.vendor_ms) == (600 / 700, 1.0, 600 / 650)
    assert entry.measured[config_id(best.as_dict())] == entry.time_ms
    assert len(entry.measured) == 2  # the failed candidate and the baselines are not evidence


def test_committed_h100_store_is_of_this_template_and_legal():
    """The store dispatch reads on an H100 (written by `store` from the committed bench run)
    matches the template (a template change makes it stale: re-run the bench) and holds a
    legal config for each shape of the benchmark and of the decoder block."""
    root = Path(__file__).resolve().parents[1] / "studies" / "configs"
    store = ConfigStore.read(store_path(root, "fa4_sm90", "NVIDIA H100 80GB HBM3"))
    space = Fa4Sm90Space()
    assert store.header.template == template_hash(space)
    assert {ATTENTION.parse(s).key for s in A.SHAPES} == set(store.entries)
    for entry in store.entries.values():
        assert space.violations(entry.config, entry.parsed_problem) == []
        assert config_id(entry.config) in entry.measured
