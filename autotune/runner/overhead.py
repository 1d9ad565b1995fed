"""Per-trial overhead of the runners on this machine, with stand-ins for the compiler and the
device (each sleeps a given time), so what is measured is the runner's own cost: how many trials
a minute each reaches when a compile takes C s and a device evaluation E s.

    python -m autotune.runner.overhead --compile-s 1.0 --eval-s 0.1 --out results.json

Ray runs on a local cluster with logical GPUs (no GPU needed). The table compares each runner
with the bound its builder and devices allow: min(devices / E, compile slots / C).

With --driver, the whole tuning driver runs too (Optuna ask/tell on an SQLite storage, the
sampler's shadow study, the scheduler): the 4096^3 gemm_sm90 study of the GPU scaling runs
(scripts/gpu_scaling.sh) with the seeded random sampler, a compile taking C s (a compile-cache
hit is ~0.1 s) and a device job E s. It reports GPU trials a minute in steady state (as
`autotune results` counts them) and the driver process's CPU time per trial:

    python -m autotune.runner.overhead --driver --compile-s 0.1 --eval-s 0.002 --trials 200"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import json
import platform
import pstats
import sys
import time

from .base import Candidate, Compiled, Evaluator, Result, Timing
from .kinds import RunnerOptions
from .registry import make_runner


class SleepingCompiler:
    def __init__(self, seconds: float):
        self.seconds = seconds

    def __call__(self, space, config, problem, cache_dir=None) -> Compiled:
        time.sleep(self.seconds)
        return Compiled(None, {"registers": 1})


class SleepingEvaluator(Evaluator):
    def __init__(self, seconds: float):
        self.seconds = seconds

    def evaluate(self, job) -> Result:
        time.sleep(self.seconds)
        return Result(job.candidate.tag, timing=Timing(1.0, 1.0, 1.0, 1, 1, 1))


def trials_per_min(runner: str, compile_s: float, eval_s: float, devices: int, workers: int,
                   trials: int) -> float:
    """Steady state: the runner is warmed with one round of candidates first."""
    from ..testing.synthetic import SyntheticSpace

    space = SyntheticSpace()
    problem = space.parse_problem("128x48x32")
    options = RunnerOptions(devices=list(range(devices)), compile_workers=workers,
                            compiler=SleepingCompiler(compile_s),
                            evaluator=SleepingEvaluator(eval_s))
    candidates = [Candidate(space, {"block_m": 16, "block_n": 16, "stages": 1, "n": i}, problem)
                  for i in range(trials + workers + devices)]
    with make_runner(runner, space, options) as r:
        r.run(candidates[:workers + devices])
        start = time.perf_counter()
        r.run(candidates[workers + devices:])
        return trials / (time.perf_counter() - start) * 60


# Where the driver's time goes: cProfile's cumulative time of these, per trial (--profile).
PROFILED = {
    "ask: legal draws on the shadow study": ("proposals.py", "_legal_draw"),
    "ask: create the trial (Optuna RDB)": ("proposals.py", "_create"),
    "ask: mirror the study (read trials)": ("proposals.py", "_refresh"),
    "tell: user attrs (one write each)": ("_trial.py", "set_user_attr"),
    "tell: all": ("driver.py", "_tell"),
    "read the study's trials (every read)": ("_cached_storage.py", "get_all_trials"),
    "heartbeats": ("_cached_storage.py", "record_heartbeat"),
    "scheduler: collect": ("scheduler.py", "collect"),
    "driver: all": ("driver.py", "run"),
}


def profile_rows(stats, trials: int) -> dict[str, float]:
    """ms per trial of each PROFILED part (cProfile's cumulative wall time, its own overhead
    included), from a pstats.Stats of a driver run."""
    out = {}
    for label, (file, function) in PROFILED.items():
        out[label] = round(sum(ct for (f, _, fn), (_, _, _, ct, _) in stats.stats.items()
                               if f.endswith("/" + file) and fn == function) / trials * 1000, 1)
    return out


def driver_rates(runner: str, compile_s: float, eval_s: float, devices: int, workers: int,
                 trials: int, profile=None) -> tuple[float, float]:
    """(GPU trials a minute in steady state, driver CPU ms per trial) of a study tuned through
    `runner` with the stand-ins; under `profile` (a cProfile.Profile) if given."""
    import contextlib
    import tempfile

    from ..spaces import get_space
    from ..study import make_sampler, open_storage, tune_problem
    from ..study.results import device_trials_per_min

    space = get_space("gemm_sm90")
    problem = space.parse_problem("4096x4096x4096", "bfloat16")
    options = RunnerOptions(devices=list(range(devices)), compile_workers=workers,
                            compiler=SleepingCompiler(compile_s),
                            evaluator=SleepingEvaluator(eval_s))
    with tempfile.TemporaryDirectory() as scratch, make_runner(runner, space, options) as r:
        storage = open_storage(f"sqlite:///{scratch}/driver.db")
        cpu = time.process_time()
        with profile or contextlib.nullcontext():
            summary = tune_problem(space, problem, r, storage=storage, trials=trials,
                                   sampler=make_sampler("random", seed=0), final_top=0)
        cpu = time.process_time() - cpu
        return device_trials_per_min(summary.study)[1], cpu / summary.measured * 1000


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m autotune.runner.overhead", description=__doc__)
    p.add_argument("--compile-s", type=float, default=1.0)
    p.add_argument("--eval-s", type=float, default=0.1)
    p.add_argument("--workers", type=int, default=15, help="compile slots")
    p.add_argument("--trials", type=int, default=60)
    p.add_argument("--runners", nargs="+", default=["local", "ray"])
    p.add_argument("--driver", action="store_true",
                   help="tune a gemm_sm90 study through each runner (the driver's cost too)")
    p.add_argument("--profile", action="store_true",
                   help="with --driver: cProfile the driver, ms per trial of its parts (slower)")
    p.add_argument("--out", help="results file (JSON)")
    args = p.parse_args(argv)
    if args.profile and not args.driver:
        p.error("--profile profiles the driver: it needs --driver")
    import optuna
    import ray

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rows = []
    for devices in (1, 2):
        for runner in args.runners:
            if runner == "ray":
                ray.init(num_cpus=args.workers, num_gpus=devices, include_dashboard=False,
                         log_to_driver=False)
            try:
                if args.driver:
                    profile = cProfile.Profile() if args.profile else None
                    rate, cpu_ms = driver_rates(runner, args.compile_s, args.eval_s, devices,
                                                args.workers, args.trials, profile)
                else:
                    rate = trials_per_min(runner, args.compile_s, args.eval_s, devices,
                                          args.workers, args.trials)
            finally:
                if ray.is_initialized():
                    ray.shutdown()
            bound = 60 * min(devices / args.eval_s, args.workers / args.compile_s)
            row = {"runner": runner, "devices": devices, "trials_per_min": round(rate, 1),
                   "bound_per_min": round(bound, 1), "of_bound": round(rate / bound, 3)}
            line = (f"{runner:>6} {devices} device(s): {rate:7.1f} trials/min "
                    f"({rate / bound:.0%} of the {bound:.0f}/min the sleeps allow)")
            if args.driver:
                row["driver_cpu_ms_per_trial"] = round(cpu_ms, 1)
                line += f", driver CPU {cpu_ms:.1f} ms/trial"
            if args.profile:
                row["profile_ms_per_trial"] = profile_rows(pstats.Stats(profile), args.trials)
                line += "".join(f"\n    {k}: {v} ms" for k, v in
                                row["profile_ms_per_trial"].items())
            rows.append(row)
            print(line, flush=True)
    result = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "host": platform.node(), "python": platform.python_version(),
              "ray": ray.__version__, "command": " ".join(["python -m autotune.runner.overhead"]
                                                           + (argv or sys.argv[1:])),
              "optuna": optuna.__version__, "compile_s": args.compile_s, "eval_s": args.eval_s,
              "workers": args.workers, "trials": args.trials, "driver": args.driver,
              "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
