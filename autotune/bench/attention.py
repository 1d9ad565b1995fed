"""Benchmark of the Hopper attention kernel (kernels/fa4/sm90.py): TFLOP/s of the hand-tuned
default and of the best of a sweep of legal configs, beside cuDNN and FlashAttention-2 (torch
SDPA backends), all measured in one run under the tuner's timing protocol
(runner.protocol.time_on_sets over input_sets). The issue's shapes: head_dim 128, 16 heads,
batch x seqlen = 16k tokens, seqlen 1k/4k/8k/16k, causal and not (causal counts half the
FLOPs), bfloat16; then the Llama-3-8B decoder block's attention calls (LLAMA_SHAPES).

    python -m autotune.bench.attention build DIR          # CPU: compile the candidates
    python -m autotune.bench.attention run DIR OUT        # GPU machine (no TVM needed)
    python -m autotune.bench.attention store OUT/attention_sm90_bench.jsonl   # CPU: the store
    ncu -k regex:attention --launch-skip 1 \
        python -m autotune.bench.attention launch DIR LABEL SHAPE    # profile one candidate

The candidates are the default per causal flag and its neighbours in the legal space (block_n,
ping-pong, the rescale threshold), each binary with every value of the launch-time knobs
(persistent, order), per problem class (heads, causal). Every candidate is validated against
the float32 reference on the benchmark's own inputs (poisoned outputs) before it is timed; one
that fails is reported, not timed. OUT/attention_sm90_bench.jsonl gets a header (device, date,
versions, command, protocol) and one row per measurement as they finish;
OUT/attention_sm90_bench.md the table. `store` turns a results file into the fa4_sm90 config
store of its GPU model (studies/configs/fa4_sm90/): per shape, the fastest candidate, with the
default's and cuDNN's times and every candidate's (the evidence dispatch weighs,
autotune/dispatch/rules.py).
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

from ..ops.attention import ATTENTION, fa4_problem, sdpa
from ..runner.base import PROTOCOL

HEADS, HEAD_DIM, TOKENS, DTYPE = 16, 128, 16384, "bfloat16"
SEQLENS = (1024, 4096, 8192, 16384)
BENCHMARK_SHAPES = tuple(f"{TOKENS // s}x{s}/{HEADS}/{HEAD_DIM}{c}"
                         for c in ("", "/causal") for s in SEQLENS)
# examples/llama_block.py --list-shapes attention: prefill (causal GQA 32:8) and decode steps
# over a 1k cache, run with the query heads packed into rows (ops/attention.py's packs_heads)
LLAMA_SHAPES = (*(f"1x{m}/32:8/128/causal" for m in (512, 1024, 2048, 4096, 8192)),
                *(f"{b}x4x1025/8/128" for b in (1, 8, 32, 64)))
SHAPES = BENCHMARK_SHAPES + LLAMA_SHAPES
BASELINES = ("cudnn", "fa2")
RESULTS = "attention_sm90_bench"
HANG_S = 20.0  # a launch (or a graph replay) that has not finished by then has hung


def problem(causal: bool) -> AttentionProblem:
    """The issue's benchmark class (16 heads, head_dim 128, bfloat16)."""
    return AttentionProblem(head_dim=HEAD_DIM, heads_q=HEADS, heads_kv=HEADS, causal=causal,
                            dtype=DTYPE)


def classes(shapes=SHAPES) -> list[AttentionProblem]:
    """The problem classes (one binary each per config) of `shapes`, in order."""
    return list(dict.fromkeys(fa4_problem(ATTENTION.parse(s, DTYPE)) for s in shapes))


def tag(p: AttentionProblem) -> str:
    """A class's label prefix: causal/full, then the heads where they are not the issue's."""
    heads = "" if (p.heads_q, p.heads_kv) == (HEADS, HEADS) else f"_{p.heads_q}x{p.heads_kv}"
    return f"{'causal' if p.causal else 'full'}{heads}"


def binary_name(c: AttentionSm90Config, default: AttentionSm90Config) -> str:
    if c == default:
        return "default"
    two = f"_c{c.consumers}x{c.ctas_per_sm}" if c.ctas_per_sm > 1 else ""
    q2 = f"_q{c.q_stages}" if c.q_stages > 1 else ""
    return (f"bn{c.block_n}_s{c.stages}_pp{int(c.pingpong)}_ov{int(c.overlap)}"
            f"_th{c.rescale_threshold:g}{two}{q2}")


def binaries(p: AttentionProblem) -> dict[str, AttentionSm90Config]:
    """The default and its legal neighbours, one per binary (launch knobs at the default's):
    the default with a second Q stage (block_n at most 128, so that it fits), and two CTAs per
    SM at block_n 64 (the issue's causal class: 3 stages, and 2 stages with a second Q stage;
    the block's classes: 2 stages). Session 3's wider sweep of block_n, ping-pong and the rescale
    threshold (studies/2026-11-23-h100-fa4-sm90-bench-s3/) is not repeated: none of it won."""
    base = default_config(p)
    issue = (p.heads_q, p.heads_kv) == (HEADS, HEADS)
    variants = [base, dataclasses.replace(base, q_stages=2, block_n=min(base.block_n, 128))]
    # two CTAs per SM, one consumer each: narrow K/V tiles fit half the shared memory
    two = dataclasses.replace(base, consumers=1, ctas_per_sm=2, pingpong=False, consumer_regs=232,
                              block_n=64)
    if not issue:
        variants.append(two)
    elif p.causal:
        variants += [dataclasses.replace(two, stages=3), dataclasses.replace(two, q_stages=2)]
    out, seen = {}, set()
    for c in variants:
        if not violations(c, p) and compile_key(c) not in seen:
            seen.add(compile_key(c))
            out[f"{tag(p)}_{binary_name(c, base)}"] = c
    return out


def candidates(p: AttentionProblem) -> dict[str, tuple[str, AttentionSm90Config]]:
    """label -> (binary, config): every binary with every value of the launch-time knobs."""
    return {f"{name}_{'persistent' if persistent else 'grid'}_{order}":
            (name, dataclasses.replace(c, persistent=persistent, order=order))
            for name, c in binaries(p).items()
            for persistent in (False, True) for order in ORDERS}


def default_label(p: AttentionProblem) -> str:
    d = default_config(p)
    return f"{tag(p)}_default_{'persistent' if d.persistent else 'grid'}_{d.order}"


def _build_one(dest: Path, name: str, p: AttentionProblem, c: AttentionSm90Config) -> str:
    import tirx
    from kernels.fa4.sm90 import build_attention

    art = tirx.build(build_attention(p, c), "sm_90a")
    art.save(dest / name, source=False)
    return f"{name}: {art.resources.registers} regs, {art.resources.spill_bytes} B spilled"


def build(dest: Path, shapes=SHAPES, jobs: int = 1) -> None:
    """Compile every candidate binary of `shapes`' classes not yet in `dest`, in `jobs`
    processes (a binary depends only on its class and config, and `dest` holds one template's
    binaries: start it afresh when the template changes)."""
    import concurrent.futures as cf
    import multiprocessing

    todo = [(dest, name, p, c) for p in classes(shapes) for name, c in binaries(p).items()
            if not (dest / name / "artifact.json").exists()]
    with cf.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for line in pool.map(_build_one, *zip(*todo)) if todo else ():
            print(line, flush=True)


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

    from ..store.compat import current_gpu

    props = torch.cuda.get_device_properties(0)
    gpu = current_gpu()
    return {"kind": "header", "device": props.name, "sms": props.multi_processor_count,
            "driver": gpu.driver if gpu else "",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            # the output folder is the machine's own: recorded as OUT (no machine paths)
            "command": shlex.join(["python", "-m", "autotune.bench.attention",
                                   *sys.argv[1:-1], "OUT"]),
            "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "python": platform.python_version(),
            "shapes": list(SHAPES), "dtype": DTYPE,
            "protocol": f"{PROTOCOL}: autotune.runner.protocol.time_on_sets over input_sets "
                        "(CUDA-graph replays of back-to-back launches over input copies that "
                        "together exceed 2x L2; the mean over a one-second window of replays)"}


def run(src: Path, out: Path, shapes=SHAPES) -> None:
    import torch

    import tirx
    from kernels.fa4.reference_torch import attention_reference, check_rows, errors, failures

    from ..runner.protocol import input_sets, time_on_sets

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{RESULTS}.jsonl"
    path.write_text(json.dumps(header()) + "\n")
    kernels = {}
    for shape in shapes:
        prob = ATTENTION.parse(shape, DTYPE)
        p = fa4_problem(prob)
        b, sq, sk = prob["batch"], prob["seqlen_q"], prob["seqlen_k"]
        sets = input_sets([*(torch.randn(b, s, h, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
                             for s, h in ((sq, p.heads_q), (sk, p.heads_kv), (sk, p.heads_kv))),
                           torch.empty(b, sq, p.heads_q, HEAD_DIM, dtype=torch.bfloat16,
                                       device="cuda"),
                           torch.empty(b, p.heads_q, sq, device="cuda")])
        rows = check_rows(sq, "cuda")
        ref = attention_reference(*sets[0][:3], p.causal, p.scale, rows)
        binds, results = {}, [{"name": "input_sets", "sets": len(sets)}]
        for label, (name, c) in candidates(p).items():
            if name not in kernels:
                kernels[name] = tirx.Kernel(tirx.Artifact.load(src / name))
            kern, scalars = kernels[name], launch_scalars(c, sms)
            q, k, v, o, lse = sets[0]
            o.fill_(float("nan"))
            lse.fill_(float("nan"))
            timer = watchdog(f"{label} {shape}", path)
            kern(q, k, v, o, lse, *scalars)
            torch.cuda.synchronize()
            timer.cancel()
            bad = failures(errors(o, lse, *ref, rows), DTYPE)
            if bad:
                results.append({"name": label, "failed": bad})
            else:
                binds[label] = (lambda s, kern=kern, sc=scalars:
                                lambda: kern(*s, *sc, check=False))
        for label in BASELINES:
            binds[label] = (lambda s, backend=label:
                            lambda: sdpa(*s[:3], p.causal, backend))
        for label, bind in binds.items():
            timer = watchdog(f"timing {label} {shape}", path)
            try:
                t = time_on_sets(bind, sets)
            except RuntimeError as exc:  # e.g. a backend that cannot be captured: say so
                results.append({"name": label, "error": str(exc)[:300]})
                continue
            finally:
                timer.cancel()
            results.append({"name": label, "ms": t.ms, "min_ms": t.min_ms,
                            "tflops": flops(p, b, sq, sk) / t.ms / 1e9})
        with path.open("a") as f:  # a run cut short keeps what it measured
            for r in results:
                f.write(json.dumps({"shape": shape, **r}) + "\n")
        print(table_row(shape, results), flush=True)
        del sets, binds
    report(path)


def launch(src: Path, label: str, shape: str) -> None:
    """Two launches of candidate `label` on `shape` (a warm-up, then the one a profiler should
    catch)."""
    import torch

    import tirx

    prob = ATTENTION.parse(shape, DTYPE)
    p = fa4_problem(prob)
    name, c = candidates(p)[label]
    kern = tirx.Kernel(tirx.Artifact.load(src / name))
    b, sq, sk = prob["batch"], prob["seqlen_q"], prob["seqlen_k"]
    q, o = (torch.randn(b, sq, p.heads_q, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
            for _ in range(2))
    k, v = (torch.randn(b, sk, p.heads_kv, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
            for _ in range(2))
    lse = torch.empty(b, p.heads_q, sq, device="cuda")
    for _ in range(2):
        kern(q, k, v, o, lse, *launch_scalars(c, torch.cuda.get_device_properties(0)
                                              .multi_processor_count))
    torch.cuda.synchronize()


def summary(shape: str, results: list[dict]) -> dict:
    """default, tuned (best measured candidate), cuDNN and FA2 TFLOP/s of one shape."""
    timed = {r["name"]: r["tflops"] for r in results if "tflops" in r}
    ours = {n: t for n, t in timed.items() if n not in BASELINES}
    best = max(ours, key=ours.get, default=None)
    p = fa4_problem(ATTENTION.parse(shape, DTYPE))
    return {"default": timed.get(default_label(p)), "tuned": ours.get(best),
            "tuned_config": best, "candidates": len(ours),
            "failed": [r["name"] for r in results if "failed" in r or "error" in r],
            "cudnn": timed.get("cudnn"), "fa2": timed.get("fa2")}


def _f(x, spec=None):
    """A number for the table: TFLOP/s whole (three digits for a decode step's few)."""
    if x is None:
        return "-"
    return format(x, spec or (".0f" if x >= 100 else ".3g"))


def _ratio(a, b):
    return None if a is None or not b else a / b


def table_row(shape: str, results: list[dict]) -> str:
    s = summary(shape, results)
    ratios = [_f(_ratio(s[a], s[b]), ".2f")
              for a, b in (("tuned", "cudnn"), ("tuned", "fa2"), ("default", "cudnn"))]
    return (f"| {shape} | {_f(s['default'])} | {_f(s['tuned'])} | "
            f"{_f(s['cudnn'])} | {_f(s['fa2'])} | {' | '.join(ratios)}"
            f" | {s['tuned_config']} ({s['candidates']} timed"
            f"{', failed: ' + ', '.join(s['failed']) if s['failed'] else ''}) |")


def _read(path: Path) -> tuple[dict, dict[str, list[dict]]]:
    """A results file: its header and its rows by shape, in the order they were measured."""
    head, *rows = (json.loads(line) for line in path.read_text().splitlines())
    by_shape: dict[str, list[dict]] = {}
    for r in rows:
        if "shape" in r:
            by_shape.setdefault(r["shape"], []).append(r)
    return head, by_shape


def report(path: Path) -> str:
    """The table of a results file (also written beside it as .md)."""
    head, by_shape = _read(path)
    lines = [f"# Hopper attention (fa4_sm90), {head['device']}, {head['date']}", "",
             f"`{head['command']}`; torch {head['torch']}, triton {head['triton']}, CUDA "
             f"{head['cuda']}, cuDNN {head['cudnn']}, Python {head['python']}; shape = "
             "BATCHxSEQ[xSEQ_K]/HEADS[:KV_HEADS]/HEAD_DIM[/causal], "
             f"{head['dtype']}; TFLOP/s = 4 b h sq sk d / time (causal: half); timing: "
             f"{head['protocol']}.", "",
             "| shape | default | tuned | cuDNN | FA2 | tuned/cuDNN | tuned/FA2 | "
             "default/cuDNN | tuned config (candidates) |", "|---" * 9 + "|"]
    lines += [table_row(shape, rows) for shape, rows in by_shape.items()]
    lines += [f"HANG: {r['hang']}" for r in
              (json.loads(line) for line in path.read_text().splitlines()) if "hang" in r]
    text = "\n".join(lines) + "\n"
    path.with_suffix(".md").write_text(text)
    print(text)
    return text


def store(path: Path, root: Path):
    """The fa4_sm90 config store of the results file's GPU model, under `root`: per shape the
    fastest candidate that passed its check, with the default's and cuDNN's times and every
    candidate's (ms, medians). Its template hash is this checkout's: write it from the binaries
    of this template."""
    from ..spaces.fa4_sm90 import Fa4Sm90Space
    from ..store.compat import Gpu, expected_header, store_path
    from ..store.format import ConfigStore, Entry, config_id

    head, by_shape = _read(path)
    space = Fa4Sm90Space()
    try:
        from importlib.metadata import version
        tvm = version("apache-tvm")
    except Exception:  # the store still names its template; the TVM version is provenance
        tvm = ""
    gpu = Gpu(arch=space.arch, device=head["device"], driver=head.get("driver", ""),
              cuda=head["cuda"])
    out = ConfigStore(dataclasses.replace(expected_header(space, gpu, tvm),
                                          timer=head["protocol"].split(":")[0]))
    for shape, rows in by_shape.items():
        prob = ATTENTION.parse(shape, DTYPE)
        cands = candidates(fa4_problem(prob))
        ms = {r["name"]: r["ms"] for r in rows if "ms" in r}
        ours = {n: t for n, t in ms.items() if n in cands}
        if not ours:
            continue
        best = min(ours, key=ours.get)
        out.add(Entry(problem=prob.key, config=cands[best][1].as_dict(), time_ms=ours[best],
                      default_ms=ours.get(default_label(fa4_problem(prob))),
                      vendor_ms=ms.get("cudnn"),
                      source=f"autotune.bench.attention {head['date']}: {best}",
                      measured={config_id(cands[n][1].as_dict()): t for n, t in ours.items()}))
    dest = out.write(store_path(root, space.name, head["device"]))
    print(f"{dest}: {len(out.entries)} entries")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    bu = sub.add_parser("build")
    bu.add_argument("dest", type=Path)
    bu.add_argument("--jobs", type=int, default=1, help="compile processes")
    r = sub.add_parser("run")
    r.add_argument("src", type=Path)
    r.add_argument("out", type=Path)
    sub.add_parser("report").add_argument("path", type=Path)
    st = sub.add_parser("store")
    st.add_argument("path", type=Path)
    st.add_argument("--root", type=Path, default=None, help="stores' root (default: "
                    "$AUTOTUNE_STORES or studies/configs)")
    la = sub.add_parser("launch")
    la.add_argument("src", type=Path)
    la.add_argument("label")
    la.add_argument("shape")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        build(args.dest, jobs=args.jobs)
    elif args.cmd == "run":
        run(args.src, args.out)
    elif args.cmd == "launch":
        launch(args.src, args.label, args.shape)
    elif args.cmd == "store":
        from ..locations import store_root
        store(args.path, args.root or store_root())
    else:
        report(args.path)


if __name__ == "__main__":
    main()
