"""Per-trial overhead of the runners on this machine, with stand-ins for the compiler and the
device (each sleeps a given time), so what is measured is the runner's own cost: how many trials
a minute each reaches when a compile takes C s and a device evaluation E s.

    python -m autotune.runner.overhead --compile-s 1.0 --eval-s 0.1 --out results.json

Ray runs on a local cluster with logical GPUs (no GPU needed). The table compares each runner
with the bound its builder and devices allow: min(devices / E, compile slots / C)."""

from __future__ import annotations

import argparse
import datetime
import json
import platform
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m autotune.runner.overhead", description=__doc__)
    p.add_argument("--compile-s", type=float, default=1.0)
    p.add_argument("--eval-s", type=float, default=0.1)
    p.add_argument("--workers", type=int, default=15, help="compile slots")
    p.add_argument("--trials", type=int, default=60)
    p.add_argument("--runners", nargs="+", default=["local", "ray"])
    p.add_argument("--out", help="results file (JSON)")
    args = p.parse_args(argv)
    import ray

    rows = []
    for devices in (1, 2):
        for runner in args.runners:
            if runner == "ray":
                ray.init(num_cpus=args.workers, num_gpus=devices, include_dashboard=False,
                         log_to_driver=False)
            try:
                rate = trials_per_min(runner, args.compile_s, args.eval_s, devices,
                                      args.workers, args.trials)
            finally:
                if ray.is_initialized():
                    ray.shutdown()
            bound = 60 * min(devices / args.eval_s, args.workers / args.compile_s)
            rows.append({"runner": runner, "devices": devices, "trials_per_min": round(rate, 1),
                         "bound_per_min": round(bound, 1), "of_bound": round(rate / bound, 3)})
            print(f"{runner:>6} {devices} device(s): {rate:7.1f} trials/min "
                  f"({rate / bound:.0%} of the {bound:.0f}/min the sleeps allow)", flush=True)
    result = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "host": platform.node(), "python": platform.python_version(),
              "ray": ray.__version__, "command": " ".join(["python -m autotune.runner.overhead"]
                                                           + (argv or sys.argv[1:])),
              "compile_s": args.compile_s, "eval_s": args.eval_s, "workers": args.workers,
              "trials": args.trials, "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
