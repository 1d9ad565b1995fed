"""Which isolated timing protocol predicts a GEMM's time inside a decoder block? (issue 18;
temporary, phase 1: the chosen protocol goes to autotune/runner/protocol.py)

    python scripts/gemm_protocol_probe.py build DIR [SHAPE ...] [--set S] [--procs N]  # here (TVM)
    python scripts/gemm_protocol_probe.py run DIR OUT [--rounds R] [--protocols P ...]  # GPU, torch only
    python scripts/gemm_protocol_probe.py report OUT/protocol.jsonl                   # tables, anywhere

Job sets (`--set`): `protocol` (the default and seed configs of 8 suite-like shapes, and decode
variants), `fewtile` (shapes whose default tiles fill few SMs: a grid of tile, split-K and
swap-AB configs beside the default and seeds), `recheck` (the large shapes of `protocol`
again), `validate` (split_k=8 and deep rings on ragged shapes, checked, not timed), `rules`
(the default's rules on 14 shapes they were not written from: the new default, the default of
git revision `--old-rev`, and seeds), `rules2` (the same on 14 more shapes, second version of
the rules), `decide` (7 shapes where the timers disagreed, 5 rounds), `defaults` (the final
default on 34 ragged shapes across every rule, checked, not timed).

Per shape: cuBLAS (torch.matmul) and our kernel under the default and its seed configs (plus,
for the first decode shapes, a sweep of decode variants), each timed, in interleaved rotated
rounds, as

- `block`: the truth. A CUDA graph of L decoder-like layers, each `A = x * g` (the previous op
  writes the activation), `D = A @ W_l^T` with a distinct weight per layer (L x weight bytes >=
  3 x L2, so every weight comes from HBM), then `y = x + D[:, :K]` (the next op reads D). The
  GEMM's time is (replay time - replay time of the same graph without the GEMMs) / L.
- `rotate`: the tuner's timer, back-to-back Python launches over input sets exceeding L2.
- `cold`: triton's do_bench (256 MB memset before each launch), the benchmarks' timer.
- `graph`: back-to-back launches over the same input sets, captured in a CUDA graph (no Python
  launch cost between kernels).
- `warm_act`: a graph of [`A_i = x * g`; GEMM(A_i, B_i)] over the input sets (the activation
  just written, hence in L2; weights cold), minus the same graph without the GEMMs.
- `proto`: autotune/runner/protocol.py's `time_in_graph`, to check the implementation against
  `block`. (Its first version, measured in the `fewtile` and `recheck` runs, put a producer
  before each launch, a copy of A from a per-set pristine tensor, and took the producer's time
  out; the `rules` run measured it with no producer, `graph` with its own pass count.)
- `proto_act` (the `decide` run only): `time_in_graph` with each launch after a copy of A from
  one shared (L2-resident) source, the copies' own time taken out; not kept.

Every kernel is first validated (two fresh draws, NaN-poisoned output).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
import time
from pathlib import Path

import _gemm_sm90_jobs as jobs

from autotune.spaces.gemm_sm90 import kernel_config  # noqa: E402
from kernels.gemm._sm90_config import geometry  # noqa: E402

SPACE = jobs.SPACE
PROTOCOLS = ("block", "rotate", "cold", "graph", "warm_act", "proto")
# also in the `decide` results: a producer variant of time_in_graph measured there, since removed
REPORTED = PROTOCOLS + ("proto_act",)
L2_BYTES = 50 << 20
SHAPES = ("1x4096x4096", "16x4096x14336", "64x28672x4096", "128x6144x4096", "256x1000x4096",
          "512x28672x4096", "2048x4096x4096", "4096x4096x4096")
SWEEP_SHAPES = ("1x4096x4096", "64x28672x4096")
FEWTILE_SHAPES = ("1x2048x2048", "8x2560x4096", "32x3840x3840", "64x768x4096", "128x1024x4096",
                  "192x1536x2048", "256x1000x4096", "256x2048x8192")
RECHECK_SHAPES = ("512x28672x4096", "2048x4096x4096", "4096x4096x4096")
# the default's rules on shapes they were not written from (none of them held out)
RULES_SHAPES = ("1x1536x1536", "16x1024x4096", "48x1280x2560", "8x5376x2048", "96x2560x2560",
                "112x1536x4096", "160x1280x4096", "320x768x3072", "384x2560x2560",
                "640x1536x4096", "768x2304x2304", "1024x1024x1024", "2048x512x4096",
                "4096x640x2048")
RULES_SEEDS = 12
# the second version of the rules, on 14 more shapes none of the above (nor held out)
RULES2_SHAPES = ("1x2560x2560", "24x1792x4096", "40x896x4864", "4x11008x2048", "72x4352x1280",
                 "120x1792x3328", "200x1152x2560", "448x896x4096", "544x2048x1536",
                 "896x3456x2048", "2560x1152x4096", "6144x1200x1024", "3072x6656x4096",
                 "4096x640x2048")
# the final default on ragged M, N and K across every rule: checked, not timed
DEFAULTS_M = (1, 3, 17, 48, 64, 65, 77, 100, 128, 129, 200, 333, 513, 1000, 1025, 2049, 3001)
DEFAULTS_NK = ((520, 136), (1000, 1000), (1200, 4104), (2056, 2048), (4104, 1000),
               (640, 2048), (10248, 4096))
# where the timers disagreed: large shapes, and two whose block-best was the L2-policy flip
DECIDE_SHAPES = ("2048x512x4096", "4096x640x2048", "512x28672x4096", "2048x4096x4096",
                 "4096x4096x4096", "256x1000x4096", "128x1024x4096")
# ragged M, N and K for the new knob values (split_k=8, 10-12 stages): checked, not timed
VALIDATE = (("77x1024x1000", dict(split_k=8, wg_m=64, consumers=1, blk_n=64, blk_k=64)),
            ("77x1024x1000", dict(split_k=8, wg_m=64, consumers=2, blk_n=32, blk_k=64)),
            ("77x1024x1000", dict(split_k=8, swap_ab=True, wg_m=64, consumers=1, blk_n=96,
                                  blk_k=64)),
            ("1x4096x4096", dict(split_k=8, swap_ab=True, wg_m=64, consumers=1, blk_n=32,
                                 blk_k=128)),
            ("1000x1024x4104", dict(split_k=8, wg_m=64, consumers=2, blk_n=64, blk_k=64)),
            ("1000x1024x4104", dict(split_k=8, wg_m=128, consumers=1, blk_n=64, blk_k=64)),
            ("1000x1024x4104", dict(split_k=8, wg_m=128, consumers=2, blk_n=32, blk_k=128)),
            ("333x520x4104", dict(split_k=8, wg_m=64, consumers=1, blk_n=128, blk_k=64)),
            ("333x520x4104", dict(split_k=4, wg_m=64, consumers=1, blk_n=32, blk_k=64,
                                  stages=12)),
            ("77x1024x1000", dict(stages=12, wg_m=64, consumers=1, blk_n=32, blk_k=64,
                                  epilogue="tma")),
            ("1x4096x4096", dict(stages=10, swap_ab=True, wg_m=64, consumers=1, blk_n=16,
                                 blk_k=128, persistent=True)),
            ("1000x1024x4104", dict(stages=12, wg_m=64, consumers=1, blk_n=64, blk_k=64,
                                    cluster="1x2", epilogue="tma", persistent=True)),
            ("1000x1024x4104", dict(stages=10, wg_m=64, consumers=2, blk_n=32, blk_k=64,
                                    cluster="2x1", epilogue="tma", persistent=True)))


def decode_sweep(problem) -> list[dict]:
    """Decode variants from the existing knobs: ring depth (1 or 2 CTAs per SM), BLK_K, split-K,
    two consumers, persistent, tile width; every legal one not already a seed."""
    base = SPACE.default_config(problem)
    out = []
    for kw in ({"stages": 4}, {"stages": 3}, {"blk_k": 64, "stages": 8}, {"blk_k": 64, "stages": 4},
               {"split_k": 2}, {"split_k": 4}, {"split_k": 2, "stages": 4},
               {"split_k": 4, "stages": 4}, {"split_k": 2, "blk_k": 64},
               {"consumers": 2}, {"consumers": 2, "split_k": 2}, {"l2_evict": "normal"},
               {"persistent": True, "stages": 4}, {"blk_n": max(32, base["blk_n"])}):
        c = {**base, **kw}
        if not SPACE.violations(c, problem):
            out.append(c)
    return out


def fewtile_grid(problem) -> list[dict]:
    """Tile shapes x split-K (and swap-AB where offered), one tile per CTA, the deepest ring
    that fits; those launching 16 to 3 x 132 CTAs."""
    M, base, out = problem["M"], SPACE.default_config(problem), []

    def add(**kw):
        c = SPACE._deepest(problem, {**base, "persistent": False, "cluster": "1x1", "raster": "m",
                                     "group": 8, "l2_evict": "first", **kw})
        if not SPACE.violations(c, problem) and c not in out:
            grid = geometry(M, problem["N"], problem["K"], kernel_config(c)).grid
            if 16 <= grid <= 3 * 132:
                out.append(c)

    if M <= 128:
        narrow = min(n for n in range(16, 257, 16) if n >= M)
        for blk_n, blk_k, split in itertools.product((narrow, 2 * narrow), (64, 128), (1, 2, 4, 8)):
            add(swap_ab=True, wg_m=64, consumers=1, blk_n=blk_n, blk_k=blk_k, split_k=split,
                epilogue="reg")
    tiles = ((64, 1), (64, 2), (128, 1)) if M > 64 else ((64, 1),)
    for (wg_m, consumers), blk_n, split in itertools.product(tiles, (32, 64, 128, 256),
                                                             (1, 2, 4, 8)):
        add(swap_ab=False, wg_m=wg_m, consumers=consumers, blk_n=blk_n, blk_k=64, split_k=split,
            epilogue="tma" if split == 1 else "reg")
    return out


def build_jobs(shapes, which: str = "protocol") -> list[dict]:
    if which == "defaults":
        shapes = [f"{m}x{n}x{k}" for i, m in enumerate(DEFAULTS_M)
                  for n, k in (DEFAULTS_NK[i % 7], DEFAULTS_NK[(i + 3) % 7])]
        return [{"problem": t, "config": SPACE.default_config(SPACE.parse_problem(t)),
                 "time": False, "tag": "default"} for t in shapes]
    if which == "validate":
        out = []
        for text, kw in VALIDATE:
            problem = SPACE.parse_problem(text)
            c = {**SPACE.default_config(problem), "persistent": False, "cluster": "1x1",
                 "epilogue": "reg", "swap_ab": False, "split_k": 1, **kw}
            c = c if "stages" in kw else SPACE._deepest(problem, c)
            assert not SPACE.violations(c, problem), (text, kw, SPACE.violations(c, problem))
            out.append({"problem": text, "config": c, "time": False, "tag": f"v{len(out)}"})
        return out
    out = []
    for text in shapes:
        problem = SPACE.parse_problem(text)
        configs = [SPACE.default_config(problem)] + SPACE.seed_configs(problem)
        if which == "protocol" and text in SWEEP_SHAPES:
            configs += decode_sweep(problem)
        if which == "fewtile":
            configs += fewtile_grid(problem)
        if which in ("rules", "rules2"):
            configs = configs[:1] + [OLD_SPACE.default_config(problem)] + configs[1:RULES_SEEDS]
        seen = []
        for c in configs:
            if c not in seen:
                seen.append(c)
        out += [{"problem": text, "config": c, "time": True,
                 "tag": "default" if i == 0 else f"c{i}"} for i, c in enumerate(seen)]
        if which in ("rules", "rules2"):  # the old default, or the new one when they are the same
            old = next(j for j in out if j["problem"] == text
                       and j["config"] == OLD_SPACE.default_config(problem))
            old["old_default"] = True
    return out


def old_space(rev: str):
    """The gemm_sm90 plugin as it was at git revision `rev`."""
    import importlib.util
    import subprocess
    import tempfile

    src = subprocess.run(["git", "show", f"{rev}:autotune/spaces/gemm_sm90.py"], check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "gemm_sm90_old.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("autotune.spaces._gemm_sm90_old", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GemmSm90Space()


OLD_SPACE = None


# ---------------------------------------------------------------- GPU side (torch, no TVM)
def _graph_ms(body, replays: int = 10) -> float:
    """Median time of one replay of a CUDA graph that runs `body()`."""
    from autotune.runner.protocol import graph_replays

    return statistics.median(graph_replays(body, replays))


class Bench:
    """Buffers of one shape: rotated input sets and a decoder-like block with distinct weights."""

    def __init__(self, problem):
        import torch

        self.problem = problem
        M, N, K = problem["M"], problem["N"], problem["K"]
        self.sets = jobs._input_sets(problem, 1000)
        w_bytes = 2 * N * K
        self.layers = min(64, max(8, math.ceil(3 * L2_BYTES / w_bytes)))
        gen = torch.Generator(device="cuda").manual_seed(7)
        self.weights = [torch.randn(N, K, generator=gen, device="cuda").to(torch.bfloat16)
                        for _ in range(self.layers)]
        self.x = torch.randn(M, K, generator=gen, device="cuda").to(torch.bfloat16)
        self.g = (torch.rand(K, generator=gen, device="cuda") + 0.5).to(torch.bfloat16)
        self.a = torch.empty(M, K, device="cuda", dtype=torch.bfloat16)
        self.d = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        self.y = torch.empty(M, min(N, K), device="cuda", dtype=torch.bfloat16)
        self.base_block = self._block(None)
        self.base_act = self._warm_act(None)

    def _block(self, gemm) -> float:
        import torch

        w = min(self.problem["N"], self.problem["K"])

        def body():
            for W in self.weights:
                torch.mul(self.x, self.g, out=self.a)
                if gemm:
                    gemm(self.a, W, self.d)
                torch.add(self.x[:, :w], self.d[:, :w], out=self.y)

        return _graph_ms(body) / self.layers

    def _warm_act(self, gemm, reps: int = 4) -> float:
        import torch

        def body():
            for _ in range(reps):
                for a, b, d in self.sets:
                    torch.mul(self.x, self.g, out=a)
                    if gemm:
                        gemm(a, b, d)

        return _graph_ms(body) / (reps * len(self.sets))

    def measure(self, gemm, protocols) -> dict:
        from autotune.runner.protocol import time_in_graph
        from autotune.runner.timing import time_cold, time_launches

        sets = self.sets

        def launch(i):
            gemm(*sets[i])

        def graph_body(reps=4):
            for _ in range(reps):
                for s in sets:
                    gemm(*s)

        timers = {
            "block": lambda: self._block(gemm) - self.base_block,
            "rotate": lambda: time_launches(launch, len(sets), warmup_ms=10, rounds=7,
                                            min_round_ms=1.0).median_ms,
            "cold": lambda: time_cold(launch, len(sets), warmup_ms=10, measure_ms=40).median_ms,
            "graph": lambda: _graph_ms(graph_body) / (4 * len(sets)),
            "warm_act": lambda: self._warm_act(gemm) - self.base_act,
            "proto": lambda: time_in_graph(launch, len(sets)).median_ms,
        }
        return {p: timers[p]() for p in protocols}


def run(art_dir: Path, out: Path, rounds: int, protocols) -> None:
    import torch

    from autotune.runner.timing import rotated

    out.mkdir(parents=True, exist_ok=True)
    info = jobs.device_info()
    manifest = json.loads((art_dir / "manifest.json").read_text())
    shapes: dict[str, list[dict]] = {}
    for job in manifest:
        shapes.setdefault(job["problem"], []).append(job)
    log = (out / "protocol.jsonl").open("w")
    t_start = time.time()
    for text, group in shapes.items():
        problem = SPACE.parse_problem(text)
        entries = {"cublas": lambda a, b, d: torch.matmul(a, b.T, out=d)}
        for job in group:
            if "compile_error" in job:
                log.write(json.dumps({**job, "ok": False}) + "\n")
                continue
            res, kernel = jobs._validate(job, art_dir)
            if not res["ok"] or not job["time"]:
                log.write(json.dumps({**job, **res}) + "\n")
                print(text, job["tag"], "ok" if res["ok"] else "INVALID", res, flush=True)
                continue
            entries[job["id"]] = lambda a, b, d, k=kernel: k(a, b, d, check=False)
        if len(entries) == 1:
            continue
        bench = Bench(problem)
        # warm the clock: 200 ms of the shape's cuBLAS GEMM
        t0 = time.time()
        while time.time() - t0 < 0.2:
            entries["cublas"](*bench.sets[0])
        torch.cuda.synchronize()
        per = {name: [] for name in entries}
        for r in range(rounds):
            for name in rotated(list(entries), r):
                per[name].append(bench.measure(entries[name], protocols))
        by_id = {j["id"]: j for j in group}
        for name, rs in per.items():
            row = {"problem": text, "name": name, "layers": bench.layers,
                   "sets": len(bench.sets), "rounds": rs,
                   **{p: statistics.median(x[p] for x in rs) for p in protocols}}
            if name != "cublas":
                row.update(tag=by_id[name]["tag"], config=by_id[name]["config"], ok=True,
                           old_default=by_id[name].get("old_default", False))
            log.write(json.dumps(row) + "\n")
        log.flush()
        print(f"{text}: {len(entries)} entries, {time.time() - t_start:.0f}s", flush=True)
        del bench
        torch.cuda.empty_cache()
    info.update(gpu_state_after=jobs.gpu_state(), rounds=rounds, command=" ".join(sys.argv))
    (out / "protocol_meta.json").write_text(json.dumps(info, indent=1))
    if not any(job["time"] for job in manifest):
        return
    print(report(out / "protocol.jsonl"))


# ---------------------------------------------------------------- report
def _kendall(xs, ys) -> float:
    pairs = [(i, j) for i in range(len(xs)) for j in range(i + 1, len(xs))]
    if not pairs:
        return math.nan
    s = sum(math.copysign(1, (xs[i] - xs[j]) * (ys[i] - ys[j]))
            for i, j in pairs if (xs[i] - xs[j]) * (ys[i] - ys[j]) != 0)
    return s / len(pairs)


def report(path: Path) -> str:
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    rows = [r for r in rows if "block" in r]
    iso = [p for p in REPORTED[1:] if p in rows[0]]
    by_shape: dict[str, list[dict]] = {}
    for r in rows:
        by_shape.setdefault(r["problem"], []).append(r)
    lines = ["| shape | entries | block ms (cuBLAS) | " + " | ".join(
        f"{p}/block median (max) | {p} tau | {p} best-in-block rank" for p in iso) + " |",
        "|---|---|---|" + "---|---|---|" * len(iso)]
    errs = {p: [] for p in iso}
    taus = {p: [] for p in iso}
    regret = {p: [] for p in iso}  # in-block time of the config the protocol picks, over the best
    vend = {p: [] for p in ["block"] + iso}
    for shape, rs in by_shape.items():
        cub = next(r for r in rs if r["name"] == "cublas")
        ours = [r for r in rs if r["name"] != "cublas"]
        best_block = min(ours, key=lambda r: r["block"])
        cells = []
        for p in iso:
            ratios = [r[p] / r["block"] for r in rs if r["block"] > 0]
            errs[p] += [abs(x - 1) for x in ratios]
            tau = _kendall([r[p] for r in ours], [r["block"] for r in ours])
            taus[p].append(tau)
            rank = sorted(ours, key=lambda r: r[p]).index(best_block) + 1
            regret[p].append(min(ours, key=lambda r: r[p])["block"] / best_block["block"] - 1)
            cells.append(f"{statistics.median(ratios):.3f} ({max(ratios, key=lambda x: abs(x - 1)):.3f}) "
                         f"| {tau:.2f} | {rank}")
        for p in vend:
            vend[p].append(cub[p] / min(r[p] for r in ours))
        lines.append(f"| {shape} | {len(rs)} | {cub['block']:.4f} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| protocol | mean abs(ratio to block - 1) | max | mean Kendall tau vs block "
                 "| mean regret of its pick in block | max regret |")
    lines.append("|---|---|---|---|---|---|")
    for p in iso:
        lines.append(f"| {p} | {statistics.mean(errs[p]):.3f} | {max(errs[p]):.3f} | "
                     f"{statistics.mean(taus[p]):.2f} | {statistics.mean(regret[p]):.3f} | "
                     f"{max(regret[p]):.3f} |")
    if any(r.get("old_default") for r in rows):
        lines += ["", defaults_table(by_shape, iso[-1])]
    lines.append("")
    lines.append("Best of ours / cuBLAS (speed-up, >1 = ours faster), per protocol:")
    lines.append("| shape | " + " | ".join(vend) + " |")
    lines.append("|---|" + "---|" * len(vend))
    for i, shape in enumerate(by_shape):
        lines.append(f"| {shape} | " + " | ".join(f"{vend[p][i]:.3f}" for p in vend) + " |")
    return "\n".join(lines)


def defaults_table(by_shape: dict, protocol: str) -> str:
    """cuBLAS time over each of: the new default, the old default, the best measured config;
    in the block and under `protocol`."""
    def geomean(xs):
        return math.exp(sum(map(math.log, xs)) / len(xs))

    lines = [f"Speed-up over cuBLAS, in the block (and under {protocol}):", "",
             "| shape | cuBLAS us | new default | old default | best | new/old default |",
             "|---|---|---|---|---|---|"]
    cols = {"new": [], "old": [], "best": []}
    for shape, rs in by_shape.items():
        cub = next(r for r in rs if r["name"] == "cublas")
        ours = [r for r in rs if r["name"] != "cublas"]
        picks = {"new": next(r for r in ours if r["tag"] == "default"),
                 "old": next(r for r in ours if r.get("old_default")),
                 "best": min(ours, key=lambda r: r["block"])}
        cells = []
        for k, r in picks.items():
            cols[k].append(cub["block"] / r["block"])
            cells.append(f"{cub['block'] / r['block']:.3f} ({cub[protocol] / r[protocol]:.3f})")
        lines.append(f"| {shape} | {cub['block'] * 1000:.2f} | " + " | ".join(cells) +
                     f" | {picks['old']['block'] / picks['new']['block']:.3f} |")
    lines.append("| geomean | | " + " | ".join(f"{geomean(v):.3f}" for v in cols.values()) +
                 f" | {geomean(cols['new']) / geomean(cols['old']):.3f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir", type=Path)
    b.add_argument("shapes", nargs="*")
    b.add_argument("--set", default="protocol", choices=("protocol", "fewtile", "recheck",
                                                         "validate", "rules", "rules2",
                                                         "decide", "defaults"))
    b.add_argument("--old-rev", default="HEAD",
                   help="git revision whose default_config is the 'old default' (--set rules)")
    b.add_argument("--procs", type=int, default=1)
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("out", type=Path)
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--protocols", nargs="+", default=list(PROTOCOLS), choices=PROTOCOLS)
    p = sub.add_parser("report")
    p.add_argument("jsonl", type=Path)
    args = ap.parse_args()
    if args.cmd == "build":
        default = {"protocol": SHAPES, "fewtile": FEWTILE_SHAPES, "recheck": RECHECK_SHAPES,
                   "validate": (), "rules": RULES_SHAPES, "rules2": RULES2_SHAPES,
                   "decide": DECIDE_SHAPES, "defaults": ()}[args.set]
        if args.set in ("rules", "rules2"):
            global OLD_SPACE
            OLD_SPACE = old_space(args.old_rev)
        jobs.build_jobs(build_jobs(args.shapes or default, args.set), args.dir, args.procs)
    elif args.cmd == "run":
        run(args.dir, args.out, args.rounds, args.protocols)
    else:
        print(report(args.jsonl))


if __name__ == "__main__":
    main()
