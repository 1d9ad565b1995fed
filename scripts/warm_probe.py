"""How long the protocol's warm-up must be for a power-capped GEMM to read as it runs sustained
(issues 18 and 20, session 8).

Held busy for seconds (scripts/power.py), our kernels at the decoder block's prefill shapes ran
0.98-0.99x cuBLAS, while `autotune compare` (200 ms of warm-up before each timing) had read them
1.02-1.05x: the SW power cap's controller takes longer than that to settle, and a timing after a
short warm-up inherits the clock the previous variant left. For each shape, dispatch's pick and
the vendor op are timed under the protocol with each warm-up in turn, interleaved rounds.

    python3 scripts/warm_probe.py OUT.csv 4096x6144x4096 4096x4096x14336 ...
"""

import statistics
import sys

import pandas as pd

from autotune.dispatch import load
from autotune.runner.protocol import input_sets, time_on_sets
from autotune.runner.timing import interleaved

WARM_MS = (200, 1000, 3000)
ROUNDS = 5


def main() -> None:
    out, *shapes = sys.argv[1:]
    op = load("gemm")
    space = op.space
    rows = []
    for shape in shapes:
        problem = space.parse_problem(shape)
        sets = input_sets(space.make_inputs(problem, seed=0, device="cuda"))
        choice, kernel = op.pick(problem)
        binders = {"ours": lambda s: (lambda: kernel(*s)),
                   "vendor": lambda s: space.vendor(problem, s)}
        measures = {(name, warm): (lambda b=bind, w=warm: time_on_sets(b, sets, warm_ms=w)
                                   .ms)
                    for name, bind in binders.items() for warm in WARM_MS}
        times = {key: statistics.median(ts) for key, ts in interleaved(measures, ROUNDS).items()}
        for warm in WARM_MS:
            row = dict(shape=shape, warm_ms=warm, ours_ms=times[("ours", warm)],
                       vendor_ms=times[("vendor", warm)], pick=choice.reason)
            row["ours_vs_vendor"] = row["vendor_ms"] / row["ours_ms"]
            rows.append(row)
            print(row, flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(out, index=False)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
