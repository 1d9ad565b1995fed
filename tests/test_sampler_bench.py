"""The sampler benchmark (autotune/bench/samplers.py) on a committed recording, and our
`guided` sampler: runs are deterministic for a seed, scored on recorded medians, and the
guided sampler proposes legal configs only."""

import math
from pathlib import Path

import optuna
import pytest

from autotune.bench.sampler_cli import load_landscapes
from autotune.bench.samplers import (applies, benchmark, calibrated_model, run_sampler,
                                     runs_frame, start_configs, summary_frame)
from autotune.spaces import get_space
from autotune.study.samplers import make_sampler

STUDIES = Path(__file__).resolve().parent.parent / "studies"
RECORDING = STUDIES / "2026-11-23-h100-sampler-bench-s4" / "recording"


@pytest.fixture(scope="module")
def land():
    _, _, (land,) = load_landscapes([str(RECORDING)])
    return land


def test_a_replayed_run_is_deterministic_and_scored_on_recorded_medians(land):
    first = run_sampler(land, "random", seed=3, budget=12)
    assert run_sampler(land, "random", seed=3, budget=12).curve == first.curve
    assert len(first.curve) == 12
    assert all(b <= a for a, b in zip(first.curve, first.curve[1:]))  # best so far
    assert set(first.curve) <= set(land.medians)
    assert first.trials_to(math.inf) == 1
    other = run_sampler(land, "random", seed=4, budget=12)
    assert other.curve != first.curve


def test_a_start_is_measured_first(land):
    start = land.sources("default", "seed")
    run = run_sampler(land, "random", seed=0, budget=len(start), start=start, start_name="default")
    default = land.medians[land.configs.index(start[0])]
    assert run.curve[0] == default


def test_a_transfer_start_measures_the_calibrated_picks_then_the_default_start(land):
    mid = RECORDING.parent / "recording-1024x4096x4096"
    _, _, (_, other) = load_landscapes([str(RECORDING), str(mid)])
    model = calibrated_model(land, [land, other])
    first = start_configs(land, [land, other], "transfer", 3, model)
    default = land.sources("default", "seed")
    assert first[3:] == default and not any(c in default for c in first[:3])
    scores = [model.estimate_ms(c, land.problem) for c in first[:3]]
    assert scores == sorted(scores)
    _, skipped = benchmark([land], ["guided"], ["transfer"], seeds=1, budget=2)
    assert "no other shape" in skipped[f"transfer start on {land.problem.key}"]


def test_summary_counts_trials_to_each_tolerance(land):
    runs = [run_sampler(land, "random", seed=s, budget=10) for s in range(3)]
    frame = runs_frame(runs)
    assert list(frame["to_5pct"]) == [r.trials_to(0.05) for r in runs]
    summary = summary_frame(frame)
    assert summary.loc[0, "seeds"] == 3 and summary.loc[0, "sampler"] == "random"


def test_cmaes_does_not_apply_to_an_all_categorical_space(land):
    assert "categorical" in applies("cmaes", land)
    assert applies("tpe", land) is None


def test_guided_sampler_proposes_legal_configs_best_first():
    space = get_space("gemm_sm90")
    problem = space.parse_problem("64x28672x4096")
    study = optuna.create_study(sampler=make_sampler("guided", 0, space=space, problem=problem))
    distributions = space.parameters(problem)
    proposed = []
    for _ in range(8):
        trial = study.ask(distributions)
        assert space.violations(trial.params, problem) == []
        proposed.append(trial.params)
        study.tell(trial, space.estimate_ms(trial.params, problem))
    assert len({repr(sorted(p.items())) for p in proposed}) == 8  # never the same twice
    with pytest.raises(Exception, match="needs space= and problem="):
        make_sampler("guided", 0)



def test_guided_searches_only_what_a_compile_only_run_of_its_seed_prebuilt():
    """A GPU machine without TVM measures what a compile-only study elsewhere built: that
    study (no times: every proposal from the ranked pool) and the measuring one draw the same
    pool, so the measuring one, told `allowed`, proposes only prebuilt configs, and moves among
    them best first."""
    from optuna.trial import TrialState

    from autotune.spaces.sampling import config_key

    space = get_space("gemm_sm90")
    problem = space.parse_problem("200x5120x4096")
    distributions = space.parameters(problem)
    built = optuna.create_study(sampler=make_sampler("guided", 0, space=space, problem=problem))
    for _ in range(12):
        built.tell(built.ask(distributions), state=TrialState.PRUNED)  # compiled, not timed
    prebuilt = {config_key(t.params) for t in built.trials}
    assert len(prebuilt) == 12

    def allowed(config):
        return config_key(config) in prebuilt

    study = optuna.create_study(sampler=make_sampler("guided", 0, space=space, problem=problem,
                                                     allowed=allowed))
    for _ in range(12):
        trial = study.ask(distributions)
        study.tell(trial, space.estimate_ms(trial.params, problem))
    assert {config_key(t.params) for t in study.trials} == prebuilt  # all, and nothing else
    unfiltered = optuna.create_study(sampler=make_sampler("guided", 0, space=space,
                                                          problem=problem))
    for _ in range(12):
        trial = unfiltered.ask(distributions)
        unfiltered.tell(trial, space.estimate_ms(trial.params, problem))
    assert {config_key(t.params) for t in unfiltered.trials} != prebuilt  # moves go elsewhere

# Within 5% (the check) on the recorded shapes whose default alone is not there (at
# 4096^3 and 8192x28672x4096 it is: +0.8%, +2.7%), and within 2% on the two where no start
# config is: every one of 8 seeds of the default sampler gets there, but for 2-3 of 8 at
# 8192x28672x4096 within 2% (they stay 2.2% off after 50 trials, or get there at trial 44-51;
# which moved when the space gained the multicast knob, seeds 3 and 5 before, 1 and 5 after,
# and seed 3 at trial 49 or 51 from one process to another: the rate did not)
SEARCHED = [("recording", 0.05, 8), ("recording-1024x4096x4096", 0.05, 8),
            ("recording-8192x28672x4096", 0.02, 5), ("recording-1024x4096x4096", 0.02, 8)]


@pytest.mark.parametrize("recording,tolerance,of_8", SEARCHED)
def test_the_default_sampler_reaches_the_recorded_best_within_the_default_budget(
        recording, tolerance, of_8):
    """On committed H100 recordings, replayed with their noise: `autotune tune`'s default
    sampler, started as a study starts (the default, then the seeds), comes within
    `tolerance` of the recorded best within the CLI's default trial budget for `of_8` of 8
    seeds, and a seed replays the same run."""
    from autotune.cli import build_parser

    _, _, (land,) = load_landscapes([str(RECORDING.parent / recording)])
    tune = build_parser().parse_args(["tune", "gemm_sm90"])
    start = land.sources("default", "seed")
    runs = [run_sampler(land, tune.sampler, seed, tune.trials, start, "default")
            for seed in range(8)]
    reached = sum(r.trials_to(tolerance) <= tune.trials for r in runs)
    assert reached >= of_8, [r.curve for r in runs]
    assert run_sampler(land, tune.sampler, 0, tune.trials, start, "default").curve == runs[0].curve
    measured = [land.medians[land.configs.index(c)] for c in start]
    alone = measured if tolerance < 0.05 else measured[:1]  # what a real search must beat
    assert min(alone) > land.best_ms * (1 + tolerance)


def test_the_command_compares_starts_in_one_table_and_one_plot(tmp_path):
    import pandas as pd

    from autotune.cli import main

    mid = RECORDING.parent / "recording-1024x4096x4096"
    assert main(["bench-samplers", str(RECORDING), str(mid), "--samplers", "random",
                 "--starts", "default", "transfer", "--seeds", "1", "--budget", "3",
                 "--warm", "1", "--out", str(tmp_path)]) == 0
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert sorted(set(summary["start"])) == ["default", "transfer"] and len(summary) == 4
    assert (tmp_path / "curves_starts.png").stat().st_size > 0
