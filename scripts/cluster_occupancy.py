"""How many clusters of 1, 2, 4 and 8 CTAs run at once on this GPU (issue 18)?

A persistent GEMM launches one cluster per `SMs / cluster size`; the hardware places a cluster
inside one GPC, so where a GPC's SM count is not a multiple of the size some SMs stay empty and
a grid of SMs / size clusters runs its last ones in a second wave. This asks the driver
(cuOccupancyMaxActiveClusters) for each artifact given, at each size, and writes a CSV.

    python3 scripts/cluster_occupancy.py OUT.csv ARTIFACT_DIR...
"""

import argparse

import pandas as pd
import torch

from tirx.artifact import Artifact
from tirx.launch import Kernel

SIZES = (1, 2, 4, 8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="CSV file")
    parser.add_argument("artifacts", nargs="+", help="artifact directories")
    args = parser.parse_args()
    props = torch.cuda.get_device_properties(0)
    rows = []
    for path in args.artifacts:
        kernel = Kernel(Artifact.load(path))
        spec = kernel.spec
        row = {"artifact": path.rstrip("/").rsplit("/", 1)[-1], "threads": spec.block[0],
               "smem_bytes": spec.dynamic_smem, "device": props.name,
               "sms": props.multi_processor_count}
        for size in SIZES:
            row[f"clusters_of_{size}"] = kernel.max_active_clusters(size)
            row[f"ctas_in_clusters_of_{size}"] = size * row[f"clusters_of_{size}"]
        rows.append(row)
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
