"""The command line: listing spaces, tuning (simulated, compile-only), and one clear error with
exit status 2 for each user mistake."""

import importlib
import importlib.util
import os
import subprocess
import sys

import pytest

from autotune import cli
from autotune.spaces import registry
from autotune.testing.synthetic import SyntheticSpace

SYNTHETIC = "autotune.testing.synthetic:SyntheticSpace"
SPACE = SyntheticSpace()
PROBLEM = SPACE.parse_problem("128x48x32")


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "table.csv"
    SPACE.recorded_frame(PROBLEM).to_csv(path, index=False)
    return str(path)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # default storage goes to ./studies/


def test_console_script_error_has_no_traceback():
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "autotune"), "tune",
                           "no_such_space"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("autotune: error: unknown search space 'no_such_space'")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("argv, message", [
    (["tune", "nope"], "unknown search space 'nope'"),
    (["tune", SYNTHETIC, "--shapes", "12xbanana"], "--shapes '12xbanana'"),
    (["tune", SYNTHETIC, "--fix", "tile=3"], "has no parameter 'tile'"),
    (["tune", SYNTHETIC, "--fix", "block_m=48"], "not one of [16, 32, 64, 128]"),
    (["tune", SYNTHETIC, "--fix", "stages=9"], "outside [1, 4]"),
    (["tune", SYNTHETIC, "--fix", "stages"], "expected NAME=VALUE"),
    (["tune", SYNTHETIC, "--shapes", "8x48x32", "--fix", "block_m=128"], "illegal fixed parameters"),
    (["tune", SYNTHETIC, "--sampler", "annealing"], "unknown sampler 'annealing'"),
    (["tune", SYNTHETIC, "--sampler", "gp"],
     "needs " + " and ".join(m for m in ("torch", "scipy") if importlib.util.find_spec(m) is None)),
    (["tune", SYNTHETIC, "--storage", "postgresql://u:secret@127.0.0.1:9/db"], "cannot open storage"),
    (["tune", SYNTHETIC, "--storage", "sqlite:////proc/no/such/dir/x.db"], "cannot create"),
    (["tune", SYNTHETIC, "--gpus", "0,0"], "distinct indices"),
    (["tune", SYNTHETIC, "--simulate", "missing.csv"], "cannot read recorded table"),
    (["results"], "pass --storage"),
])
def test_user_mistakes(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert "secret" not in err


def test_spaces_lists_plugins_and_survives_a_broken_one(monkeypatch, capsys):
    import importlib.metadata

    eps = [importlib.metadata.EntryPoint("synthetic", SYNTHETIC, registry.ENTRY_POINT_GROUP),
           importlib.metadata.EntryPoint("broken", "no_such_module:Space", registry.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(registry.importlib.metadata, "entry_points", lambda group: eps)
    assert cli.main(["spaces"]) == 0
    out = capsys.readouterr().out
    assert "broken  [BROKEN] cannot load no_such_module:Space: ModuleNotFoundError" in out
    assert "synthetic  (gemm, sm_90a)" in out and "block_m: [16, 32, 64, 128]" in out


def test_simulated_tune_finds_best_and_resumes(table, capsys):
    argv = ["tune", SYNTHETIC, "--shapes", "128x48x32", "--simulate", table, "--trials", "40",
            "--seed", "3", "--no-progress"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    best = SPACE.known_best(PROBLEM)
    assert f"best {SPACE.model_time_ms(best):.4g} ms" in out and str(best) in out
    assert os.path.exists("studies/synthetic.db")
    assert cli.main(argv) == 0  # same command again: the study is complete, nothing re-measured
    assert "40 trials (0 measured now: nothing new)" in capsys.readouterr().out
    assert cli.main(["results", "--space", "synthetic"]) == 0
    assert "M=128,N=48,K=32,dtype=float32" in capsys.readouterr().out


def test_tune_falls_back_to_compile_only_without_gpu(capsys):
    # The main job on a fresh CPU-only machine: the real Hopper GEMM plugin, real compiles.
    pytest.importorskip("tvm")
    info = registry.discover().get("gemm_sm90")
    if info is None or not info.loaded:
        pytest.skip(f"gemm_sm90 not loadable: {info and info.error}")
    from autotune.runner.devices import gpus_for_arch

    if gpus_for_arch("sm_90a"):
        pytest.skip("a Hopper GPU is present: no fallback")
    assert cli.main(["tune", "gemm_sm90", "--shapes", "2048x2048x2048", "--trials", "2",
                     "--compile-workers", "1", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "no GPU of arch sm_90a is present" in captured.err and "COMPILE-ONLY" in captured.err
    assert "2 trials (" in captured.out and "compiled" in captured.out



def test_without_tvm_a_study_measures_only_prebuilt_kernels(tmp_path, monkeypatch, capsys):
    """A GPU machine without TVM: a config the index lacks fails its trial with a cause that
    says so (never a compile attempt), and a sampler that cannot be kept to the index is named
    up front. An empty index and compile-only stand in for the GPU."""
    pytest.importorskip("tvm")
    for name in ("autotune.bench.compiler", "autotune.dispatch.load"):
        module = importlib.import_module(name)  # dispatch.load: also a function's name
        monkeypatch.setattr(module, "tvm_available", lambda: False)
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "index.json").write_text("{}")
    assert cli.main(["tune", "gemm_sm90", "--shapes", "2048x2048x2048", "--trials", "1",
                     "--compile-only", "--sampler", "random", "--artifacts", "idx",
                     "--compile-workers", "0", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "sampler 'random' cannot be kept to the kernels in idx" in captured.err
    assert "1 trials (" in captured.out and "compiled 1" not in captured.out
    import optuna

    from autotune.study import trials_table

    storage = "sqlite:///studies/gemm_sm90.db"
    (name,) = optuna.get_all_study_names(storage)
    rows = trials_table(optuna.load_study(study_name=name, storage=storage))
    (message,) = rows.loc[rows["state"] != "WAITING", "user_attrs_message"]  # seeds queued
    assert "not prebuilt in" in message and "no TVM here" in message

def test_the_gpu_evaluator_times_with_the_protocol(monkeypatch):
    from autotune.runner import devices, kinds

    made = {}

    class Pool:
        def __init__(self, evaluator, indices, provenance, names):
            made.update(evaluator=evaluator, indices=indices, provenance=provenance)

    h100 = [devices.Gpu(0, "H100", (9, 0))]
    monkeypatch.setattr(devices, "gpus_for_arch", lambda arch: h100)
    monkeypatch.setattr(kinds, "gpus_for_arch", lambda arch: h100)
    monkeypatch.setattr(kinds, "WorkerPool", Pool)
    monkeypatch.setattr(kinds, "_scheduler", lambda builder, pool, *a, **kw: pool)
    args = cli.build_parser().parse_args(["tune", "gemm_sm90", "--compile-workers", "0"])
    cli._make_runner(args, type("Space", (), {"arch": "sm_90a"})())
    assert made["indices"] == [0] and made["evaluator"].timer == "graph-window"
    assert made["provenance"].detail == {**made["provenance"].detail, "devices": ["H100"],
                                         "timer": "graph-window"}
    with pytest.raises(SystemExit):  # one protocol: no timer to choose
        cli.build_parser().parse_args(["tune", "gemm_sm90", "--timer", "rotate"])
