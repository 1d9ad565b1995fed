"""Which kernels cuBLAS (torch.matmul) launches for each suite shape, with their grids: the vendor
baseline's tile, cluster and split/stream-K choices, to read beside our tuned configs.

    python scripts/cublas_kernels.py OUT [SHAPE ...]     # GPU machine; torch only

Writes OUT/cublas_kernels.json and prints one line per shape and kernel.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autotune.spaces.gemm_sm90 import SUITE  # noqa: E402


def kernels(m: int, n: int, k: int) -> list[dict]:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b.T
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        a @ b.T
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.load(open(f.name))
    return [{"name": e["name"], "grid": e["args"].get("grid"), "block": e["args"].get("block"),
             "us": e.get("dur")}
            for e in trace["traceEvents"] if e.get("cat") == "kernel"]


def main(out: str, shapes: list[str]) -> None:
    rows = []
    for text in shapes or SUITE:
        m, n, k = (int(x) for x in text.split("x"))
        for kern in kernels(m, n, k):
            rows.append({"problem": text, **kern})
            print(f"{text:>16}  grid={kern['grid']} block={kern['block']} {kern['us']} us  "
                  f"{kern['name']}", flush=True)
    Path(out).mkdir(parents=True, exist_ok=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "command": "scripts/cublas_kernels.py " + " ".join(sys.argv[1:])}
    Path(out, "cublas_kernels.json").write_text(json.dumps({"meta": meta, "kernels": rows}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
