"""Profile our sm90 GEMM against cuBLAS on one shape with Nsight Compute: where the gap is
(DRAM and L2 traffic, issue stalls, occupancy), not only how big it is.

    python scripts/ncu_gemm.py build .gpu/ncu 512x6144x4096 [--store FILE] \
        [--config TAG='{"blk_n": 240}' ...]                                   # here (TVM)
    bash scripts/ncu_gemm.sh .gpu/ncu 512x6144x4096                           # GPU machine
    python scripts/ncu_gemm.py run .gpu/ncu 512x6144x4096                     # what ncu runs
    python scripts/ncu_gemm.py flushes .gpu/ncu 512x6144x4096                 # GPU machine

`build` compiles the shape's default config, with a store its tuned one, and each `--config`
(JSON overrides of the default, under its tag). `run` launches
each once and torch.matmul once, on fresh inputs (ncu flushes caches and fixes clocks per
profiled kernel, so each is measured cold, like the benchmark's do_bench). `flushes` times the
same kernels at the GPU's own clocks under four ways of making L2 cold, to tell a kernel's
cost from the protocol's: a memset of 256 MB before each launch (do_bench: L2 left full of
dirty lines), a read of 256 MB before each launch (L2 left clean), launches alone over input
sets rotated past L2 (no flush), and back to back over those sets.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autotune.spaces.gemm_sm90 import GemmSm90Space  # noqa: E402

SPACE = GemmSm90Space()


def build(out: Path, shape: str, store: Path | None, extra: list[str]) -> None:
    import tirx

    problem = SPACE.parse_problem(shape)
    configs = {"default": SPACE.default_config(problem)}
    for tagged in extra:
        tag, overrides = tagged.split("=", 1)
        configs[tag] = {**configs["default"], **json.loads(overrides)}
    if store:
        from autotune.store import ConfigStore

        entry = ConfigStore.read(store).get(problem)
        if entry:
            configs["tuned"] = entry.config
    for tag, config in configs.items():
        art = tirx.build(SPACE.build(config, problem), SPACE.arch)
        d = out / shape / tag
        d.mkdir(parents=True, exist_ok=True)
        for name in ("kernel.cubin", "artifact.json", "kernel.cu"):
            (d / name).write_bytes((art.path / name).read_bytes())
        (d / "config.json").write_text(json.dumps(config))
        print(tag, config, art.resources)


def run(out: Path, shape: str) -> None:
    import torch

    problem = SPACE.parse_problem(shape)
    inputs = SPACE.make_inputs(problem, seed=0, device="cuda")
    for d in sorted((out / shape).iterdir()):
        kernel = tirx_kernel(d)
        kernel(*inputs)
        torch.cuda.synchronize()
        print(d.name, json.loads((d / "config.json").read_text()), flush=True)
    SPACE.vendor(problem, inputs)()
    torch.cuda.synchronize()


def flushes(out: Path, shape: str, reps: int = 200) -> None:
    import statistics

    import torch

    problem = SPACE.parse_problem(shape)
    sets = [SPACE.make_inputs(problem, seed=s, device="cuda") for s in range(8)]
    kernels = {d.name: tirx_kernel(d) for d in sorted((out / shape).iterdir())}
    calls = {name: [lambda k=k, s=s: k(*s) for s in sets] for name, k in kernels.items()}
    calls["cublas"] = [SPACE.vendor(problem, s) for s in sets]
    buf = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    flush = {"memset": lambda: buf.zero_(), "read": lambda: buf.sum(dtype=torch.int32),
             "none": lambda: None}
    flops = SPACE.flops(problem)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    print(f"{shape}: TFLOP/s (median of {reps})")
    for _ in range(3):  # rounds, interleaved
        for name, fns in calls.items():
            row = []
            for how, f in flush.items():
                for i in range(reps):
                    f()
                    ev[i][0].record()
                    fns[i % len(fns)]()
                    ev[i][1].record()
                torch.cuda.synchronize()
                row.append(statistics.median(a.elapsed_time(b) for a, b in ev))
            start, end = ev[0]
            start.record()
            for i in range(reps):
                fns[i % len(fns)]()
            end.record()
            torch.cuda.synchronize()
            row.append(start.elapsed_time(end) / reps)
            print(f"  {name:>8}: " + "  ".join(f"{h} {flops / ms / 1e9:6.1f}" for h, ms in
                                               zip(list(flush) + ["back-to-back"], row)), flush=True)


def tirx_kernel(d: Path):
    import tirx

    return tirx.Kernel(tirx.Artifact.load(d))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=("build", "run", "flushes"))
    ap.add_argument("dir", type=Path)
    ap.add_argument("shape")
    ap.add_argument("--store", type=Path)
    ap.add_argument("--config", action="append", default=[], metavar="TAG=JSON")
    args = ap.parse_args()
    if args.cmd == "build":
        build(args.dir, args.shape, args.store, args.config)
    elif args.cmd == "run":
        run(args.dir, args.shape)
    else:
        flushes(args.dir, args.shape)


if __name__ == "__main__":
    main()
