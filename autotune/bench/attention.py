"""Benchmark of the Hopper attention kernel (kernels/fa4/sm90.py): TFLOP/s of the hand-tuned
default and of the best of a sweep of legal configs, beside cuDNN and FlashAttention-2 (torch
SDPA backends), all measured in one run under the tuner's timing protocol
(runner.protocol.time_on_sets over input_sets). head_dim 128, 16 heads, batch x seqlen = 16k
tokens, seqlen 1k/4k/8k/16k, causal and not (causal counts half the FLOPs), bfloat16.

    python -m autotune.bench.attention build DIR          # CPU: compile the candidates
    python -m autotune.bench.attention run DIR OUT        # GPU machine (no TVM needed)
    ncu -k regex:attention --launch-skip 1 \
        python -m autotune.bench.attention launch DIR LABEL SEQLEN    # profile one candidate

The candidates are the default per causal flag and its neighbours in the legal space (block_n,
ping-pong, the rescale threshold), each binary with every value of the
launch-time knobs (persistent, order). Every candidate is validated against the float32
reference on the benchmark's own inputs (poisoned outputs) before it is timed; one that fails
is reported, not timed. OUT/attention_sm90_bench.jsonl gets a header (device, date, versions,
command, protocol) and one row per measurement as they finish; OUT/attention_sm90_bench.md the
table.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import shlex
import sys
import threading
from pathlib import Path

from kernels.fa4._sm90_config import (
    ORDERS,
    AttentionSm90Config,
    compile_key,
    default_config,
    launch_scalars,
    violations,
)
from kernels.fa4.problem import AttentionProblem, flops

from ..runner.base import PROTOCOL

HEADS, HEAD_DIM, TOKENS, DTYPE = 16, 128, 16384, "bfloat16"
SEQLENS = (1024, 4096, 8192, 16384)
BASELINES = ("cudnn", "fa2")
RESULTS = "attention_sm90_bench"
HANG_S = 20.0  # a launch (or a graph replay) that has not finished by then has hung


def problem(causal: bool) -> AttentionProblem:
    return AttentionProblem(head_dim=HEAD_DIM, heads_q=HEADS, heads_kv=HEADS, causal=causal,
                            dtype=DTYPE)


def binaries(causal: bool) -> dict[str, AttentionSm90Config]:
    """The default and its legal neighbours, one per binary (launch knobs at the default's)."""
    p = problem(causal)
    base = default_config(p)
    variants = [base]
    variants += [dataclasses.replace(base, block_n=bn) for bn in (112, 128, 144, 160, 176)]
    variants += [dataclasses.replace(base, pingpong=False),
                 dataclasses.replace(base, rescale_threshold=0.0)]
    out, seen = {}, set()
    for c in variants:
        if not violations(c, p) and compile_key(c) not in seen:
            seen.add(compile_key(c))
            name = "default" if c == base else f"bn{c.block_n}_s{c.stages}_pp{int(c.pingpong)}" \
                f"_ov{int(c.overlap)}_th{c.rescale_threshold:g}"
            out[f"{'causal' if causal else 'full'}_{name}"] = c
    return out


def candidates(causal: bool) -> dict[str, tuple[str, AttentionSm90Config]]:
    """label -> (binary, config): every binary with every value of the launch-time knobs."""
    return {f"{name}_{'persistent' if persistent else 'grid'}_{order}":
            (name, dataclasses.replace(c, persistent=persistent, order=order))
            for name, c in binaries(causal).items()
            for persistent in (False, True) for order in ORDERS}


def build(dest: Path) -> None:
    import tirx
    from kernels.fa4.sm90 import build_attention

    for causal in (False, True):
        for name, c in binaries(causal).items():
            art = tirx.build(build_attention(problem(causal), c), "sm_90a")
            art.save(dest / name, source=False)
            print(f"{name}: {art.resources.registers} regs, {art.resources.spill_bytes} B spilled")


def watchdog(what: str, out: Path):
    """A timer that, if not cancelled within HANG_S, records a hang and ends the process (a
    hung kernel cannot be interrupted; the rows so far are already written)."""
    def fire():
        with out.open("a") as f:
            f.write(json.dumps({"hang": what}) + "\n")
        print(f"HANG {what}", flush=True)
        os._exit(3)
    timer = threading.Timer(HANG_S, fire)
    timer.start()
    return timer


def header() -> dict:
    import torch
    import triton

    props = torch.cuda.get_device_properties(0)
    return {"kind": "header", "device": props.name, "sms": props.multi_processor_count,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            # the output folder is the machine's own: recorded as OUT (no machine paths)
            "command": shlex.join(["python", "-m", "autotune.bench.attention",
                                   *sys.argv[1:-1], "OUT"]),
            "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "python": platform.python_version(),
            "heads": HEADS, "head_dim": HEAD_DIM, "tokens": TOKENS, "dtype": DTYPE,
            "protocol": f"{PROTOCOL}: autotune.runner.protocol.time_on_sets over input_sets "
                        "(CUDA-graph replays of back-to-back launches over input copies that "
                        "together exceed 2x L2; median of 10 replays)"}


def run(src: Path, out: Path) -> None:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import tirx
    from kernels.fa4.reference_torch import attention_reference, check_rows, errors, failures

    from ..runner.protocol import input_sets, time_on_sets

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{RESULTS}.jsonl"
    path.write_text(json.dumps(header()) + "\n")
    kernels = {}
    for causal in (False, True):
        p = problem(causal)
        for seqlen in SEQLENS:
            batch = TOKENS // seqlen
            shape = (batch, seqlen, HEADS, HEAD_DIM)
            sets = input_sets([*(torch.randn(shape, dtype=torch.bfloat16, device="cuda")
                                 for _ in range(3)),
                               torch.empty(shape, dtype=torch.bfloat16, device="cuda"),
                               torch.empty(batch, HEADS, seqlen, device="cuda")])
            rows = check_rows(seqlen, "cuda")
            ref = attention_reference(*sets[0][:3], causal, p.scale, rows)
            binds, results = {}, [{"name": "input_sets", "sets": len(sets)}]
            for label, (name, c) in candidates(causal).items():
                if name not in kernels:
                    kernels[name] = tirx.Kernel(tirx.Artifact.load(src / name))
                kern, scalars = kernels[name], launch_scalars(c, sms)
                q, k, v, o, lse = sets[0]
                o.fill_(float("nan"))
                lse.fill_(float("nan"))
                timer = watchdog(f"{label} causal={causal} seqlen={seqlen}", path)
                kern(q, k, v, o, lse, *scalars)
                torch.cuda.synchronize()
                timer.cancel()
                bad = failures(errors(o, lse, *ref, rows), DTYPE)
                if bad:
                    results.append({"name": label, "failed": bad})
                else:
                    binds[label] = (lambda s, kern=kern, sc=scalars:
                                    lambda: kern(*s, *sc, check=False))
            for label, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                                   ("fa2", SDPBackend.FLASH_ATTENTION)):
                def sdpa(s, backend=backend):
                    q, k, v = (x.transpose(1, 2) for x in s[:3])

                    def call():
                        with sdpa_kernel(backend):
                            torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                                             is_causal=causal)
                    return call
                binds[label] = sdpa
            for label, bind in binds.items():
                timer = watchdog(f"timing {label} causal={causal} seqlen={seqlen}", path)
                try:
                    t = time_on_sets(bind, sets)
                except RuntimeError as exc:  # e.g. a backend that cannot be captured: say so
                    results.append({"name": label, "error": str(exc)[:300]})
                    continue
                finally:
                    timer.cancel()
                results.append({"name": label, "ms": t.median_ms, "min_ms": t.min_ms,
                                "tflops": flops(p, batch, seqlen, seqlen) / t.median_ms / 1e9})
            with path.open("a") as f:  # a run cut short keeps what it measured
                for r in results:
                    f.write(json.dumps({"causal": causal, "seqlen": seqlen, "batch": batch,
                                        **r}) + "\n")
            print(table_row(causal, seqlen, results), flush=True)
            del sets, binds
    report(path)


def launch(src: Path, label: str, seqlen: int) -> None:
    """Two launches of candidate `label` (a warm-up, then the one a profiler should catch)."""
    import torch

    import tirx

    causal = label.startswith("causal")
    name, c = candidates(causal)[label]
    kern = tirx.Kernel(tirx.Artifact.load(src / name))
    batch = TOKENS // seqlen
    q, k, v, o = (torch.randn(batch, seqlen, HEADS, HEAD_DIM, dtype=torch.bfloat16,
                              device="cuda") for _ in range(4))
    lse = torch.empty(batch, HEADS, seqlen, device="cuda")
    for _ in range(2):
        kern(q, k, v, o, lse, *launch_scalars(c, torch.cuda.get_device_properties(0)
                                              .multi_processor_count))
    torch.cuda.synchronize()


def summary(causal: bool, results: list[dict]) -> dict:
    """default, tuned (best measured candidate), cuDNN and FA2 TFLOP/s of one shape."""
    timed = {r["name"]: r["tflops"] for r in results if "tflops" in r}
    ours = {n: t for n, t in timed.items() if n not in BASELINES}
    tag = "causal" if causal else "full"
    default = default_config(problem(causal))
    default_label = (f"{tag}_default_{'persistent' if default.persistent else 'grid'}_"
                     f"{default.order}")
    best = max(ours, key=ours.get, default=None)
    return {"default": timed.get(default_label), "tuned": ours.get(best), "tuned_config": best,
            "candidates": len(ours),
            "failed": [r["name"] for r in results if "failed" in r or "error" in r],
            "cudnn": timed.get("cudnn"), "fa2": timed.get("fa2")}


def _f(x, spec=".0f"):
    return "-" if x is None else format(x, spec)


def _ratio(a, b):
    return None if a is None or not b else a / b


def table_row(causal: bool, seqlen: int, results: list[dict]) -> str:
    s = summary(causal, results)
    ratios = [_f(_ratio(s[a], s[b]), ".2f")
              for a, b in (("tuned", "cudnn"), ("tuned", "fa2"), ("default", "cudnn"))]
    return (f"| {'yes' if causal else 'no'} | {seqlen} | {_f(s['default'])} | {_f(s['tuned'])} | "
            f"{_f(s['cudnn'])} | {_f(s['fa2'])} | {' | '.join(ratios)}"
            f" | {s['tuned_config']} ({s['candidates']} timed"
            f"{', failed: ' + ', '.join(s['failed']) if s['failed'] else ''}) |")


def report(path: Path) -> str:
    """The table of a results file (also written beside it as .md)."""
    head, *rows = (json.loads(line) for line in path.read_text().splitlines())
    lines = [f"# Hopper attention (fa4_sm90), {head['device']}, {head['date']}", "",
             f"`{head['command']}`; torch {head['torch']}, triton {head['triton']}, CUDA "
             f"{head['cuda']}, cuDNN {head['cudnn']}, Python {head['python']}; {head['heads']} "
             f"heads, head_dim {head['head_dim']}, batch x seqlen = {head['tokens']} tokens, "
             f"{head['dtype']}; TFLOP/s = 4 b h s^2 d / time (causal: half); timing: "
             f"{head['protocol']}.", "",
             "| causal | seqlen | default | tuned | cuDNN | FA2 | tuned/cuDNN | tuned/FA2 | "
             "default/cuDNN | tuned config (candidates) |", "|---" * 10 + "|"]
    for causal in (False, True):
        for seqlen in SEQLENS:
            sel = [r for r in rows if r.get("causal") == causal and r.get("seqlen") == seqlen]
            if sel:
                lines.append(table_row(causal, seqlen, sel))
    lines += [f"HANG: {r['hang']}" for r in rows if "hang" in r]
    text = "\n".join(lines) + "\n"
    path.with_suffix(".md").write_text(text)
    print(text)
    return text


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build").add_argument("dest", type=Path)
    r = sub.add_parser("run")
    r.add_argument("src", type=Path)
    r.add_argument("out", type=Path)
    sub.add_parser("report").add_argument("path", type=Path)
    la = sub.add_parser("launch")
    la.add_argument("src", type=Path)
    la.add_argument("label")
    la.add_argument("seqlen", type=int)
    args = ap.parse_args(argv)
    if args.cmd == "build":
        build(args.dest)
    elif args.cmd == "run":
        run(args.src, args.out)
    elif args.cmd == "launch":
        launch(args.src, args.label, args.seqlen)
    else:
        report(args.path)


if __name__ == "__main__":
    main()
