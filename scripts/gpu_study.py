"""GPU check of the tuner (run by the lead on a GPU machine): a short study of a real space on
every listed GPU, then the best config re-validated and timed against the vendor baseline with
the same timer.

    python scripts/gpu_study.py gemm_sm90 --shape 4096x4096x4096 --trials 24 --gpus 0
    python scripts/gpu_study.py gemm_sm90 --shape 4096x4096x4096 --trials 24 --gpus 0,1 [--ray]

Needs on the GPU machine: torch, cuda-bindings (present), optuna (+ sqlalchemy, alembic, ...),
ray for --ray, and TVM for candidates not already in the compile cache (--cache-dir)."""

import argparse
import collections
import json
import sys
import time

from autotune import cli


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("space")
    parser.add_argument("--shape", required=True)
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--gpus", default="0")
    parser.add_argument("--ray", action="store_true")
    parser.add_argument("--cache-dir")
    parser.add_argument("--storage", default="sqlite:///studies/gpu_study.db")
    parser.add_argument("--out", help="append this run's throughput and best result (JSON lines)")
    args = parser.parse_args()

    argv = ["tune", args.space, "--shapes", args.shape, "--trials", str(args.trials),
            "--gpus", args.gpus, "--storage", args.storage, "--seed", "0"]
    argv += ["--ray"] if args.ray else []
    argv += ["--cache-dir", args.cache_dir] if args.cache_dir else []
    start = time.perf_counter()
    status = cli.main(argv)
    wall_s = time.perf_counter() - start
    if status:
        return status

    import optuna
    import torch

    from autotune.runner.timing import time_launches
    from autotune.spaces import get_space
    from autotune.study import open_storage, study_name

    space = get_space(args.space)
    problem = space.parse_problem(args.shape)
    study = optuna.load_study(study_name=study_name(space, problem), storage=open_storage(args.storage))
    try:
        best = study.best_trial
    except ValueError:
        print("no successful trial: see `autotune results --storage ...` for causes")
        return 1
    inputs = space.make_inputs(problem, seed=0, device="cuda")
    vendor = space.vendor(problem, inputs)
    baseline = time_launches(lambda i: vendor(), 1)
    flops = space.flops(problem)
    print(f"best trial {best.number}: {best.value:.4g} ms ({flops / best.value / 1e9:.0f} TFLOP/s), "
          f"spread {best.user_attrs.get('spread', 0):.1%}; vendor {baseline.median_ms:.4g} ms "
          f"({flops / baseline.median_ms / 1e9:.0f} TFLOP/s) -> {baseline.median_ms / best.value:.2f}x "
          f"on {torch.cuda.get_device_name(0)}")
    # Throughput counts trials that reached a GPU (timed, or failed there); illegal configs and
    # duplicates are answered without one.
    outcomes = collections.Counter(t.user_attrs.get("outcome", "") for t in study.trials)
    on_gpu = sum(n for o, n in outcomes.items() if o not in ("illegal", "compile", "resources", ""))
    record = {
        "device": torch.cuda.get_device_name(0), "gpus": args.gpus, "ray": args.ray,
        "shape": args.shape, "trials": args.trials, "wall_s": round(wall_s, 1),
        "gpu_trials": on_gpu, "gpu_trials_per_min": round(on_gpu / wall_s * 60, 2),
        "outcomes": dict(outcomes), "best_ms": best.value, "best_config": best.params,
        "vendor_ms": baseline.median_ms, "best_over_vendor": round(baseline.median_ms / best.value, 3),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv),
    }
    print(json.dumps(record))
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
