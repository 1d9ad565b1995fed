"""Does where a kernel's input sets land in device memory move its protocol time (issue 18)?

A study's final round and `autotune compare` time a kernel in different processes, and on small
shapes they disagree by up to 4% while each repeats itself within 0.5%. This times each variant
(the vendor op, or JSON overrides of the default) under the protocol (runner/protocol.py) on
PLACEMENTS fresh allocations of the input sets, each after a spacer allocation of a random size,
so that only the sets' addresses change between rows. No validation: run `autotune compare`
first.

    python3 scripts/placement_probe.py SHAPE OUT.csv vendor '{}' '{"blk_n": 192}'
"""

import argparse
import json
import random
import statistics

import pandas as pd

from autotune.dispatch import load
from autotune.runner.protocol import input_sets, time_on_sets

PLACEMENTS = 6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape")
    parser.add_argument("out", help="CSV file")
    parser.add_argument("variants", nargs="+", help="vendor, or JSON overrides of the default")
    parser.add_argument("--seed", type=int, default=0, help="of the spacer sizes")
    args = parser.parse_args()
    import torch

    op = load("gemm")
    space, problem = op.space, op.space.parse_problem(args.shape)
    binders = {}
    for text in args.variants:
        if text == "vendor":
            binders[text] = lambda s: space.vendor(problem, s)
        else:
            kernel = op.provider.get(problem, {**space.default_config(problem), **json.loads(text)})
            binders[text] = lambda s, k=kernel: (lambda: k(*s))
    sizes = random.Random(args.seed)
    rows = []
    for placement in range(PLACEMENTS):
        spacer = torch.empty(sizes.randrange(1, 64 << 20), dtype=torch.uint8, device="cuda")
        sets = input_sets(space.make_inputs(problem, seed=0, device="cuda"))
        for name, bind in binders.items():
            ms = time_on_sets(bind, sets).ms
            rows.append({"shape": args.shape, "variant": name, "placement": placement, "ms": ms,
                         "first_ptr": hex(sets[0][0].data_ptr())})
        del sets, spacer
        torch.cuda.empty_cache()
    table = pd.DataFrame(rows)
    table.to_csv(args.out, index=False)
    for name, t in table.groupby("variant", sort=False):
        spread = (t.ms.max() - t.ms.min()) / statistics.median(t.ms)
        print(f"{args.shape} {name}: median {t.ms.median():.5f} ms, spread {spread:.1%}:",
              " ".join(f"{x:.5f}" for x in t.ms))


if __name__ == "__main__":
    main()
