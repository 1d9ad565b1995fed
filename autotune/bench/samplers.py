"""`autotune bench-samplers`: how many trials each sampler needs to come within 1%, 2% and 5%
of a recording's best, replayed with the recorded noise, over many seeds.

A run is one sampler, one seed, one recorded shape (a Landscape) and one start:
- `cold`: the sampler alone;
- `default`: the recorded default and seed configs first, as `autotune tune` starts;
- `warm`: the fastest configs of the other recorded shapes (nearest shapes first: what a
  study of a new shape can take from the studies of its neighbours), then the default start;
- `transfer`: the cost model calibrated on the other recorded shapes (study/transfer.py): the
  configs it ranks fastest first (`--warm` of them, from the default's and seeds' one-knob
  neighbourhoods and a uniform legal pool), then the default start; `guided` also ranks its
  moves with that model.
It drives the sampler with Optuna's ask/tell in memory, as the tuning driver does: an illegal
proposal is told PRUNED and costs no trial; a legal one is projected onto the recording
(landscape.py) and, if that config was not measured in this run yet, replayed through the
simulated runner (time drawn within its recorded spread, seeded by the run's seed), which is a
trial; else the earlier observation is told again, free (a duplicate). A trial's quality is the
recorded median of the config measured, so noise misleads the search but not the score.

Trials to reach X% is the first trial after which a config within X% of the recorded best has
been measured; a run that never gets there within its budget is censored (reported as not
reached: a median of "-" means fewer than half the seeds got there)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import math
import time
import warnings

import numpy as np
import optuna
import pandas as pd
from optuna.trial import TrialState

from ..runner.base import Candidate
from ..runner.kinds import replay
from ..spaces.base import Config
from ..study.samplers import make_sampler
from ..study.transfer import CalibratedModel, best_candidates
from .landscape import Landscape

TOLERANCES = (0.01, 0.02, 0.05)
# A sampler that keeps proposing illegal configs, or configs measured already, has stopped
# searching (the driver's limits; GPSampler, which ignores pruned trials, repeats one illegal
# proposal: stop it sooner).
REFUSED_IN_A_ROW, SAME_REFUSED_IN_A_ROW, DUPLICATES_IN_A_ROW = 2000, 20, 100


def applies(sampler: str, land: Landscape) -> str | None:
    """Why a sampler does not apply to a space, or None."""
    if sampler == "cmaes":
        from optuna.distributions import CategoricalDistribution

        if all(isinstance(d, CategoricalDistribution)
               for d in land.space.parameters(land.problem).values()):
            return ("every knob is categorical: Optuna's CmaEsSampler models only numeric "
                    "parameters and draws categorical ones with its independent (random) "
                    "sampler, so it would be the random sampler")
    return None


@dataclasses.dataclass
class Run:
    problem: str
    sampler: str
    start: str
    seed: int
    budget: int
    curve: list[float]  # after each trial: best recorded median measured so far (inf: none)
    best_ms: float
    misses: int = 0  # legal proposals not recorded, measured as their nearest recorded config
    refused: int = 0  # illegal proposals (no trial)
    duplicates: int = 0  # proposals whose config this run had measured (no trial)
    stopped: str = ""
    wall_s: float = 0.0

    def trials_to(self, tolerance: float) -> float:
        """First trial (1-based) within `tolerance` of the best; inf if none within budget."""
        limit = self.best_ms * (1 + tolerance)
        return next((i + 1 for i, v in enumerate(self.curve) if v <= limit), math.inf)


def run_sampler(land: Landscape, sampler: str, seed: int, budget: int,
                start: list[Config] = (), start_name: str = "cold", estimate=None) -> Run:
    """One run: `sampler` with `seed` for up to `budget` trials, `start` configs first;
    `estimate`: the cost model `guided` ranks with (None: the plugin's)."""
    space, problem = land.space, land.problem
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # experimental-feature and fallback notices
        study = optuna.create_study(sampler=make_sampler(sampler, seed, land.fixed or None,
                                                         space=space, problem=problem,
                                                         estimate=estimate))
    for config in start:
        study.enqueue_trial(config, skip_if_exists=True)
    runner = replay(land.table, seed=seed)
    distributions = space.parameters(problem)
    run = Run(problem.key, sampler, start_name, seed, budget, [], land.best_ms)
    observed: dict[int, float | None] = {}
    best, refused_streak, last_refused, same, dup_streak = math.inf, 0, None, 0, 0
    clock = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while len(run.curve) < budget:
            trial = study.ask(distributions)
            params = trial.params
            if space.violations(params, problem):
                study.tell(trial, state=TrialState.PRUNED)
                run.refused += 1
                refused_streak += 1
                same = same + 1 if params == last_refused else 1
                last_refused = params
                if refused_streak >= REFUSED_IN_A_ROW or same >= SAME_REFUSED_IN_A_ROW:
                    run.stopped = (f"proposed {refused_streak} illegal configs in a row"
                                   + (f" ({same}x the same)" if same > 1 else ""))
                    break
                continue
            refused_streak = 0
            i, exact = land.nearest(params)
            run.misses += not exact
            if i in observed:
                _tell(study, trial, observed[i])
                run.duplicates += 1
                dup_streak += 1
                if dup_streak >= DUPLICATES_IN_A_ROW:
                    run.stopped = f"proposed {dup_streak} measured configs in a row"
                    break
                continue
            dup_streak = 0
            (result,) = runner.run([Candidate(space, land.configs[i], problem)])
            observed[i] = result.time_ms if result.ok else None
            _tell(study, trial, observed[i])
            if result.ok:
                best = min(best, land.medians[i])
            run.curve.append(best)
    runner.close()
    run.wall_s = time.perf_counter() - clock
    return run


def _tell(study, trial, value: float | None) -> None:
    if value is None:
        study.tell(trial, state=TrialState.FAIL)
    else:
        study.tell(trial, value)


def warm_configs(land: Landscape, others: list[Landscape], count: int) -> list[Config]:
    """Up to `count` legal configs for `land`: the fastest of each other shape in turn, nearest
    shapes first, then their second fastest, and so on (recorded knobs pinned as in `land`)."""
    ranked = [o.ranked() for o in sorted(others, key=land.shape_distance)]
    out, seen = [], set()
    for depth in range(max((len(r) for r in ranked), default=0)):
        for configs in ranked:
            if depth < len(configs) and len(out) < count:
                config = {**configs[depth], **land.fixed}
                key = repr(sorted(config.items()))
                if key not in seen and not land.space.violations(config, land.problem):
                    seen.add(key)
                    out.append(config)
    return out


def calibrated_model(land: Landscape, landscapes: list[Landscape]) -> CalibratedModel:
    """The cost model calibrated on every recorded shape but `land`'s."""
    return CalibratedModel.fit(land.space, [(o.problem, o.configs, o.medians)
                                            for o in landscapes if o is not land])


def start_configs(land: Landscape, landscapes: list[Landscape], start: str, warm: int,
                  model: CalibratedModel | None = None) -> list[Config]:
    """The configs a run measures first; `transfer` needs the calibrated `model`."""
    if start == "cold":
        return []
    first = land.sources("default", "seed")
    if start == "default":
        return first
    if start == "transfer":
        borrowed = best_candidates(model, land.problem, first, warm, fixed=land.fixed)
    else:
        borrowed = warm_configs(land, [o for o in landscapes if o is not land], warm)
    return borrowed + [c for c in first if c not in borrowed]


def benchmark(landscapes: list[Landscape], samplers, starts, seeds: int, budget: int,
              warm: int = 8, progress=None, processes: int = 1) -> tuple[list[Run], dict[str, str]]:
    """Every (shape, start, sampler, seed) run, over `processes` worker processes (runs are
    independent and seeded: the same results in any number); and the samplers that do not
    apply, with why."""
    tasks, skipped = [], {}
    for land in landscapes:
        cap = min(budget, len(land.configs))
        for start in starts:
            if start == "transfer" and len(landscapes) < 2:
                skipped[f"transfer start on {land.problem.key}"] = "no other shape to learn from"
                continue
            model = calibrated_model(land, landscapes) if start == "transfer" else None
            first = start_configs(land, landscapes, start, warm, model)
            estimate = model.estimate_ms if model else None
            if start != "cold" and not first:
                skipped[f"{start} start on {land.problem.key}"] = "no configs to start from"
                continue
            for sampler in samplers:
                why = applies(sampler, land)
                if why:
                    skipped[sampler] = why
                    continue
                tasks += [(land, sampler, seed, cap, first, start, estimate)
                          for seed in range(seeds)]
    runs = []
    with concurrent.futures.ProcessPoolExecutor(processes) if processes > 1 else \
            contextlib.nullcontext() as pool:
        results = pool.map(_run, tasks) if pool else map(_run, tasks)
        for run in results:
            runs.append(run)
            if progress:
                progress(run)
    return runs, skipped


def _run(task) -> Run:
    return run_sampler(*task)


def runs_frame(runs: list[Run]) -> pd.DataFrame:
    rows = []
    for r in runs:
        row = {"problem": r.problem, "start": r.start, "sampler": r.sampler, "seed": r.seed,
               "budget": r.budget, "trials": len(r.curve), "misses": r.misses,
               "refused": r.refused, "duplicates": r.duplicates, "stopped": r.stopped,
               "final_gap": r.curve[-1] / r.best_ms - 1 if r.curve else math.inf,
               "wall_s": r.wall_s}
        row.update({f"to_{round(t * 100)}pct": r.trials_to(t) for t in TOLERANCES})
        rows.append(row)
    return pd.DataFrame(rows)


def _median_iqr(values: pd.Series) -> str:
    """Median [p25-p75] of trial counts where inf is not reached: '-' past the budget."""
    def fmt(x):
        return "-" if not math.isfinite(x) else f"{x:g}"
    q = np.percentile(values.to_numpy(dtype=float), [25, 50, 75], method="lower")
    return f"{fmt(q[1])} [{fmt(q[0])}-{fmt(q[2])}]"


def summary_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (shape, start, sampler): trials to each tolerance (median [p25-p75] over seeds), the
    share of seeds that got within 2%, and the median final gap and misses per trial."""
    out = []
    for (problem, start, sampler), g in frame.groupby(["problem", "start", "sampler"], sort=False):
        row = {"problem": problem, "start": start, "sampler": sampler, "seeds": len(g),
               "budget": int(g["budget"].max())}
        for t in TOLERANCES:
            row[f"trials to {round(t * 100)}%"] = _median_iqr(g[f"to_{round(t * 100)}pct"])
        row["reached 2%"] = f"{np.isfinite(g['to_2pct']).mean():.0%}"
        row["final gap"] = f"{g['final_gap'].median():.1%}"
        row["misses/trial"] = f"{(g['misses'] / g['trials'].clip(lower=1)).median():.2f}"
        row["stopped early"] = int((g["stopped"] != "").sum())
        out.append(row)
    return pd.DataFrame(out)


def overall_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (start, sampler), over shapes: the median over seeds of trials to 2% and 5%, as the
    worst and the median shape (inf: not reached within the budget in most seeds)."""
    per_shape = frame.groupby(["start", "sampler", "problem"], sort=False)[
        ["to_1pct", "to_2pct", "to_5pct"]].median()
    out = []
    for (start, sampler), g in per_shape.groupby(level=[0, 1], sort=False):
        row = {"start": start, "sampler": sampler, "shapes": len(g)}
        for col, name in (("to_2pct", "2%"), ("to_5pct", "5%")):
            row[f"median shape, trials to {name}"] = g[col].median()
            row[f"worst shape, trials to {name}"] = g[col].max()
        out.append(row)
    return pd.DataFrame(out)


def markdown(frame: pd.DataFrame) -> str:
    """A GitHub Markdown table of a frame (no `tabulate`: the GPU machines lack it)."""
    def cell(v):
        return f"{v:g}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |",
             "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |"
              for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def plot_curves(runs: list[Run], starts: list[str], path) -> None:
    """Best found / recorded best per trial: median over seeds (line) and p25-p75 (band), one
    panel per shape, one line per sampler (and start, given several: warm against cold)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = [r for r in runs if r.start in starts]
    problems = list(dict.fromkeys(r.problem for r in chosen))
    lines = list(dict.fromkeys((r.start, r.sampler) for r in chosen))
    cols = min(4, len(problems))
    rows = math.ceil(len(problems) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, problem in zip(axes.flat, problems):
        top = 1.05  # the y range: what the p75 bands reach (the start's worst), up to +60%
        for start, sampler in lines:
            curves = [r for r in chosen
                      if r.problem == problem and r.start == start and r.sampler == sampler]
            if not curves:
                continue
            length = max(len(r.curve) for r in curves)
            # a run that stopped early keeps its last best; before any success: no value
            values = np.array([[(r.curve[min(i, len(r.curve) - 1)] if r.curve else math.inf)
                                / r.best_ms for i in range(length)] for r in curves])
            values[~np.isfinite(values)] = np.nan
            x = np.arange(1, length + 1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns early on
                lo, mid, hi = np.nanpercentile(values, [25, 50, 75], axis=0)
            ax.plot(x, mid, label=sampler if len(starts) == 1 else f"{start}: {sampler}")
            ax.fill_between(x, lo, hi, alpha=0.15)
            top = max(top, np.nanmax(hi, initial=1.0))
        ax.axhline(1.02, color="grey", lw=0.6, ls="--")
        ax.set_title(problem.split(",dtype")[0].replace(",", " "), fontsize=8)
        ax.set_ylim(0.99, min(1.6, top + 0.01))
        ax.set_xlabel("trials")
        ax.set_ylabel("best found / recorded best")
    for ax in list(axes.flat)[len(problems):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"best found per trial, start: {', '.join(starts)} (median and p25-p75 over "
                 "seeds; dashed: 2%)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
