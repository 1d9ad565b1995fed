"""Is cuBLAS's tile the cost model's pick among tiles that cover M the way cuBLAS's do?

For every shape whose cuBLAS kernel a held-busy run recorded (studies/**/cublas_kernels.json,
H100 and H200; nvjet TNT kernels, whose first tile dimension runs along our N: our swapped
orientation), the candidates are swapped tiles of R = 64, 128, 192 or 256 weight rows (one, two
or three 64-row consumers, or two of 128) and BLK_N = ceil(M / t) rounded up to 8 for t = 1..32
tiles along M (16 <= BLK_N <= 256), persistent, alone, 64-wide K tiles, the TMA-store epilogue
and the deepest ring that fits; ranked by the space's cost model (estimate_ms). Prints, per
shape, cuBLAS's tile, the model's first and where cuBLAS's tile ranks ('-': not a candidate).

    python studies/2026-11-29-h200-gemm-s35/covering/rank.py 256 1024   # 256 < M <= 1024
"""

import glob
import json
import math
import re
import sys

from autotune.spaces import get_space

SPACE = get_space("gemm_sm90")
ROWS = {64: dict(wg_m=64, consumers=1), 128: dict(wg_m=64, consumers=2),
        192: dict(wg_m=64, consumers=3), 256: dict(wg_m=128, consumers=2)}
NVJET = re.compile(r"nvjet_sm90_tst_(\d+)x(\d+)_64x(\d+)_(\dx\d)_\w_bz_(?:\w+_)?(T\w\w)$")


def candidates(problem):
    base = SPACE.default_config(problem)
    out = []
    for rows, consumers in ROWS.items():
        for t in range(1, 33):
            width = 8 * math.ceil(math.ceil(problem["M"] / t) / 8)
            if not 16 <= width <= 256:
                continue
            config = SPACE._deepest(problem, {
                **base, **consumers, "swap_ab": True, "blk_n": width, "split_k": 1,
                "persistent": True, "cluster": "1x1", "multicast": 2, "blk_k": 64,
                "epilogue": "tma"})
            if not SPACE.violations(config, problem):
                out.append((SPACE.estimate_ms(config, problem), rows, width))
    return sorted(out)


def main(lo: int, hi: int) -> None:
    kernels = {}
    for path in sorted(glob.glob("studies/**/cublas_kernels.json", recursive=True)):
        record = json.load(open(path))
        for k in record.get("kernels", []):
            kernels[(record.get("meta", {}).get("device", "?"), k["problem"])] = k["name"]
    exact = top3 = total = 0
    for (device, shape), name in sorted(kernels.items()):
        m = NVJET.match(name)
        if not m or m.group(5) != "TNT" or not lo < int(shape.split("x")[0]) <= hi:
            continue
        tile = (int(m.group(1)), int(m.group(2)))
        ranked = [(rows, width) for _, rows, width in candidates(SPACE.parse_problem(shape))]
        if not ranked:
            print(f"{device:22s} {shape:17s} no legal candidate")
            continue
        rank = ranked.index(tile) if tile in ranked else None
        total += 1
        exact += rank == 0
        top3 += rank is not None and rank < 3
        print(f"{device:22s} {shape:17s} cuBLAS {tile[0]}x{tile[1]} {m.group(4)} "
              f"{m.group(3)} stages | model's first {ranked[0][0]}x{ranked[0][1]} | "
              f"cuBLAS's rank {'-' if rank is None else rank} of {len(ranked)}")
    print(f"{lo} < M <= {hi}: cuBLAS's tile first {exact} of {total}, in the first three {top3}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
