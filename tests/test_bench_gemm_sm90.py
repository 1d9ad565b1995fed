"""The GEMM benchmark's job list and table (scripts/bench_gemm_sm90.py), on the CPU: a tuned
config that is also a candidate is timed once and reported for both roles."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import bench_gemm_sm90 as bench  # noqa: E402

SHAPE = "4096x4096x4096"
PROBLEM = bench.SPACE.parse_problem(SHAPE)


class _Store:
    def __init__(self, config):
        self.config = config

    def get(self, problem):
        return SimpleNamespace(config=self.config) if problem == PROBLEM else None


def test_tuned_equal_to_the_default_is_the_default_measurement():
    default = bench.SPACE.default_config(PROBLEM)
    jobs = bench.bench_jobs([SHAPE], _Store(dict(reversed(default.items()))))
    assert [j["tag"] for j in jobs].count("tuned") == 0
    assert [j["tag"] for j in jobs if j.get("tuned")] == ["default"]
    assert len({tuple(sorted(j["config"].items())) for j in jobs}) == len(jobs)


def test_a_tuned_config_outside_the_candidates_is_its_own_job():
    default = bench.SPACE.default_config(PROBLEM)
    tuned = {**default, "group": 2, "raster": "n"}
    assert tuned not in bench.candidates(PROBLEM)
    jobs = bench.bench_jobs([SHAPE], _Store(tuned))
    assert [(j["tag"], j.get("tuned")) for j in jobs][-1] == ("tuned", True)


def _row(tag, tflops, **kw):
    return {"problem": SHAPE, "tag": tag, "ok": True, "tflops": tflops, "cublas_tflops": 500.0,
            "config": {"blk_n": 256}, **kw}


def test_table_reports_the_shared_measurement_for_both_roles():
    table = bench.report([_row("default", 450.0, tuned=True), _row("c1", 550.0)])
    line = next(x for x in table.splitlines() if x.startswith(f"| {SHAPE}"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[1:5] == ["450.0", "450.0", "550.0", "500.0"]  # default, tuned, best, cuBLAS
    assert "geomean tuned/cuBLAS = 0.900 over 1 shapes" in table
    # results written before the flag existed name the tuned row by its tag
    legacy = bench.report([_row("default", 450.0), _row("tuned", 475.0)])
    assert "geomean tuned/cuBLAS = 0.950 over 1 shapes" in legacy
