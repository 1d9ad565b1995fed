"""The sm100 GEMM plugin against the project's conformance kit, and a real compile-only study
of its space through the `autotune tune --compile-only` CLI (nothing is timed; without a
Blackwell GPU the CLI's own choice, validation in NumSim, is test_numsim_runner_e2e.py's)."""

import optuna
from optuna.trial import TrialState

from autotune import cli
from autotune.spaces.gemm_sm100 import GemmSm100Space, kernel_config
from autotune.testing import SpaceConformance

SPACE = GemmSm100Space()


class TestGemmSm100Conformance(SpaceConformance):
    space = SPACE
    # the table's N classes (1024: one consumer, blk_k 128; 4096: two consumers), an odd shape
    # that falls back to the book's kernel, and M/N/K tails
    shapes = ("1024x1024x1024", "4096x4096x4096", "1024x1024x1000", "4000x4008x4104")


def test_compile_only_study_end_to_end(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path}/studies.db"
    rc = cli.main(["tune", "gemm_sm100", "--compile-only", "--shapes", "1000x512x256", "--trials", "4",
                   "--sampler", "random", "--seed", "0", "--storage", storage,
                   "--cache-dir", str(tmp_path / "cache"), "--compile-workers", "1",
                   "--no-progress"])
    assert rc == 0
    out, err = capsys.readouterr()
    assert "no GPU timing was done" in out

    (summary,) = optuna.get_all_study_summaries(storage)
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    trials = study.get_trials()
    assert len(trials) == 4, [t.user_attrs for t in trials]
    for t in trials:  # illegal proposals are refused before compiling, and not stored
        assert t.value is None  # nothing was timed
        assert t.user_attrs["outcome"] == "compiled", t.user_attrs  # never a compile error
        assert t.state == TrialState.PRUNED
        res, cfg = t.user_attrs["resources"], kernel_config(t.params)
        assert res["spill_bytes"] == 0 and res["smem_bytes"] == cfg.smem_bytes
