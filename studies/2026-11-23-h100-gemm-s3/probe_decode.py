"""Why a study timed our decode kernels 3-6% faster than `autotune compare` while cuBLAS agreed
(studies/2026-11-23-h100-gemm-heldout/). Times the default kernel and cuBLAS with the protocol
(time_on_sets) under each condition that differs between a study's worker and compare:
  compare  one input draw shared by both, interleaved rounds (compare's measure);
  fresh    a new input draw, reference check and input-set clones before each timing (the
           study's evaluator);
  hot      after 1 s of 8192^3 matmuls (compare runs large shapes between decode ones);
  idle     after 1 s idle;
  child    `compare` again in a fresh process (the study's worker is one).
Prints a table and writes probe.csv (with the SM clock and temperature before each timing).
Usage (GPU machine, TVM present to build the kernels): python probe_decode.py OUTDIR SHAPE..."""

import csv
import multiprocessing as mp
import subprocess
import sys
import time

import torch

import autotune
from autotune.runner.protocol import input_sets, time_on_sets

ROUNDS = 3


def smi():
    q = "clocks.sm,temperature.gpu,power.draw"
    out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout.strip()
    return out.split(", ")


def variants(op, problem, seed):
    space = op.space
    kernel = op.provider.get(problem, space.default_config(problem))
    inputs = space.make_inputs(problem, seed=seed, device="cuda")
    ref = space.reference(problem, inputs)[0]
    kernel(*inputs)
    assert torch.allclose(inputs[2].float(), ref, rtol=2e-2, atol=2e-1), problem.key
    return inputs, {"ours": lambda s: (lambda: kernel(*s)),
                    "cublas": lambda s: space.vendor(problem, s)}


def run(conditions, shapes, rows):
    op = autotune.load("gemm", store="none.json")
    for text in shapes:
        problem = op.space.parse_problem(text)
        inputs, binds = variants(op, problem, 0)
        sets = input_sets(inputs)
        big = [torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        for cond in conditions:
            for r in range(ROUNDS):
                for name in (list(binds) if r % 2 == 0 else list(binds)[::-1]):
                    if cond == "fresh":
                        inputs, _ = variants(op, problem, 100 + r)
                        sets = input_sets(inputs)
                    elif cond == "hot":
                        t0 = time.time()
                        while time.time() - t0 < 1.0:
                            big[0] @ big[1]
                        torch.cuda.synchronize()
                    elif cond == "idle":
                        torch.cuda.synchronize()
                        time.sleep(1.0)
                    clock, temp, power = smi()
                    ms = time_on_sets(binds[name], sets).median_ms
                    rows.append(dict(shape=text, condition=cond, variant=name, round=r,
                                     us=round(ms * 1e3, 3), sm_mhz=clock, temp_c=temp,
                                     power_w=power))


def child(shapes, queue):
    rows = []
    run(["compare"], shapes, rows)
    queue.put([{**r, "condition": "child"} for r in rows])


if __name__ == "__main__":
    out, shapes = sys.argv[1], sys.argv[2:]
    rows = []
    run(["compare", "fresh", "hot", "idle"], shapes, rows)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(shapes, q))
    p.start()
    rows += q.get()
    p.join()
    with open(f"{out}/probe.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    import pandas as pd

    t = pd.DataFrame(rows)
    table = t.pivot_table(index=["shape", "variant"], columns="condition", values="us",
                          aggfunc="median")
    print(table.round(2).to_string())
    print(t.groupby("condition")[["sm_mhz", "temp_c", "power_w"]].agg(
        lambda s: f"{pd.to_numeric(s).min():.0f}-{pd.to_numeric(s).max():.0f}").to_string())
