"""Measure a recording bundle (record/bundle.py) on a GPU machine with torch and cuda-bindings
alone (no TVM, Optuna or Ray):

    python -m autotune.record.measure BUNDLE OUT [BUNDLE OUT ...] [--rounds 3] [--deadline-s 120]

Every job is validated once (fresh random inputs, outputs poisoned, against the op's reference),
then timed under the project's protocol (runner/protocol.py time_in_graph) in `rounds` rounds,
each round over every job in rotated order (drift hits all alike), the vendor op (cuBLAS) timed
beside them as job "vendor". Each result is appended to OUT/measure.jsonl as it comes, so a run
that is killed, runs out of time (`--deadline-s`: stops cleanly between jobs) or meets a CUDA
error (which poisons the process's context: it exits 3, to be started again) loses nothing: a
rerun skips what is there. OUT/measure_meta.json says where, when and with what."""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import sys
import tarfile
import time
from pathlib import Path

from ..runner.cuda_eval import cause_of_exception
from ..runner.protocol import PROTOCOL, WARM_MS, time_in_graph
from ..runner.timing import rotated
from ..runner.validate import check_outputs, poison
from ..spaces import get_space

RESULTS, META, VENDOR = "measure.jsonl", "measure_meta.json", "vendor"
L2_FACTOR, MAX_SETS, CHECKS = 2.0, 64, 2
EXIT_POISONED = 3


def open_bundle(path: Path, scratch: Path) -> Path:
    """A bundle directory, or its tar.xz unpacked under `scratch`."""
    if path.is_dir():
        return path
    with tarfile.open(path) as tar:
        tar.extractall(scratch, filter="data")
    return scratch


def done_so_far(out: Path) -> dict[tuple[str, int], dict]:
    path = out / RESULTS
    if not path.exists():
        return {}
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {(e["id"], e["round"]): e for e in entries}


def input_sets(inputs: list, l2_bytes: int) -> list[list]:
    """`inputs` and clones enough that their working set is L2_FACTOR x L2 (weights stream
    from device memory, as in a model whose layers each have their own)."""
    set_bytes = sum(t.numel() * t.element_size() for t in inputs if hasattr(t, "numel"))
    n = max(1, min(MAX_SETS, math.ceil(L2_FACTOR * l2_bytes / max(1, set_bytes))))
    return [inputs] + [[t.clone() if hasattr(t, "clone") else t for t in inputs]
                       for _ in range(n - 1)]


class Shape:
    """One problem's inputs (validation draws and timing sets), shared by its jobs."""

    def __init__(self, space, problem, l2_bytes: int):
        self.space, self.problem = space, problem
        self.sets = input_sets(space.make_inputs(problem, seed=0, device="cuda"), l2_bytes)

    def validate(self, launch) -> str | None:
        """What is wrong with the kernel's outputs on CHECKS fresh draws, or None."""
        import torch

        space, problem = self.space, self.problem
        for seed in range(1, CHECKS + 1):
            inputs = space.make_inputs(problem, seed=seed, device="cuda")
            references = space.reference(problem, inputs)
            outputs = [inputs[i] for i in space.output_indices(problem)]
            poison(outputs)
            launch(inputs)
            torch.cuda.synchronize()
            _, wrong = check_outputs(outputs, references, space.tolerance(problem))
            if wrong:
                return wrong
        return None

    def time(self, launch, warm_ms: float = WARM_MS) -> dict:
        timing = time_in_graph(lambda i: launch(self.sets[i]), len(self.sets), warm_ms=warm_ms)
        return {"time_ms": timing.ms, "min_ms": timing.min_ms, "max_ms": timing.max_ms,
                "launches": timing.iters_per_round, "input_sets": timing.input_sets}


def measure(bundle: Path, out: Path, rounds: int, deadline_s: float,
            warm_ms: float = WARM_MS) -> int:
    import torch

    import tirx

    start = time.monotonic()
    jobs = [json.loads(line) for line in (bundle / "jobs.jsonl").read_text().splitlines()
            if line.strip()]
    # the space by its class (a GPU machine has the sources, not the installed entry points)
    space = get_space(json.loads((bundle / "bundle.json").read_text())["target"])
    out.mkdir(parents=True, exist_ok=True)
    _write_meta(out, rounds, warm_ms)
    done = done_so_far(out)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    shapes: dict[str, Shape] = {}
    kernels: dict[str, object] = {}
    vendors = sorted({j["problem"] for j in jobs})
    entries = [(VENDOR + "|" + p, None) for p in vendors] + [(j["id"], j) for j in jobs]
    with open(out / RESULTS, "a") as results:
        def write(entry: dict) -> None:
            results.write(json.dumps(entry) + "\n")
            results.flush()
            done[(entry["id"], entry["round"])] = entry

        for r in range(rounds):
            for ident, job in rotated(entries, r * len(entries) // rounds):
                if (ident, r) in done or (ident, -1) in done:  # -1: failed for good
                    continue
                if time.monotonic() - start > deadline_s:
                    print(f"deadline: stopped in round {r}", file=sys.stderr)
                    return 0
                problem_key = job["problem"] if job else ident.split("|", 1)[1]
                shape = shapes.get(problem_key)
                if shape is None:
                    shape = shapes[problem_key] = Shape(space, space.op.from_key(problem_key), l2)
                entry = {"id": ident, "round": r}
                if job and "artifact" not in job:  # failed to compile: recorded as such
                    write({**entry, "round": -1, "cause": job["cause"], "error": job["error"]})
                    continue
                try:
                    if job is None:
                        def launch(args, shape=shape):
                            shape.space.op.vendor(shape.problem, args)()
                    else:
                        kernel = kernels.get(job["artifact"])
                        if kernel is None:
                            kernel = kernels[job["artifact"]] = tirx.Kernel(
                                tirx.Artifact.load(bundle / job["artifact"]))
                        scalars = job.get("scalars", [])

                        def launch(args, kernel=kernel, scalars=scalars):
                            # the current stream: a graph capture runs on its own
                            kernel(*args, *scalars,
                                   stream=torch.cuda.current_stream().cuda_stream)
                    if (ident, 0) not in done:  # validated once, before its first timing
                        wrong = shape.validate(launch)
                        if wrong:
                            write({**entry, "round": -1, "cause": "validation", "error": wrong})
                            continue
                    write({**entry, **shape.time(launch, warm_ms)})
                except Exception as exc:  # noqa: BLE001 - every failure is a recorded row
                    cause, fatal = cause_of_exception(exc)
                    write({**entry, "round": -1, "cause": cause.value,
                           "error": f"{type(exc).__name__}: {exc}"})
                    if fatal:
                        print(f"{ident}: CUDA context poisoned; rerun to go on", file=sys.stderr)
                        return EXIT_POISONED
    return 0


def _write_meta(out: Path, rounds: int, warm_ms: float) -> None:
    import torch

    path = out / META
    meta = json.loads(path.read_text()) if path.exists() else {"runs": []}
    meta["runs"].append({
        "device": torch.cuda.get_device_name(0),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "command": " ".join(["python -m autotune.record.measure", *sys.argv[1:]]),
        # the protocol's name only with its own warm-up ("graph": the same replays, less warm)
        "rounds": rounds, "timer": PROTOCOL if warm_ms == WARM_MS else "graph",
        "warm_ms": warm_ms, "torch": torch.__version__,
        "cuda": torch.version.cuda, "python": platform.python_version(),
        "driver": _driver_version(), "host": platform.node()})
    path.write_text(json.dumps(meta, indent=1) + "\n")


def _driver_version() -> str | None:
    try:
        from cuda.bindings import driver

        err, version = driver.cuDriverGetVersion()
        return f"{version // 1000}.{version % 1000 // 10}"
    except Exception:  # noqa: BLE001 - provenance only
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", help="bundle directory or its tar.xz")
    parser.add_argument("out", help="results directory (resumed if it holds results)")
    parser.add_argument("more", nargs="*", metavar="BUNDLE OUT",
                        help="more bundles and their results directories, measured in turn by "
                             "the same process (one CUDA context, one deadline)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--deadline-s", type=float, default=math.inf,
                        help="stop cleanly after this many seconds (rerun to resume)")
    parser.add_argument("--warm-ms", type=float, default=WARM_MS,
                        help=f"untimed replays before each timing (default the protocol's "
                             f"{WARM_MS:g} ms, for a GPU that idled; jobs measured back to back "
                             "keep it busy, so a long recording may take less)")
    parser.add_argument("--scratch", default="bundle", help="where a tar.xz is unpacked")
    args = parser.parse_args(argv)
    if len(args.more) % 2:
        parser.error("bundles and results directories come in pairs: BUNDLE OUT [BUNDLE OUT ...]")
    pairs = [(args.bundle, args.out), *zip(args.more[::2], args.more[1::2])]
    start = time.monotonic()
    for i, (bundle, out) in enumerate(pairs):
        left = args.deadline_s - (time.monotonic() - start)
        if left <= 0:
            print(f"deadline: {bundle} not started", file=sys.stderr)
            return 0
        bundle = open_bundle(Path(bundle), Path(args.scratch) / str(i))
        status = measure(bundle, Path(out), args.rounds, left, args.warm_ms)
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
