"""How long must a kernel be held busy before its time is the same from one measurement to the
next (issue 18, session 11: one timing truth)?

Session 10 (studies/2026-11-24-h100-gemm-s10/probe) found a protocol time follows the SM clock
of the moment (1140-1890 MHz within seconds at the 700 W cap), so a study's final round and
`autotune compare`, taken minutes apart, read our kernel 3-9% apart on 12 of 32 shapes; held busy
for 4 s, a kernel read within 1.5% from call to call. This records, for dispatch's pick from
STORE and the vendor op on each shape, the time of every ~5 ms graph replay over HOLD_S held
busy, three times: after IDLE_S of idle (a final round after compiles), then back to back after
the other kernels in turn and in reverse (compare's interleaved rounds). Offline, the reading
for any (settle, window) is the median replay in that span: the shortest pair that reads the
same in all three is the protocol's hold.

    python3 scripts/steady_probe.py STORE OUT.csv 46x8192x5376 168x15872x14848 ...
    python3 scripts/steady_probe.py --report OUT.csv   # windows.csv and steady.png beside it
"""

import sys
import time
from pathlib import Path

import pandas as pd
import torch

from autotune.dispatch import load
from autotune.runner.protocol import capture_graph, graph_replays, input_sets

sys.path.insert(0, str(Path(__file__).parent))
import power  # noqa: E402  (replay_for)

HOLD_S, IDLE_S, REPLAY_MS = 6.0, 3.0, 5.0


def hold(calls: list) -> list[tuple[float, float]]:
    """(ms since the hold began at the replay's end, ms per launch) for each replay of one graph
    of back-to-back launches (~REPLAY_MS), replayed for HOLD_S."""
    one = sorted(graph_replays(lambda: [c() for c in calls], 3))[1]
    passes = max(1, round(REPLAY_MS / one))
    graph = capture_graph(lambda: [c() for _ in range(passes) for c in calls])
    origin = torch.cuda.Event(enable_timing=True)
    origin.record()
    events = power.replay_for(graph, HOLD_S)
    return [(origin.elapsed_time(b), a.elapsed_time(b) / (passes * len(calls))) for a, b in events]


def window_spread(table: pd.DataFrame, settle_s: float, window_s: float, stat: str) -> pd.Series:
    """Per kernel, how far apart its three holds read (max / min - 1) when each is read as the
    `stat` (median or mean) of the replays ending in [settle, settle + window)."""
    span = table[(table.t_ms >= settle_s * 1e3) & (table.t_ms < (settle_s + window_s) * 1e3)]
    per_hold = span.groupby(["shape", "variant", "rep"]).ms.agg(stat).unstack()
    return per_hold.max(axis=1) / per_hold.min(axis=1) - 1


def report(csv: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = pd.read_csv(csv)
    rows = []
    for stat in ("median", "mean"):
        for settle in (0.0, 0.2, 1.0, 2.0):
            for window in (0.05, 0.5, 0.8, 1.0, 2.0):
                spread = window_spread(table, settle, window, stat)
                rows.append(dict(stat=stat, settle_s=settle, window_s=window,
                                 worst=round(spread.max(), 4), median=round(spread.median(), 4),
                                 worst_kernel=" ".join(spread.idxmax())))
    windows = pd.DataFrame(rows)
    windows.to_csv(csv.replace(".csv", "_windows.csv"), index=False)
    print(windows.to_string(index=False))
    kernels = table.groupby(["shape", "variant"], sort=False)
    fig, axes = plt.subplots(len(kernels) // 2, 2, figsize=(12, 2.2 * (len(kernels) // 2)),
                             sharex=True)
    for ax, ((shape, variant), k) in zip(axes.flat, kernels):
        steady = k[k.t_ms >= 2000].ms.median()
        for (rep, condition), hold in k.groupby(["rep", "condition"]):
            bins = hold.groupby(hold.t_ms // 100).ms.mean()
            ax.plot(bins.index / 10, bins.values / steady, label=condition, lw=1)
        ax.set_title(f"{shape} {variant}", fontsize=9)
        ax.set_ylim(0.9, 1.1)
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("s held busy (100 ms bins)")
    fig.supylabel("time / its median after 2 s")
    fig.tight_layout()
    fig.savefig(csv.replace(".csv", ".png"), dpi=110)


def main() -> None:
    if sys.argv[1] == "--report":
        return report(sys.argv[2])
    store, out, *shapes = sys.argv[1:]
    op = load("gemm", store=store)
    space = op.space
    kernels = []
    for shape in shapes:
        problem = space.parse_problem(shape)
        _, kernel = op.pick(problem)
        sets = input_sets(space.make_inputs(problem, seed=0, device="cuda"))
        kernels.append((shape, "ours", [lambda s=s, k=kernel: k(*s) for s in sets]))
        kernels.append((shape, "vendor", [space.vendor(problem, s) for s in sets]))
    rows = []
    orders = [("idle", kernels), ("busy", kernels), ("busy_reversed", kernels[::-1])]
    for rep, (condition, order) in enumerate(orders):
        for shape, variant, calls in order:
            if condition == "idle":
                time.sleep(IDLE_S)
            for t_ms, ms in hold(calls):
                rows.append(dict(shape=shape, variant=variant, rep=rep, condition=condition,
                                 t_ms=t_ms, ms=ms))
            last = pd.DataFrame(rows[-50:])
            print(shape, variant, condition, f"{last.ms.median():.4f} ms at the end", flush=True)
    pd.DataFrame(rows).to_csv(out, index=False)


if __name__ == "__main__":
    main()
