"""How often is cuBLAS's tile the one-wave covering tile of least area (_vendor_layouts' rule)?

For every shape (M > 128) whose cuBLAS kernel a held-busy run recorded (studies/**/
cublas_kernels.json; nvjet TNT kernels, whose first tile dimension runs along our N: our
swapped orientation), the candidates are swapped tiles of R = 64, 128 or 192 weight rows and
BLK_N = ceil(M / t) rounded up to 8 (16 to 256) whose ceil(N / R) x ceil(M / BLK_N) tiles fit
one wave of 132 SMs, ordered by area R x BLK_N, then rows loaded R + BLK_N. Prints, per shape,
cuBLAS's tile, its stages and cluster, its tile count, the rule's first and cuBLAS's rank.

    python studies/2026-11-29-h200-gemm-s37/onewave.py \
      > studies/2026-11-29-h200-gemm-s37/onewave.txt        # from the repository root
"""

import glob
import json
import math
import re

NVJET = re.compile(r"nvjet_sm90_tst_(\d+)x(\d+)_64x(\d+)_(\dx\d)_\w_bz_(?:\w+_)?(T\w\w)$")
SMS = 132


def one_wave(M: int, N: int) -> list[tuple[int, int]]:
    out = set()
    for rows in (64, 128, 192):
        for t in range(1, M // 8 + 2):
            width = 8 * math.ceil(math.ceil(M / t) / 8)
            if 16 <= width <= 256 and math.ceil(N / rows) * math.ceil(M / width) <= SMS:
                out.add((rows * width, rows + width, rows, width))
    return [(rows, width) for *_, rows, width in sorted(out)]


def main() -> None:
    kernels = {}
    for path in sorted(glob.glob("studies/**/cublas_kernels.json", recursive=True)):
        record = json.load(open(path))
        for k in record.get("kernels", []):
            kernels[(record.get("meta", {}).get("device", "?"), k["problem"])] = k["name"]
    first = total = 0
    for (device, shape), name in sorted(kernels.items(), key=lambda x: int(x[0][1].split("x")[0])):
        m = NVJET.match(name)
        M, N, _ = map(int, shape.split("x"))
        if not m or m.group(5) != "TNT" or M <= 128:
            continue
        ranked = one_wave(M, N)
        tile = (int(m.group(1)), int(m.group(2)))
        tiles = math.ceil(N / tile[0]) * math.ceil(M / tile[1])
        if not ranked or tiles > SMS or tile[0] not in (64, 128, 192):
            continue
        rank = ranked.index(tile) if tile in ranked else None
        total += 1
        first += rank == 0
        print(f"{device:22s} {shape:18s} cuBLAS {tile[0]}x{tile[1]} {m.group(3)} stages "
              f"{m.group(4)} {tiles:4d} tiles | first {ranked[0][0]}x{ranked[0][1]} | "
              f"cuBLAS's rank {'-' if rank is None else rank}")
    print(f"cuBLAS's tile first at {first} of {total} shapes")


if __name__ == "__main__":
    main()
