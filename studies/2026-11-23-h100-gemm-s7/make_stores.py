"""Stores for session 7's 192-row experiment (run once on the CPU; the outputs travel).

For each seen large shape, the 192-row tile (three 64-row consumers, 2x1 cluster multicasting B,
persistent, the default's L2 hint and epilogue, the deepest ring that fits) whose BLK_N of
192..128 takes the fewest waves x tile area, into `c3.json`; 192x192 tiles into `c3_192.json`
where that width differs. `autotune compare --store` on each times it beside the default and
cuBLAS. With `--defaults OUT SHAPE...`: a store of the default configs (see defaults_store).
"""

import json
import math
import sys
from pathlib import Path

from autotune.spaces import get_space
from kernels.gemm._sm90_config import H100_SMS

HERE = Path(__file__).parent
COMMITTED = Path("studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json")
WIDTHS = (192, 176, 160, 144, 128)


def key(shape: str) -> str:
    m, n, k = shape.split("x")
    return f"M={m},N={n},K={k},dtype=bfloat16"


def wave_area(M: int, N: int, blk_m: int, blk_n: int) -> int:
    rows = 2 * math.ceil(M / (2 * blk_m))  # tile rows, in pairs for the cluster
    return math.ceil(rows * math.ceil(N / blk_n) / H100_SMS) * blk_m * blk_n


def main(shapes: list[str]) -> None:
    space = get_space("gemm_sm90")
    out = {"c3": [], "c3_192": []}
    for shape in shapes:
        problem = space.parse_problem(shape)
        M, N = problem["M"], problem["N"]
        default = space.default_config(problem)
        blk_n = min(WIDTHS, key=lambda n: (wave_area(M, N, 192, n), -n))
        for name, width in (("c3", blk_n), ("c3_192", 192)):
            if name == "c3_192" and width == blk_n:
                continue
            cfg = space._deepest(problem, {**default, "consumers": 3, "wg_m": 64,
                                           "blk_n": width, "cluster": "2x1"})
            if space.violations(cfg, problem):
                raise SystemExit(f"{name} {shape}: {space.violations(cfg, problem)}")
            out[name].append({"problem": key(shape), "config": cfg, "time_ms": 1.0,
                              "source": f"s7 192-row experiment ({name})"})
    for name, entries in out.items():
        write_store(HERE / f"{name}.json", entries)
        print(name, len(entries), " ".join(e["problem"].split(",dtype")[0] + f":{e['config']['blk_n']}"
                                           for e in entries))


def write_store(path: Path, entries: list[dict]) -> None:
    """A store file with the committed store's header (the same GPU, template and timer)."""
    committed = json.loads(COMMITTED.read_text())
    path.write_text(json.dumps({"schema": committed["schema"], "header": committed["header"],
                                "entries": entries}, indent=1, sort_keys=True) + "\n")


def defaults_store(shapes: list[str], out: Path) -> None:
    """A store whose entry per shape is the space's default config as the rules stand in the
    imported package: run against the revision before a rule change (PYTHONPATH=<its
    worktree>), `autotune compare --store` on it then times the old default beside the new
    one (compare's default column) and cuBLAS."""
    space = get_space("gemm_sm90")
    write_store(out, [{"problem": key(s), "config": space.default_config(space.parse_problem(s)),
                       "time_ms": 1.0, "source": "s7: the default before the 192-row rule"}
                      for s in shapes])


if __name__ == "__main__":
    if sys.argv[1] == "--defaults":  # --defaults OUT SHAPE...
        defaults_store(sys.argv[3:], Path(sys.argv[2]))
    else:
        main(sys.argv[1:])
