"""Why a study's winner time and `autotune compare`'s disagree by up to 10% on large GEMMs
(issue 18, session 10).

Session 9's misses (studies/2026-11-24-h100-gemm-s9/, 5 of 16 shapes) all read our kernel slower
in compare than in the study's final round, while the vendor op read the same or faster. For each
shape, dispatch's pick from STORE and the vendor op are timed under the protocol
(runner/protocol.time_on_sets) in several conditions, each measurement with the GPU's temperature
and SM clock read right after it:
- `round`: interleaved rounds, as compare and a study's final round time them;
- `long`: the same with 100 timed replays instead of 10 (a power-cap oscillation averaged?);
  since session 11 the protocol itself times a 1 s window (its mean), so `round` is that and
  `long` a 100 ms window;
- `idle`: after 3 s of idle, as a final round after compiles (a cool chip clocks higher?);
- `moved`: inputs allocated again behind a pad of random size (does placement matter?);
- `busy`: ~3 s held busy (scripts/power.py's held_busy), the sustained truth.

    python3 scripts/timing_probe.py STORE OUT.csv 168x15872x14848 4146x5120x25600 ...
"""

import random
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from autotune.dispatch import load
from autotune.runner.protocol import input_sets, time_on_sets

sys.path.insert(0, str(Path(__file__).parent))
import power  # noqa: E402  (held_busy)

ROUNDS, LONG_ROUNDS, IDLE_ROUNDS, PLACEMENTS, IDLE_S = 6, 3, 3, 3, 3.0
power.BUSY_S = 3.0


def gpu_state() -> tuple[float, float]:
    line = subprocess.run(["nvidia-smi", "--query-gpu=temperature.gpu,clocks.sm",
                           "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout
    temp, mhz = (float(x) for x in line.split(","))
    return temp, mhz


def main() -> None:
    store, out, *shapes = sys.argv[1:]
    op = load("gemm", store=store)
    space = op.space
    rows = []

    def record(shape, variant, condition, i, ms):
        temp, mhz = gpu_state()
        rows.append(dict(shape=shape, variant=variant, condition=condition, i=i, ms=ms,
                         temp_c=temp, sm_mhz=mhz))
        print(rows[-1], flush=True)

    for shape in shapes:
        problem = space.parse_problem(shape)
        _, kernel = op.pick(problem)
        binders = {"ours": lambda s: (lambda: kernel(*s)),
                   "vendor": lambda s: space.vendor(problem, s)}
        sets = input_sets(space.make_inputs(problem, seed=0, device="cuda"))
        order = list(binders)
        for r in range(ROUNDS):
            for name in order[r % 2:] + order[:r % 2]:
                record(shape, name, "round", r, time_on_sets(binders[name], sets).ms)
        for r in range(LONG_ROUNDS):
            for name in order[r % 2:] + order[:r % 2]:
                record(shape, name, "long", r,
                       time_on_sets(binders[name], sets, window_ms=100.0).ms)
        for r in range(IDLE_ROUNDS):
            for name in order[r % 2:] + order[:r % 2]:
                time.sleep(IDLE_S)
                record(shape, name, "idle", r, time_on_sets(binders[name], sets).ms)
        rng = random.Random(0)
        for r in range(PLACEMENTS):
            del sets
            pad = torch.empty(rng.randrange(1, 64) << 20, dtype=torch.uint8, device="cuda")
            sets = input_sets(space.make_inputs(problem, seed=r + 1, device="cuda"))
            for name in order:
                record(shape, name, "moved", r, time_on_sets(binders[name], sets).ms)
            del pad
        for name in order:
            busy = power.held_busy([binders[name](s) for s in sets])
            record(shape, name, "busy", 0, busy["ms"])
    table = pd.DataFrame(rows)
    table.to_csv(out, index=False)
    summary = table.groupby(["shape", "condition", "variant"]).ms.agg(
        ["median", "min", "max", "count"])
    summary["spread"] = summary["max"] / summary["min"] - 1
    print(summary.to_string())


if __name__ == "__main__":
    main()
