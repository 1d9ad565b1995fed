"""SM clock, board power and energy per FLOP of GEMM configs held busy (issue 18, session 7).

Large bf16 GEMMs run at the H100's 700 W cap (throttle reason SW power cap, SM clock 1350-1500
MHz instead of 1980): a config's speed then follows its energy per FLOP as much as its tiles.
For one shape, each variant (cuBLAS, then each config: JSON overrides of the default) runs ~4 s
of back-to-back graph replays under the protocol's timer while nvidia-smi samples the SM clock
and power every 100 ms; the first second (clocks settling) is dropped. It times, it does not
validate: run `autotune compare` on a config first (session 7's were, in `seen/`, `ab/`).

    python3 scripts/power_gemm.py SHAPE OUT.csv '{"consumers": 3, "blk_n": 192}' ...
"""

import json
import statistics
import subprocess
import sys
import time

import pandas as pd

from autotune.dispatch import load
from autotune.runner.protocol import input_sets, time_on_sets

BUSY_S, SETTLE_S, SAMPLE_MS = 4.0, 1.0, 100


def held_busy(call) -> dict:
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw",
                            "--format=csv,noheader,nounits", f"-lms={SAMPLE_MS}"],
                           stdout=subprocess.PIPE, text=True)
    start, times = time.time(), []
    while time.time() - start < BUSY_S:
        times.append(call())
    smi.terminate()
    samples = [[float(x) for x in line.split(",")] for line in smi.communicate()[0].splitlines()
               if line.strip()][int(SETTLE_S * 1000 / SAMPLE_MS):]
    return {"ms": statistics.median(times), "sm_mhz": statistics.median(s[0] for s in samples),
            "watts": statistics.median(s[1] for s in samples), "samples": len(samples)}


def main() -> None:
    shape, out, *overrides = sys.argv[1:]
    op = load("gemm")
    space = op.space
    problem = space.parse_problem(shape)
    sets = input_sets(space.make_inputs(problem, seed=0, device="cuda"))
    variants = {"cuBLAS": lambda s: space.vendor(problem, s)}
    for text in overrides:
        cfg = {**space.default_config(problem), **json.loads(text)}
        kernel = op.provider.get(problem, cfg)
        name = f"{cfg['consumers'] * cfg['wg_m']}x{cfg['blk_n']} ({text})"
        variants[name] = lambda s, k=kernel: (lambda: k(*s))
    rows = []
    for name, bind in variants.items():
        row = held_busy(lambda b=bind: time_on_sets(b, sets, replays=100).median_ms)
        flops = space.flops(problem)
        row.update(shape=shape, variant=name, tflops=flops / row["ms"] / 1e9)
        row["tflop_per_j"] = row["tflops"] / row["watts"]
        rows.append(row)
        print(row, flush=True)
    table = pd.DataFrame(rows)[["shape", "variant", "ms", "tflops", "sm_mhz", "watts",
                                "tflop_per_j", "samples"]]
    table.to_csv(out, index=False)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
