"""Issue 16, case by case: bad input gets one clear error or a safe fallback with a warning, and
nothing is lost or mislabelled (compare, dispatch on a bad store, study bookkeeping, provenance,
the Python API, small commands)."""

from __future__ import annotations

import json
import os
import warnings

import optuna
import pytest

from autotune import cli
from autotune.compare import Measurement, comparison_table, markdown_report
from autotune.compare.__main__ import main as compare_cli
from autotune.dispatch import NoKernelWarning, load
from autotune.errors import UserError
from autotune.runner import RecordedTable, replay
from autotune.spaces.gemm_sm90 import GemmSm90Space
from autotune.store import ConfigStore, Entry, Gpu, Header, StoreMismatchWarning, expected_header
from autotune.store.__main__ import main as store_cli
from autotune.study import make_sampler, open_storage, tune_problem
from autotune.testing.synthetic import SyntheticSpace

optuna.logging.set_verbosity(optuna.logging.WARNING)

H200 = Gpu("sm_90a", "NVIDIA H200")
SPACE = SyntheticSpace()
PROBLEM = SPACE.parse_problem("128x48x32")


class FakeTensor:
    def __init__(self, *shape, dtype="torch.bfloat16"):
        self.shape, self.dtype = tuple(shape), dtype

    def is_contiguous(self):
        return True

    def new_empty(self, shape):
        return FakeTensor(*shape, dtype=self.dtype)

    T = property(lambda self: self)

    def __matmul__(self, other):
        return FakeTensor(self.shape[0], other.shape[0], dtype=self.dtype)


def _runner(problem=PROBLEM, slots=1):
    return replay(RecordedTable.from_frame(SPACE.recorded_frame(problem)), slots)


def _store(tmp_path, *entries, header=None):
    space = GemmSm90Space()
    store = ConfigStore(header or expected_header(space, H200))
    for e in entries:
        store.entries[e.problem] = e
    return store.write(tmp_path / "store.json")


def _load(path):
    return load("gemm", store=path, artifacts=path.parent / "a", gpu=H200, build=False,
                load_kernel=lambda p: (lambda *a, **k: None))


# -- compare ---------------------------------------------------------------------------------
def _h200_store(tmp_path, vendor=True):
    store = ConfigStore(Header(space="gemm_sm90", kernel="gemm", arch="sm_90a",
                               device="NVIDIA H200", template="x"))
    key = "M=16,N=4096,K=4096,dtype=bfloat16"
    store.add(Entry(key, {"blk_n": 32}, 0.01, default_ms=0.012, vendor_ms=0.02 if vendor else None))
    return store.write(tmp_path / "h200.json")


def test_compare_writes_under_the_working_directory(tmp_path, monkeypatch):
    path = _h200_store(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert compare_cli(["--from-store", str(path)]) == 0
    assert (work / "autotune-results" / "compare" / "gemm_sm90" / "nvidia-h200" / "report.md").exists()


def test_compare_without_a_gpu_says_so(capsys):
    if __import__("autotune.runner.devices", fromlist=["x"]).visible_gpus():
        pytest.skip("a GPU is here")
    assert cli.main(["compare", "gemm"]) == 2
    err = capsys.readouterr().err
    assert "no CUDA GPU here" in err and "--from-store" in err and "Traceback" not in err


def test_a_store_without_vendor_times_says_so():
    table = comparison_table([Measurement("M=1,N=8,K=8,dtype=bfloat16", 1.0, 0.01, 0.02, None)])
    text = markdown_report(table, "T", {}, [])
    assert "-x the vendor" not in text and "no vendor times" in text


def test_compare_refuses_a_kernel_the_store_is_not_for(tmp_path, capsys):
    path = _h200_store(tmp_path)
    assert compare_cli(["attention", "--from-store", str(path), "--out", str(tmp_path)]) == 2
    assert "is a store of gemm_sm90 (gemm), not of attention" in capsys.readouterr().err
    assert compare_cli(["gemm_sm90", "--from-store", str(path), "--out", str(tmp_path)]) == 0


def test_plot_titles_fit_their_figure(tmp_path):
    from autotune.compare.report import fit_title

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 4.5))
    fit_title(fig, ax, "gemm_sm90 on NVIDIA H100 80GB HBM3: tuned vs default vs vendor: "
                       "throughput per shape")
    fig.tight_layout()
    fig.canvas.draw()
    box, frame = ax.title.get_window_extent(), fig.bbox
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1
    plt.close(fig)


# -- dispatch on a bad store -----------------------------------------------------------------
@pytest.mark.parametrize("text", ["{not json", '{"schema": 1, "header": {', ""])
def test_a_corrupt_store_falls_back_to_the_defaults(tmp_path, text):
    path = tmp_path / "store.json"
    path.write_text(text)
    with pytest.warns(StoreMismatchWarning, match="store.json"):
        op = _load(path)
    assert op.selector.entries == {}
    assert op.route(FakeTensor(16, 4096), FakeTensor(4096, 4096)).reason in ("default", "vendor")


def test_an_entry_with_a_bad_key_is_skipped_with_a_warning(tmp_path):
    space = GemmSm90Space()
    good = space.parse_problem("16x4096x4096")
    path = _store(tmp_path, Entry("M=-5,N=4096,K=4096,dtype=bfloat16", {"x": 1}, 0.1),
                  Entry(good.key, space.default_config(good), 0.1))
    with pytest.warns(StoreMismatchWarning, match="M=-5"):
        op = _load(path)
    assert list(op.selector.entries) == [good.key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoKernelWarning)
        for m in (16, 7, 3000):  # exact, bucket, default: a legal call never raises
            op.route(FakeTensor(m, 4096), FakeTensor(4096, 4096))


def test_an_entry_illegal_for_its_own_shape_is_named(tmp_path):
    space = GemmSm90Space()
    p = space.parse_problem("16x4096x4096")
    bad = dict(space.default_config(p), stages=8, blk_n=256, consumers=2, swap_ab=False)
    assert space.violations(bad, p)
    path = _store(tmp_path, Entry(p.key, bad, 0.1))
    with pytest.warns(StoreMismatchWarning, match="illegal for its own shape"):
        op = _load(path)
    assert op.selector.entries == {}


def test_a_shape_no_kernel_can_take_says_why(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoreMismatchWarning)
        op = _load(tmp_path / "missing.json")
    with pytest.warns(NoKernelWarning) as record:
        op.route(FakeTensor(64, 4100), FakeTensor(4096, 4100))
    text = str(record[0].message)
    assert "multiple of 8" in text and "prebuild" not in text


# -- study bookkeeping -----------------------------------------------------------------------
def test_fix_holds_on_a_resumed_study(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/s.db")

    class Seeded(SyntheticSpace):
        def seed_configs(self, problem):
            return [{"block_m": 32, "block_n": 32, "stages": 2}, {"block_m": 64, "block_n": 64,
                                                                   "stages": 2}]

    space = Seeded()
    runner = replay(RecordedTable.from_frame(space.recorded_frame(PROBLEM)))
    tune_problem(space, PROBLEM, runner, storage=storage, trials=1, retime_best=False,
                 sampler=make_sampler("random", 0), final_top=0)
    runner = replay(RecordedTable.from_frame(space.recorded_frame(PROBLEM)))
    fixed = {"block_m": 64}
    summary = tune_problem(space, PROBLEM, runner, storage=storage, trials=5, retime_best=False,
                           sampler=make_sampler("random", 0, fixed), fixed=fixed, final_top=0)
    assert {c["block_m"] for c in runner.pool.measured} == {64}
    assert summary.finished == 5


def test_duplicates_do_not_count_toward_the_budget(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/s.db")
    skinny = SPACE.parse_problem("16x48x32")
    summary = tune_problem(SPACE, skinny, _runner(skinny), storage=storage, trials=10,
                           sampler=make_sampler("random", 0), retime_best=False, final_top=0)
    trials = summary.study.get_trials()
    measured = [t for t in trials if "duplicate_of" not in t.user_attrs]
    assert len(measured) == summary.finished == 10 and len(trials) > 10


def test_results_counts_a_requeued_trial_once(tmp_path, capsys):
    url = f"sqlite:///{tmp_path}/s.db"
    storage = open_storage(url)
    tune_problem(SPACE, PROBLEM, _runner(), storage=storage, trials=3,
                 sampler=make_sampler("random", 0), retime_best=False, final_top=0)
    (name,) = optuna.get_all_study_names(storage)
    study = optuna.load_study(study_name=name, storage=storage)
    stale = study.ask()  # a trial whose driver died: failed by its heartbeat, no outcome
    study.tell(stale, state=optuna.trial.TrialState.FAIL)
    from autotune.study import best_configs

    row = best_configs(storage).iloc[0]
    assert (row.trials, row.failed) == (3, 0)


def test_results_on_a_missing_storage_file_is_an_error(tmp_path, capsys):
    assert cli.main(["results", "--storage", f"sqlite:///{tmp_path}/typo.db"]) == 2
    assert "no storage" in capsys.readouterr().err and not (tmp_path / "typo.db").exists()


def test_python_api_refuses_a_non_positive_budget(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/s.db")
    with pytest.raises(ValueError, match="trials must be at least 1"):
        tune_problem(SPACE, PROBLEM, _runner(), storage=storage, trials=0)


@pytest.mark.parametrize("fixed, why", [({"tile": 3}, "has no parameter 'tile'"),
                                        ({"block_m": 48}, "not one of"),
                                        ({"block_m": 128, "block_n": 128, "stages": 4},
                                         "illegal fixed parameters")])
def test_python_api_refuses_an_illegal_fixed(tmp_path, fixed, why):
    storage = open_storage(f"sqlite:///{tmp_path}/s.db")
    with pytest.raises(UserError, match=why):
        tune_problem(SPACE, PROBLEM, _runner(), storage=storage, trials=2, fixed=fixed)


def test_python_api_names_a_storage_it_cannot_open():
    with pytest.raises(UserError, match="cannot create the directory"):
        tune_problem(SPACE, PROBLEM, _runner(), storage="sqlite:////proc/no/such/x.db", trials=2)


def test_negative_compile_workers_is_one_error(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["tune", "autotune.testing.synthetic:SyntheticSpace", "--compile-only",
                     "--compile-workers", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--compile-workers -1" in err and err.count("\n") == 1


def test_store_show_on_a_missing_file_is_one_error(tmp_path, capsys):
    assert store_cli(["show", str(tmp_path / "nope.json")]) == 2
    err = capsys.readouterr().err
    assert "nope.json" in err and "Traceback" not in err


# -- provenance ------------------------------------------------------------------------------
def test_replayed_studies_are_named_and_labelled_so(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/s.db")
    summary = tune_problem(SPACE, PROBLEM, _runner(), storage=storage, trials=3,
                           sampler=make_sampler("random", 0), final_top=0)
    assert summary.study.study_name.endswith("/replayed")
    assert summary.study.user_attrs["provenance"]["kind"] == "replayed"


def test_a_store_of_replayed_times_is_labelled_and_never_mixed(tmp_path, capsys):
    url = f"sqlite:///{tmp_path}/s.db"
    tune_problem(SPACE, PROBLEM, _runner(), storage=open_storage(url), trials=3,
                 sampler=make_sampler("random", 0), final_top=0)
    out = tmp_path / "store.json"
    assert store_cli(["export", "--space", "autotune.testing.synthetic:SyntheticSpace",
                      "--storage", url, "--device", "NVIDIA H100 80GB HBM3", "--out", str(out)]) == 0
    header = json.loads(out.read_text())["header"]
    assert header["provenance"].startswith("replayed from")
    measured = ConfigStore(Header(space="synthetic", kernel="gemm", arch="sm_90a",
                                  device="NVIDIA H100 80GB HBM3", template=header["template"]))
    measured.add(Entry(PROBLEM.key, {"block_m": 16}, 1.0))
    other = measured.write(tmp_path / "measured.json")
    assert store_cli(["merge", str(out), str(other), "--out", str(tmp_path / "m.json")]) == 2
    assert "provenance" in capsys.readouterr().err


def test_a_measured_study_is_not_resumed_on_another_device(tmp_path):
    from autotune.runner import Provenance
    from autotune.study import open_study

    storage = open_storage(f"sqlite:///{tmp_path}/s.db")
    open_study(SPACE, PROBLEM, storage, provenance=Provenance("measured", {"devices": ["A"]}))
    with pytest.raises(UserError, match="measured on A"):
        open_study(SPACE, PROBLEM, storage, provenance=Provenance("measured", {"devices": ["B"]}))


# -- plugin authors --------------------------------------------------------------------------
def test_the_kit_catches_violations_that_raise_on_a_missing_knob():
    from autotune.testing import SpaceConformance

    class Raising(SyntheticSpace):
        def violations(self, config, problem):
            return [] if config["block_m"] <= problem["M"] else ["too big"]

    kit = type("Kit", (SpaceConformance,), {"space": Raising(), "registered": False})()
    with pytest.raises(AssertionError, match="block_m"):
        kit.test_a_missing_knob_is_a_violation()
    ok = type("Kit", (SpaceConformance,), {"space": SyntheticSpace(), "registered": False})()
    ok.test_a_missing_knob_is_a_violation()


def test_the_readme_lists_what_a_plugin_defines():
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    for name in ("parse_problem", "make_inputs", "output_indices", "default_shapes",
                 "SpaceConformance", "T.prim_func", "time_ms", "cause"):
        assert name in readme, name
