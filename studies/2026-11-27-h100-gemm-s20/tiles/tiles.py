"""Do 256-row tiles beat the hand-tuned default at M > 256 on the H100? Recorded trials only.

    .venv/bin/python studies/2026-11-27-h100-gemm-s20/tiles/tiles.py     # from the repo root

Reads every H100 GEMM study's Optuna trials (studies/*h100-gemm*/*/*trials*.csv, h200 folders
skipped), the committed H100 store and cuBLAS's kernels profiled in s20; writes tiles.csv
beside this file (one row per (trials file, shape) with M > 256) and prints a summary.

Tile naming: "{wg_m*consumers}x{blk_n}", suffix "s" for swap_ab (then the first number runs
along N, as in cuBLAS's nvjet names "{N tile}x{M tile}"). tile_m/tile_n are along M and N.
Times are the study's `value` (its first timing of the trial, graph-window protocol).
"""

from __future__ import annotations

import glob
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SMS = 132
STORE = "studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json"
CUBLAS = "studies/2026-11-27-h100-gemm-s20/cublas/cublas_kernels.json"
M_BINS = [(257, 1024), (1025, 4096), (4097, 10**9)]


def dims(shape: str) -> tuple[int, int, int]:
    return tuple(int(re.search(rf"{k}=(\d+)", shape).group(1)) for k in "MNK")


def waves(M: int, N: int, tile_m: int, tile_n: int) -> tuple[int, float]:
    """(tiles, fraction of SMs busy in the last wave) for a 132-SM persistent grid."""
    tiles = math.ceil(M / tile_m) * math.ceil(N / tile_n)
    return tiles, (tiles - SMS * ((tiles - 1) // SMS)) / SMS


def load_trials() -> tuple[pd.DataFrame, list[str]]:
    files = sorted(glob.glob("studies/*h100-gemm*/*/*trials*.csv")
                   + glob.glob("studies/*h100-gemm*/*/*/*trials*.csv"))
    frames, skipped = [], []
    for f in files:
        if "h200" in f:
            continue
        d = pd.read_csv(f)
        if "study" not in d:
            skipped.append(f"{f} (no study column)")
            continue
        d = d[(d.state == "COMPLETE") & d.value.notna()]
        if "user_attrs_outcome" in d:
            d = d[d.user_attrs_outcome.fillna("ok") == "ok"]
        frames.append(d.assign(file=f))
    t = pd.concat(frames, ignore_index=True)
    t["shape"] = t.study.str.replace("gemm_sm90/", "", regex=False)
    t[["M", "N", "K"]] = t["shape"].map(dims).tolist()
    t["swap"] = t.params_swap_ab.astype(bool)
    t["stream_k"] = t.get("params_stream_k", pd.Series(False, index=t.index))
    t["stream_k"] = t["stream_k"].fillna(False).astype(bool)
    t["blk_m"] = (t.params_wg_m * t.params_consumers).astype(int)
    t["blk_n"] = t.params_blk_n.astype(int)
    t["tile"] = t.blk_m.astype(str) + "x" + t.blk_n.astype(str) + np.where(t.swap, "s", "")
    t["tile_m"] = np.where(t.swap, t.blk_n, t.blk_m)
    t["tile_n"] = np.where(t.swap, t.blk_m, t.blk_n)
    t[["tiles", "last_wave"]] = [waves(*r) for r in t[["M", "N", "tile_m", "tile_n"]].values]
    return t, skipped


def load_store() -> pd.DataFrame:
    rows = []
    for e in json.load(open(STORE))["entries"]:
        c = e["config"]
        tile = f"{c['wg_m'] * c['consumers']}x{c['blk_n']}" + ("s" if c["swap_ab"] else "")
        rows.append(dict(shape=e["problem"], store_ms=e["time_ms"], store_tile=tile,
                         store_default_ms=e.get("default_ms"), vendor_ms=e.get("vendor_ms")))
    return pd.DataFrame(rows)


def per_study(t: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (f, shape), g in t[t.M > 256].groupby(["file", "shape"], sort=False):
        dflt = g[g.user_attrs_source == "default"].head(1)
        best = g.loc[g.value.idxmin()]
        r256 = g[(g.blk_m == 256) & ~g.swap]
        r = dict(file=f, shape=shape, M=g.M.iat[0], N=g.N.iat[0], K=g.K.iat[0], trials=len(g),
                 best_ms=best.value, best_tile=best.tile, best_last_wave=best.last_wave,
                 best_stream_k=best.stream_k, n256=len(r256),
                 n256_swap=int(((g.blk_m == 256) & g.swap).sum()))
        if len(dflt):
            d = dflt.iloc[0]
            r.update(default_ms=d.value, default_tile=d.tile, default_tiles=d.tiles,
                     default_last_wave=d.last_wave, default_retime_ms=d.user_attrs_retime_ms)
        if len(r256):
            b = r256.loc[r256.value.idxmin()]
            r.update(best256_ms=b.value, best256_tile=b.tile, best256_tiles=b.tiles,
                     best256_last_wave=b.last_wave, best256_retime_ms=b.user_attrs_retime_ms,
                     best256_cfg=f"{b.params_cluster} st{int(b.params_stages)} "
                     f"{'pers' if b.params_persistent else 'grid'} {b.params_epilogue}")
        rows.append(r)
    s = pd.DataFrame(rows)
    s["default_over_best256"] = s.default_ms / s.best256_ms
    s["default_over_best"] = s.default_ms / s.best_ms
    s["best256_is_best"] = s.best256_ms == s.best_ms
    return s


def geo(x: pd.Series) -> str:
    x = x.dropna()
    if x.empty:
        return "n=0"
    wins = int((x > 1).sum())
    return (f"n={len(x)} 256 faster in {wins}, geomean {np.exp(np.log(x).mean()):.3f}, "
            f"range {x.min():.3f}-{x.max():.3f}")


def main() -> None:
    t, skipped = load_trials()
    store = load_store()
    s = per_study(t).merge(store, on="shape", how="left")
    s["vendor_beats_default"] = np.where(s.vendor_ms.isna(), "not in store",
                                         np.where(s.vendor_ms < s.store_default_ms, "yes", "no"))
    s["M_range"] = pd.cut(s.M, [256, 1024, 4096, np.inf], labels=["257-1024", "1025-4096",
                                                                  ">4096"])
    s.to_csv(HERE / "tiles.csv", index=False, float_format="%.6g")

    pairs = t.groupby(["file", "shape"]).ngroups
    print(f"trial files: {t.file.nunique()}, (file, shape) studies: {pairs}, "
          f"distinct shapes: {t['shape'].nunique()}; skipped: {skipped or 'none'}")
    print(f"M > 256: {len(s)} studies, {s['shape'].nunique()} distinct shapes, "
          f"{len(t[t.M > 256])} completed trials")
    tried = s[s.n256 > 0]
    for k, g in s.groupby("M_range", observed=True):
        print(f"  M {k}: {len(g)} studies, 256-row tried in {int((g.n256 > 0).sum())}, "
              f"shape in store {int(g.store_ms.notna().sum())}")
    print(f"\n256-row tile (swap_ab False) tried in {len(tried)} studies "
          f"({tried['shape'].nunique()} shapes), {int(tried.n256.sum())} trials; "
          f"swapped 256-row (cuBLAS's orientation) trials at M>256: {int(s.n256_swap.sum())}")
    print("default/best256 ratio (>1: 256-row faster):", geo(tried.default_over_best256))
    print(f"256-row trial is the study's best in {int(tried.best256_is_best.sum())}")
    for col in ["M_range", "vendor_beats_default", "best256_tile"]:
        for k, g in tried.groupby(col, observed=True):
            print(f"  {col} {k}: {geo(g.default_over_best256)}")
    rt = tried.dropna(subset=["default_retime_ms", "best256_retime_ms"])
    print("same, on the final-round retimes where both were retimed:",
          geo(rt.default_retime_ms / rt.best256_retime_ms))
    print("\nper study where 256 was tried:")
    cols = ["shape", "default_tile", "default_ms", "best256_tile", "best256_cfg",
            "default_over_best256", "best_tile", "default_last_wave", "best256_last_wave"]
    print(tried[cols].sort_values("default_over_best256").to_string(
        index=False, float_format="%.3f"))

    print("\nwave balance (last-wave fill = share of 132 SMs busy in the last wave):")
    w = tried.dropna(subset=["best256_last_wave"])
    win = w.default_over_best256 > 1
    print(f"  256 wins: mean fill default {w[win].default_last_wave.mean():.2f} vs 256 "
          f"{w[win].best256_last_wave.mean():.2f}; 256 loses: default "
          f"{w[~win].default_last_wave.mean():.2f} vs 256 {w[~win].best256_last_wave.mean():.2f}")
    print(f"  256 wins with a fuller last wave than the default: "
          f"{int((w[win].best256_last_wave > w[win].default_last_wave).sum())} of {int(win.sum())}")
    ok = s.dropna(subset=["default_last_wave"])
    imp = ok[ok.default_over_best > 1.01]
    print(f"  studies whose best beat the default by >1%: {len(imp)}; best has the fuller last "
          f"wave in {int((imp.best_last_wave > imp.default_last_wave).sum())}, "
          f"stream-K in {int(imp.best_stream_k.sum())}")
    gain = (w.best256_last_wave - w.default_last_wave).rank()
    print(f"  Spearman(fill gain of 256 over default, default/best256): "
          f"{gain.corr(w.default_over_best256.rank()):.2f} (n={len(w)})")
    few = imp[imp.default_tiles <= 3 * SMS]
    print(f"  of those, default within 3 waves: {len(few)}; best fuller last wave in "
          f"{int((few.best_last_wave > few.default_last_wave).sum())}")

    big = store[store['shape'].map(lambda x: dims(x)[0] > 256)]
    print(f"  studies where a 256-row trial was best: {int(s.best256_is_best.sum())}, "
          f"of them with the shape in the store: "
          f"{int(s[s.best256_is_best].store_ms.notna().sum())}")
    print(f"\nstore, M > 256: {len(big)} entries; winner tiles: "
          f"{big.store_tile.value_counts().to_dict()}")
    print(f"  cuBLAS faster than the store's winner in {int((big.vendor_ms < big.store_ms).sum())}"
          f", than its default in {int((big.vendor_ms < big.store_default_ms).sum())}")
    print("cuBLAS's s20 kernels at M > 256 (nvjet tile read {N}x{M}: swapped, as ours 's') "
          "beside the studies of the same shape (tiles, last-wave fill):")
    for k in json.load(open(CUBLAS))["kernels"]:
        M, N, K = map(int, k["problem"].split("x"))
        if M <= 256:
            continue
        tn, tm = map(int, re.search(r"tst_(\d+)x(\d+)", k["name"]).groups())
        tiles, fill = waves(M, N, tm, tn)
        print(f"  {k['problem']:>16} cuBLAS {tn}x{tm}s {tiles} tiles, fill {fill:.2f}")
        key = f"M={M},N={N},K={K},dtype=bfloat16"
        for _, r in s[s["shape"] == key].iterrows():
            print(f"{'':20}{r.file.split('/')[1][11:]}: default {r.default_tile} "
                  f"{r.default_tiles:.0f} tiles, fill {r.default_last_wave:.2f}; best "
                  f"{r.best_tile} fill {r.best_last_wave:.2f}, default/best "
                  f"{r.default_over_best:.3f}; 256-row trials {r.n256}; store "
                  f"{r.store_tile if isinstance(r.store_tile, str) else '-'}")

if __name__ == "__main__":
    main()
