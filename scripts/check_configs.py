"""Build configs for shapes (in parallel processes) and check each once on the GPU against the
reference with its outputs poisoned, before an experiment times them (scripts/power.py times,
it does not validate).

    python3 scripts/check_configs.py [--kernel gemm] --procs 15 \
        --shapes 4096x4096x4096 ... --configs '{"consumers": 2, "wg_m": 128, "blk_n": 192}' ...
"""

import argparse
import json
import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor

from autotune.dispatch import load
from autotune.dispatch.prebuild import compile_into_cache
from autotune.runner.validate import wrong_result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="gemm", help="dispatch's name: gemm or attention")
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--shapes", nargs="+", required=True)
    parser.add_argument("--configs", nargs="+", required=True, help="JSON overrides of the default")
    args = parser.parse_args()
    op = load(args.kernel)
    space = op.space
    jobs, failed = [], 0
    for shape in args.shapes:
        problem = space.parse_problem(shape)
        for text in args.configs:
            config = {**space.default_config(problem), **json.loads(text)}
            broken = space.violations(config, problem)
            if broken:
                print(f"{shape} {text}: ILLEGAL {'; '.join(broken)}")
                failed += 1
                continue
            jobs.append(((space, problem, space.compile_config(config)), config))
    with ProcessPoolExecutor(args.procs, mp_context=mp.get_context("spawn")) as pool:
        errors = list(pool.map(compile_into_cache, [job for job, _ in jobs]))
    for ((_, problem, _), config), error in zip(jobs, errors):
        tag = f"{problem.key} {json.dumps(config, sort_keys=True)}"
        if not error:
            inputs = space.make_inputs(problem, seed=1, device="cuda")
            kernel = op.provider.get(problem, config)
            error = wrong_result(lambda: kernel(*inputs), space, problem, inputs)
        failed += bool(error)
        print(f"{tag}: {error or 'ok'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
