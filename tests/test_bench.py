"""`autotune validate` and `autotune bench` on the CPU: the sample covers every knob value, a
tuned config that is also a candidate is timed once and reported for both roles, the table's
ratios, and both commands end to end (compile-only here) through an artifact index."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from autotune import cli
from autotune.bench.run import bench_picks, bench_table
from autotune.spaces.gemm_sm90 import GemmSm90Space
from autotune.spaces.sampling import covering_sample

SPACE = GemmSm90Space()
PROBLEM = SPACE.parse_problem("4096x4096x4096")


class _Store:
    def __init__(self, config):
        self.config = config

    def get(self, problem):
        return SimpleNamespace(config=self.config) if problem == PROBLEM else None


def test_the_sample_shows_every_knob_value():
    problems = [SPACE.parse_problem(s) for s in ("16x6144x4096", "333x520x136", "4096x4096x4096")]
    picks = covering_sample(SPACE, problems, 14, seed=4)  # 39 tile widths to show
    assert [tag for p, tag, _ in picks if p == problems[0]][:2] == ["default", "s1"]
    shown = {(k, v) for _, _, c in picks for k, v in c.items()}
    offered = {(k, v) for p in problems for k, vs in SPACE.knob_values(p).items() for v in vs}
    assert shown == offered
    assert not any(SPACE.violations(c, p) for p, _, c in picks)
    assert covering_sample(SPACE, problems, 14, seed=4) == picks  # deterministic


def test_tuned_equal_to_the_default_is_the_default_measurement():
    default = SPACE.default_config(PROBLEM)
    picks = bench_picks(SPACE, [PROBLEM], _Store(dict(reversed(default.items()))))
    assert [tag for _, tag, _ in picks if "tuned" in tag] == ["default+tuned"]
    assert len({tuple(sorted(c.items())) for _, _, c in picks}) == len(picks)


def test_a_tuned_config_outside_the_candidates_is_its_own_pick():
    tuned = {**SPACE.default_config(PROBLEM), "group": 2, "raster": "n"}
    picks = bench_picks(SPACE, [PROBLEM], _Store(tuned))
    assert picks[-1][1:] == ("tuned", tuned)
    assert [t for _, t, _ in bench_picks(SPACE, [PROBLEM], None, seeds=False)] == ["default"]


def _row(tag, ms, vendor_ms=0.5):
    return {"problem": PROBLEM.key, "tag": tag, "ms": ms, "vendor_ms": vendor_ms, "ok": True,
            "config": {"blk_n": 256}, "message": ""}


def test_table_reports_the_shared_measurement_for_both_roles():
    flops = 2 * 4096 ** 3
    table = bench_table([_row("default+tuned", 0.5), _row("c1", 0.4)], lambda key: flops)
    line = next(x for x in table.splitlines() if x.startswith(f"| {PROBLEM.key}"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[1:5] == [f"{flops / t / 1e9:.1f}" for t in (0.5, 0.5, 0.4, 0.5)]
    assert "geomean tuned/vendor = 1.000 over 1 shapes" in table
    assert "geomean best/vendor = 1.250 over 1 shapes" in table


def test_validate_and_bench_commands_without_a_gpu(tmp_path, monkeypatch, capsys):
    pytest.importorskip("tvm")
    from autotune.runner import devices

    if devices.gpus_for_arch("sm_90a"):
        pytest.skip("a Hopper GPU is here: these would run")
    monkeypatch.chdir(tmp_path)
    toy = "toy_rowscale:RowScaleSm90Space"
    assert cli.main(["validate", toy, "--per-shape", "1", "--compile-workers", "1",
                     "--artifacts", "index"]) == 0
    rows = [json.loads(line) for line in open("autotune-results/validate/validate.jsonl")]
    assert [r["outcome"] for r in rows] == ["compiled"] * 4 and all(r["artifact"] for r in rows)
    assert all(r["artifact"].startswith(str(tmp_path / "index")) for r in rows)
    record = json.loads(open("autotune-results/validate/validate.md").read().split("\n\n")[0])
    assert record["provenance"] == "compile-only" and record["command"].startswith("autotune validate")
    index = json.loads(open("index/index.json").read())
    assert len(index) == len({(r["problem"], json.dumps(r["config"], sort_keys=True)) for r in rows})
    assert cli.main(["bench", toy, "--compile-workers", "0", "--artifacts", "index"]) == 0
    assert "not timed | | | | | | | nothing ran on a GPU" in capsys.readouterr().out
