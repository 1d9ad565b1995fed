"""`autotune compare` on a GPU writes its table and report shape by shape: a run killed at a time
limit keeps what it measured. The GPU side is faked (no GPU here): the dispatcher, the device and
the measurement of one shape."""

import types

import pandas as pd
import pytest

import autotune.compare.measure
import autotune.dispatch
import autotune.store
from autotune.compare import Measurement
from autotune.compare.__main__ import main as compare_cli
from autotune.spaces.base import Problem

SHAPES = ["16x4096x4096", "128x4096x4096", "1024x4096x4096", "4096x4096x4096"]
TITLE = "# gemm_sm90 on NVIDIA H200: our kernel, default, vendor and dispatch"


class Killed(Exception):
    pass


class Measured(list):
    """The problem keys measured, in order; the one at index `fail_at` raises instead, as a run
    killed at its time limit stops there."""

    fail_at = None


@pytest.fixture
def gpu(monkeypatch):
    def parse(text, dtype):
        return Problem.of(dtype, **dict(zip("MNK", map(int, text.split("x")))))

    space = types.SimpleNamespace(name="gemm_sm90", parse_problem=parse)
    measured = Measured()

    def measure(op, problem, *, rounds, block):
        if len(measured) == measured.fail_at:
            raise Killed
        measured.append(problem.key)
        m = problem.values["M"]
        return Measurement(problem.key, 2.0 * m * 4096 * 4096, m / 1e4, m / 8e3, m / 9e3)

    monkeypatch.setattr(autotune.store, "current_gpu", lambda: object())
    monkeypatch.setattr("torch.cuda.get_device_name", lambda index: "NVIDIA H200")
    monkeypatch.setattr(autotune.dispatch, "load",
                        lambda kernel, **kw: types.SimpleNamespace(space=space, store_path=None,
                                                                   first_use=None))
    monkeypatch.setattr(autotune.compare.measure, "measure", measure)
    return measured


def _problems(out) -> list[str]:
    return pd.read_csv(out / "table.csv").problem.tolist()


def _run(out):
    return compare_cli(["gemm", "--shapes", *SHAPES, "--out", str(out)])


def test_a_run_stopped_at_the_third_shape_leaves_a_partial_report(tmp_path, gpu):
    gpu.fail_at = 2
    with pytest.raises(Killed):
        _run(tmp_path)
    assert _problems(tmp_path) == [*gpu, "geomean"]
    assert len(gpu) == 2
    report = (tmp_path / "report.md").read_text()
    assert report.splitlines()[0] == f"{TITLE} (partial: 2 of 4 shapes)"
    assert "Geomean over 2 shapes" in report
    assert not list(tmp_path.glob("*.png"))  # plots come with the complete report only


def test_a_complete_run_writes_the_full_report_with_no_partial_marker(tmp_path, gpu):
    assert _run(tmp_path) == 0
    assert len(gpu) == 4
    assert _problems(tmp_path) == [*gpu, "geomean"]
    report = (tmp_path / "report.md").read_text()
    assert report.splitlines()[0] == TITLE and "partial" not in report
    assert "Geomean over 4 shapes" in report
    for name in ("tflops.png", "ratios.png"):
        assert (tmp_path / name).stat().st_size > 0 and f"]({name})" in report


def test_a_partial_table_is_the_complete_one_cut_short(tmp_path, gpu):
    assert _run(tmp_path / "full") == 0
    gpu.clear()
    gpu.fail_at = 3
    with pytest.raises(Killed):
        _run(tmp_path / "cut")
    full = (tmp_path / "full" / "table.csv").read_text().splitlines()
    cut = (tmp_path / "cut" / "table.csv").read_text().splitlines()
    assert cut[:4] == full[:4] and len(cut) == 5  # header, 3 shapes, geomean
