"""SM clock, board power and energy per FLOP of kernels held busy (issue 18 and 20).

Large bf16 GEMMs and long attention run at the H100's 700 W cap (throttle reason SW power cap,
SM clock 1350-1500 MHz instead of 1980): a kernel's speed there follows its energy per FLOP as
much as its tiles, and in a block of such ops the joules each op spends set the block's time.
For one shape, each variant (the vendor op, then each config: JSON overrides of the default, or
`pick`, the config dispatch serves the shape with from the committed store) runs ~4 s of
back-to-back replays of one CUDA graph over the protocol's input sets while nvidia-smi samples
the SM clock and power every 100 ms; the first second (clocks settling) is dropped. It times, it does not
validate: run `autotune compare` on a config first.

    python3 scripts/power.py [--kernel gemm] SHAPE OUT.csv '{"consumers": 3, "blk_n": 192}' ...
    python3 scripts/power.py --kernel attention 1x4096/32:8/128/causal OUT.csv pick
"""

import argparse
import json
import math
import statistics
import subprocess
import sys
import time

import pandas as pd

from autotune.dispatch import load
from autotune.runner.protocol import capture_graph, graph_replays, input_sets

BUSY_S, SETTLE_S, SAMPLE_MS = 4.0, 1.0, 100


def replay_for(graph, seconds: float) -> list:
    """(start, end) CUDA events of each back-to-back replay of `graph` over `seconds`."""
    import torch

    start, events = time.time(), []
    while time.time() - start < seconds:
        pair = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        pair[0].record()
        graph.replay()
        pair[1].record()
        events.append(pair)
        if len(events) % 8 == 0:  # keep the queue short so the wall clock tracks the GPU
            pair[1].synchronize()
    torch.cuda.synchronize()
    return events


def held_busy(calls: list) -> dict:
    """Replay one CUDA graph of back-to-back launches (`calls`: one per input set, repeated to
    ~20 ms) for BUSY_S, each replay timed by events, while nvidia-smi samples. Captured once:
    re-capturing per timing (as the protocol's timer does) left the GPU idle between graphs for
    ops whose capture is slow (cuDNN attention: 120 W)."""
    one = statistics.median(graph_replays(lambda: [c() for c in calls], 3))
    passes = max(1, math.ceil(20.0 / one))
    graph = capture_graph(lambda: [c() for _ in range(passes) for c in calls])
    smi = start_sampling(this_gpu())
    events = replay_for(graph, BUSY_S)
    times = [a.elapsed_time(b) / (passes * len(calls)) for a, b in events]
    return {"ms": statistics.median(times), **stop_sampling(smi)}


def this_gpu() -> str:
    """nvidia-smi's id of the GPU torch runs on. Unless told which, nvidia-smi samples every
    GPU of the host: on two H200s (session 36, studies/2026-11-30-h200-gemm-s45/judge44) the
    busy GPU's ~690 W and the idle one's ~90 W gave medians of 240-390 W and 0.5-1.1 GHz."""
    import torch

    return f"GPU-{torch.cuda.get_device_properties(torch.cuda.current_device()).uuid}"


def start_sampling(gpu: str) -> subprocess.Popen:
    """nvidia-smi sampling `gpu`'s SM clock and power every SAMPLE_MS until stop_sampling."""
    return subprocess.Popen(["nvidia-smi", "-i", gpu, "--query-gpu=clocks.sm,power.draw",
                             "--format=csv,noheader,nounits", f"-lms={SAMPLE_MS}"],
                            stdout=subprocess.PIPE, text=True)


def stop_sampling(smi: subprocess.Popen) -> dict:
    """The median SM clock and power of `smi`'s samples, the first SETTLE_S dropped."""
    smi.terminate()
    samples = [[float(x) for x in line.split(",")] for line in smi.communicate()[0].splitlines()
               if line.strip()][int(SETTLE_S * 1000 / SAMPLE_MS):]
    return {"sm_mhz": statistics.median(s[0] for s in samples),
            "watts": statistics.median(s[1] for s in samples), "samples": len(samples)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="gemm", help="gemm or attention (dispatch's name)")
    parser.add_argument("shape")
    parser.add_argument("out", help="CSV file")
    parser.add_argument("variants", nargs="*", help="JSON overrides of the default, or pick")
    args = parser.parse_args()
    op = load(args.kernel)
    space = op.space
    problem = space.parse_problem(args.shape)
    sets = input_sets(space.make_inputs(problem, seed=0, device="cuda"))
    variants = {"vendor": lambda s: space.vendor(problem, s)}
    for text in args.variants:
        if text == "pick":
            choice, kernel = op.pick(problem)
            text = f"pick ({choice.reason}: {json.dumps(choice.config, sort_keys=True)})"
        else:
            kernel = op.provider.get(problem, {**space.default_config(problem), **json.loads(text)})
        if kernel is None:  # an illegal config: the index holds no kernel for it
            print(f"{args.shape} {text}: not in the index (illegal?), skipped", flush=True)
            continue
        variants[text] = lambda s, k=kernel: (lambda: k(*s))
    rows = []
    for name, bind in variants.items():
        row = held_busy([bind(inputs) for inputs in sets])
        flops = space.flops(problem)
        row.update(shape=args.shape, variant=name, tflops=flops / row["ms"] / 1e9)
        row["tflop_per_j"] = row["tflops"] / row["watts"]
        rows.append(row)
        print(row, flush=True)
    table = pd.DataFrame(rows)[["shape", "variant", "ms", "tflops", "sm_mhz", "watts",
                                "tflop_per_j", "samples"]]
    table.to_csv(args.out, index=False)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
