"""Leave-one-shape-out scoring (autotune/dispatch/loso.py): a held-out shape's route is scored
only with a time recorded on it; the committed trials.csv files read as the store's configs."""

from pathlib import Path

from autotune.dispatch import loso
from autotune.ops.gemm import GEMM
from autotune.spaces.base import Problem, SearchSpace
from autotune.spaces.gemm_sm90 import GemmSm90Space
from autotune.store import ConfigStore, Entry, config_id

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CFG = {"blk": 1}
GOOD = {"blk": 2}


class OneDefault(SearchSpace):
    name, arch, op = "one_default", "sm_90a", GEMM

    def parameters(self, problem):
        return {}

    def violations(self, config, problem):
        return []

    def default_config(self, problem):
        return dict(DEFAULT_CFG)

    def build(self, config, problem):
        raise AssertionError("leave-one-out never compiles")


def record(m, measured):
    p = Problem.of("bfloat16", M=m, N=4096, K=4096)
    times = {config_id(c): t for c, t in measured}
    best = min(measured, key=lambda ct: ct[1])
    return p.key, Entry(p.key, best[0], best[1], times[config_id(DEFAULT_CFG)], 2.0,
                        measured=times)


def test_a_borrowed_config_the_held_out_shape_never_timed_is_unknown_not_a_win():
    entries = dict([record(16, [(GOOD, 0.8), (DEFAULT_CFG, 1.0)]),
                    record(32, [(GOOD, 0.8), (DEFAULT_CFG, 1.0)]),
                    record(64, [(DEFAULT_CFG, 1.0)])])
    rows = loso.score(entries, OneDefault())
    def row(shape, rule):
        return next(r for r in rows if r["shape"] == shape and r["rule"] == rule)

    held = row("64x4096x4096", "classes, nearest")
    assert (held["route"], held["chosen_ms"], held["vs_default"]) == ("borrowed", None, None)
    # M=16 left out: GOOD won on one other shape only (M=64 never timed it): the default serves
    m16 = row("16x4096x4096", "classes, nearest")
    assert (m16["route"], m16["vs_default"], m16["vs_vendor"]) == ("default", 1.0, 2.0)
    lines = {s["what serves"]: s for s in loso.summary(rows)}
    nearest = lines["dispatch, classes, nearest"]
    assert nearest["scored (of those)"] == "0 of 1" and nearest["vs default"] == "1.000"
    # dispatch's rule: no bucket holds two of these shapes, so the default serves all three
    assert {row(s, "classes")["route"] for s in ("16x4096x4096", "32x4096x4096",
                                                 "64x4096x4096")} == {"default"}


def test_a_trials_csv_row_reads_as_the_config_its_store_recorded():
    # the H100 store as its studies exported it (graph-warm), before session 16 re-timed it
    store = ConfigStore.read(ROOT / "studies/2026-11-25-h100-gemm-s16/retime/store_before.json")
    times = loso.trial_times(ROOT / "studies/2026-11-23-h100-gemm-s3/retune/trials.csv",
                             GemmSm90Space.added_knobs)
    shared = [k for k in times if k in store.entries]
    assert len(shared) >= 20
    for key in shared:
        assert set(times[key]) <= set(store.entries[key].measured), key


def test_a_missing_records_file_is_one_clear_error(tmp_path, capsys):
    from autotune.dispatch.__main__ import main

    assert main(["loso", "--store", str(tmp_path / "none.json"), "--out", str(tmp_path)]) == 2
    assert f"no such file: {tmp_path / 'none.json'}" in capsys.readouterr().err
    assert main(["loso", "--out", str(tmp_path)]) == 2
    assert "name at least one --store" in capsys.readouterr().err
