"""`autotune tune` of the sm_100a spaces on a machine with no Blackwell GPU, end to end: each
trial is compiled and resource-checked for sm_100a and validated in NumSim for real at a proxy
shape; the command says that nothing was timed and the study holds no time. Builds are cached
(tirx's compile cache, NumSim's by kernel source): warm, each takes 40-60 s on 2 busy cores."""

import optuna
import pytest
from optuna.trial import TrialState

from autotune import cli
from tirx import numsim

REASON = numsim.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"NumSim unavailable: {REASON}")


def _tune(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("autotune.runner.devices.visible_gpus", lambda: [])  # no Blackwell here
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    code = cli.main(["tune", *argv, "--storage", storage, "--no-progress",
                     "--compile-workers", "1", "--sampler", "random", "--seed", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "running SIMULATED VALIDATION (runner numsim)" in err
    assert "NOTHING WAS TIMED" in out
    (name,) = optuna.get_all_study_names(storage)
    study = optuna.load_study(study_name=name, storage=storage)
    assert name.endswith("/validated") and study.user_attrs["timed"] is False
    return out, study.get_trials(deepcopy=False)


def test_gemm_sm100_is_validated_in_numsim_and_not_timed(tmp_path, monkeypatch, capsys):
    out, trials = _tune(["gemm_sm100", "--shapes", "256x256x256", "--trials", "2"],
                        tmp_path, monkeypatch, capsys)
    assert "2 trials (2 validated now" in out
    assert [(t.state, t.value, t.user_attrs["outcome"]) for t in trials] \
        == [(TrialState.PRUNED, None, "validated")] * 2
    for t in trials:
        assert t.user_attrs["rel_error"] < 2e-2
        assert t.user_attrs["resources"]["spill_bytes"] == 0  # compiled and checked too


def test_fa4_sm100_is_validated_in_numsim_and_not_timed(tmp_path, monkeypatch, capsys):
    # The default, then its first seed (threshold 0: a launch argument, so the same binary).
    out, trials = _tune(["fa4_sm100", "--shapes", "1x256/2/128", "--trials", "2"],
                        tmp_path, monkeypatch, capsys)
    assert "2 trials (2 validated now" in out
    done = [t for t in trials if t.state.is_finished()]
    assert [(t.state, t.value, t.user_attrs["outcome"]) for t in done] \
        == [(TrialState.PRUNED, None, "validated")] * 2
    assert [t.params["rescale_threshold"] for t in done] == [8, 0]
    assert done[1].user_attrs["compile_s"] == 0.0  # one compile for both
    for t in done:
        assert t.user_attrs["rel_error"] < 2e-2
        assert t.user_attrs["resources"]["spill_bytes"] == 0
