"""Build configs for shapes (in parallel processes) and check each once on the GPU against the
reference with its outputs poisoned, before an experiment times them (scripts/power.py times,
it does not validate). With $AUTOTUNE_ARTIFACTS set, the builds go into that artifact index:
`--build-only` fills it here (TVM, no GPU) for a GPU machine without TVM, which then checks
(and scripts/power.py times) the prebuilt kernels.

    python3 scripts/check_configs.py [--kernel gemm] --procs 15 \
        --shapes 4096x4096x4096 ... --configs '{"consumers": 2, "wg_m": 128, "blk_n": 192}' ...
    python3 scripts/check_configs.py --variants variants.txt  # each line: a shape, its configs

A variants file (what the GPU suites hold busy, scripts/gpu_suite_common.sh) has one line per
shape: the shape, then its configs as shell words (`217x3840x15360 '{}' '{"group": 16}'`).
"""

import argparse
import json
import multiprocessing as mp
import os
import shlex
from concurrent.futures import ProcessPoolExecutor

from autotune.dispatch import load
from autotune.dispatch.artifacts import ArtifactIndex
from autotune.dispatch.load import build_with_tirx, resolve_space, tvm_available
from autotune.runner.validate import wrong_result


def compile_job(job) -> str:
    """Compile (space, problem, compile config) into $AUTOTUNE_ARTIFACTS' index, else tirx's
    disk cache; "" or what failed."""
    space, problem, config = job
    index = os.environ.get("AUTOTUNE_ARTIFACTS")
    try:
        build_with_tirx(space, problem, config, ArtifactIndex(index) if index else None)
        return ""
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:300]}"


def read_variants(path: str) -> list[tuple[str, list[str]]]:
    """(shape, configs) of each line of a variants file; blank and '#' lines skipped."""
    out = []
    for number, line in enumerate(open(path), 1):
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if len(words) < 2:
            raise SystemExit(f"{path}:{number}: a shape and at least one config, got {line!r}")
        out.append((words[0], words[1:]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="gemm", help="dispatch's name: gemm or attention")
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--shapes", nargs="+")
    parser.add_argument("--configs", nargs="+", help="JSON overrides of the default")
    parser.add_argument("--variants", help="a variants file instead of --shapes and --configs")
    parser.add_argument("--build-only", action="store_true",
                        help="compile into $AUTOTUNE_ARTIFACTS for --arch, check nothing (no GPU)")
    parser.add_argument("--arch", default="sm_90a", help="with --build-only: the GPU's arch")
    args = parser.parse_args()
    if bool(args.variants) == bool(args.shapes and args.configs):
        parser.error("give --variants FILE, or --shapes and --configs")
    pairs = (read_variants(args.variants) if args.variants
             else [(shape, args.configs) for shape in args.shapes])
    op = None if args.build_only else load(args.kernel)
    space = resolve_space(args.kernel, args.arch) if args.build_only else op.space
    jobs, failed = [], 0
    for shape, texts in pairs:
        problem = space.parse_problem(shape)
        for text in texts:
            config = {**space.default_config(problem), **json.loads(text)}
            broken = space.violations(config, problem)
            if broken:
                print(f"{shape} {text}: ILLEGAL {'; '.join(broken)}")
                failed += 1
                continue
            jobs.append(((space, problem, space.compile_config(config)), config))
    if tvm_available():
        with ProcessPoolExecutor(args.procs, mp_context=mp.get_context("spawn")) as pool:
            errors = list(pool.map(compile_job, [job for job, _ in jobs]))
    else:  # prebuilt: $AUTOTUNE_ARTIFACTS holds them, or provider.get says it cannot build
        errors = [""] * len(jobs)
    for ((_, problem, _), config), error in zip(jobs, errors):
        tag = f"{problem.key} {json.dumps(config, sort_keys=True)}"
        if not error and not args.build_only:
            inputs = space.make_inputs(problem, seed=1, device="cuda")
            kernel = op.provider.get(problem, config)
            error = ("not prebuilt in $AUTOTUNE_ARTIFACTS" if kernel is None else
                     wrong_result(lambda: kernel(*inputs), space, problem, inputs))
        failed += bool(error)
        print(f"{tag}: {error or ('built' if args.build_only else 'ok')}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
