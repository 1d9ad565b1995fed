"""Tile orders for the placement transplant (session 27; needs the diag patch in ../README.md).

A 1x1 grid of G CTAs lands the same way every launch of that grid size (CTA i on SM
place[G][i], ../../2026-11-28-h200-gemm-s25/launch). This writes, per shape, the tile index
(column-major over the M tiles: t = tn * tiles_m + tm) each CTA takes so that every SM computes
a chosen tile: another launch's placement transplanted (a cluster order), or synthetic groups
of the SMs that share a weight (B) column by GPC (../../2026-11-28-h200-gemm-s26/gpcs).

    python3 make_perms.py perms.json
"""

import csv
import itertools
import json
import math
import sys
from pathlib import Path

CLUSTER_LAUNCHED = (12, 13, 14, 15, 17)
HERE = Path(__file__).resolve().parent
LAUNCH = HERE.parent.parent / "2026-11-28-h200-gemm-s25" / "launch"


def placements(grid: int) -> dict[int, list[int]]:
    """cluster size -> SM of each CTA, for a grid of `grid` CTAs of 200 KB."""
    out: dict[int, dict[int, int]] = {}
    for row in csv.DictReader(open(LAUNCH / f"launch_g{grid}.csv")):
        out.setdefault(int(row["cluster"]), {})[int(row["cta"])] = int(row["smid"])
    return {c: [d[i] for i in range(len(d))] for c, d in out.items()}


def gpc_of(sm: int) -> int | None:
    """H200 GPC of an SM id (SMs 120-131: unknown)."""
    if sm >= 120:
        return None
    if sm < 64:
        return (sm % 16) // 2
    return ((sm - 62) % 14) // 2 + 1


def coords(t, ctm, ctn, raster, group):
    """kernels/gemm/sm90.py's grouped raster: cluster tile t -> (row, col)."""
    outer, inner = (ctm, ctn) if raster == "m" else (ctn, ctm)
    grp = min(group, outer)
    span = grp * inner
    first = (t // span) * grp
    size = min(grp, outer - first)
    o, i = first + (t % span) % size, (t % span) // size
    return (o, i) if raster == "m" else (i, o)


def order_tiles(tiles_m, tiles_n, cluster, raster, group):
    """CTA -> (tm, tn) of a launch with 1x1 or 1x2 (cluster_n = 2) clusters."""
    cn = 2 if cluster == "1x2" else 1
    ctn = math.ceil(tiles_n / cn)
    out = []
    for t in range(tiles_m * ctn):
        r, c = coords(t, tiles_m, ctn, raster, group)
        out += [(r, c * cn + k) for k in range(cn)]
    return out


def transplant(tiles_m, tiles_n, grid, cluster, raster, group, under=1):
    """Each SM of a launch in clusters of `under` CTAs (the kernel's code is the 1x1 one either
    way) computes the tile `cluster`'s launch puts on it; SMs the other launch leaves idle take
    the tiles of the SMs only it uses, in id order."""
    place = placements(grid)
    alone, other = place[under][:tiles_m * tiles_n], place[2 if cluster == "1x2" else 1]
    tiles = order_tiles(tiles_m, tiles_n, cluster, raster, group)
    on = {other[i]: tiles[i] for i in range(len(tiles))}
    spare = iter(sorted(s for s in on if s not in alone))
    for s in sorted(s for s in alone if s not in on):
        on[s] = on.pop(next(spare))
    return [on[s] for s in alone]


def grouped(tiles_m, tiles_n, grid, key, under=1):
    """Synthetic: the SMs of the 1x1 launch in groups of tiles_m, each group one B column; SMs of
    unknown GPC keep the columns they have in the natural order; the others are grouped by
    `key(gpc list)` -> a list of groups of GPCs whose SMs, one from each, form a group."""
    alone = placements(grid)[under][:tiles_m * tiles_n]
    natural = transplant(tiles_m, tiles_n, grid, "1x1", "m", 8, under)
    on = {s: natural[i] for i, s in enumerate(alone) if gpc_of(s) is None}
    used_cols = {tn for _, tn in on.values()}
    free_cols = iter(c for c in range(tiles_n) if c not in used_cols)
    pools = {g: sorted(s for s in alone if gpc_of(s) == g) for g in range(8)}
    groups = []

    def fits(gpcs):
        return all(len(pools[g]) >= gpcs.count(g) for g in gpcs)

    while any(pools.values()):
        for gpcs in key(pools):
            if fits(gpcs):
                groups.append([pools[g].pop(0) for g in gpcs])
        if not any(fits(gpcs) for gpcs in key(pools)):
            rest = sorted(s for g in pools for s in pools[g])  # leftovers, id order
            groups += [rest[i:i + tiles_m] for i in range(0, len(rest), tiles_m)]
            break
    for grp in groups:
        col = next(free_cols)
        for tm, s in enumerate(grp):
            on[s] = (tm, col)
    return [on[s] for s in alone]


def same_gpc(tiles_m):
    return lambda pools: [[g] * tiles_m for g in range(8)]


def quads(*sets):
    return lambda pools: [list(s) for s in sets]


def index(tiles_m, perm):
    flat = [tn * tiles_m + tm for tm, tn in perm]
    assert sorted(flat) == list(range(len(flat))), "not a permutation of the tiles"
    return flat


def main() -> None:
    perms = {}
    for shape, tiles_m, tiles_n, grid in (("217x3840x15360", 4, 30, 120),
                                          ("200x2048x5632", 4, 32, 128)):
        variants = {
            5: transplant(tiles_m, tiles_n, grid, "1x1", "n", 8),  # alone, raster n (slow)
            6: transplant(tiles_m, tiles_n, grid, "1x2", "m", 8),  # pairs, raster m (slow)
            7: transplant(tiles_m, tiles_n, grid, "1x2", "n", 8),  # pairs, n, group 8
            9: grouped(tiles_m, tiles_n, grid, same_gpc(tiles_m)),
            10: grouped(tiles_m, tiles_n, grid, quads((0, 1, 2, 3), (4, 5, 6, 7))),
            11: grouped(tiles_m, tiles_n, grid, quads((7, 0, 1, 2), (3, 4, 5, 6))),
            # launched in clusters of 2 (CLUSTER_LAUNCHED: artifact.json's launch.cluster set
            # to [2, 1, 1] after the build; the code is the 1x1 kernel's, no cluster instruction)
            12: order_tiles(tiles_m, tiles_n, "1x1", "m", 8),  # natural order
            13: order_tiles(tiles_m, tiles_n, "1x2", "m", 8),  # the pairs' tiles on their SMs
            14: transplant(tiles_m, tiles_n, grid, "1x1", "m", 8, under=2),  # 1x1's tiles/SM
            15: grouped(tiles_m, tiles_n, grid, same_gpc(tiles_m), under=2),
            17: grouped(tiles_m, tiles_n, grid, quads((0, 1, 2, 3), (4, 5, 6, 7)), under=2),
        }
        for group, perm in variants.items():
            perms[f"{shape}/{group}"] = index(tiles_m, perm)
    json.dump(perms, open(sys.argv[1], "w"))


if __name__ == "__main__":
    main()
