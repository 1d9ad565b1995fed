"""Stores for the stream-K experiment of session 5 (run once on the CPU; the outputs travel).

For each dev shape (all seen: session 4's nine stream-K shapes and the ragged long-K ones of its
unseen list) the best tiled config recorded (the committed store, else session 3's unseen store)
goes into `tiled.json`; the same config as stream-K (persistent, cluster 1x1, split_k 1) with
L2 evict-first into `sk_first.json` and with evict-normal into `sk_normal.json`; as stream-K in
2x1 clusters (the tiled config's L2 hint) into `sk_2x1.json`. `autotune
compare --store` on each then times that config beside the default and cuBLAS."""

import json
import sys
from pathlib import Path

from autotune.spaces import get_space

HERE = Path(__file__).parent
COMMITTED = Path("studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json")
S3 = Path("studies/2026-11-23-h100-gemm-s4/dev/s3_unseen_store.json")
SHAPES = sys.argv[1:]


def key(shape: str) -> str:
    m, n, k = shape.split("x")
    return f"M={m},N={n},K={k},dtype=bfloat16"


def main() -> None:
    space = get_space("gemm_sm90")
    committed, s3 = (json.loads(p.read_text()) for p in (COMMITTED, S3))
    by_key = {e["problem"]: e for e in s3["entries"]} | {e["problem"]: e
                                                         for e in committed["entries"]}
    out = {"tiled": [], "sk_first": [], "sk_normal": [], "sk_2x1": []}
    for shape in SHAPES:
        e = by_key[key(shape)]
        tiled = e["config"] | {"stream_k": False}
        problem = space.parse_problem(shape)
        sk = tiled | {"stream_k": True, "persistent": True, "split_k": 1}
        for name, cfg in (("tiled", tiled),
                          ("sk_first", sk | {"cluster": "1x1", "l2_evict": "first"}),
                          ("sk_normal", sk | {"cluster": "1x1", "l2_evict": "normal"}),
                          # stream-K in 2x1 clusters (after the first run: see README)
                          ("sk_2x1", sk | {"cluster": "2x1"})):
            if space.violations(cfg, problem):
                raise SystemExit(f"{name} {shape}: {space.violations(cfg, problem)}")
            out[name].append({"problem": e["problem"], "config": cfg, "time_ms": e["time_ms"],
                              "source": f"s5 stream-K experiment ({name}) from {e['source']}"})
    for name, entries in out.items():
        write_store(HERE / f"{name}.json", entries)
        print(name, len(entries))


def write_store(path: Path, entries: list[dict]) -> None:
    """A store file with the committed store's header (the same GPU, template and timer)."""
    committed = json.loads(COMMITTED.read_text())
    path.write_text(json.dumps({"schema": committed["schema"], "header": committed["header"],
                                "entries": entries}, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()


def defaults_store(shapes: list[str], out: Path) -> None:
    """A store whose entry per shape is the space's default config as the rules stand now: run
    before a default rule changes, `autotune compare --store` on it then times the old default
    beside the new one (compare's default column) and cuBLAS."""
    space = get_space("gemm_sm90")
    write_store(out, [{"problem": key(s), "config": space.default_config(space.parse_problem(s)),
                       "time_ms": 1.0, "source": "s5: the default before the large-shape rule change"}
                      for s in shapes])
