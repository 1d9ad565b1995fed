"""Development benchmark of the Hopper attention kernel: TFLOP/s of the hand-tuned defaults and
of candidate configs beside cuDNN and FlashAttention-2 (torch SDPA backends), measured in the
same run. head_dim 128, 16 heads, batch x seqlen = 16k tokens, seqlen 1k/4k/8k/16k, causal and
not (causal counts half the FLOPs). bfloat16.

    python scripts/bench_fa4_sm90.py build .gpu/fa4                # CPU: compile the candidates
    python scripts/bench_fa4_sm90.py run .gpu/fa4 OUT [--rounds R]   # GPU machine, no TVM
    python scripts/bench_fa4_sm90.py report OUT/fa4_sm90_bench.jsonl
    ncu -k regex:attention ... python scripts/bench_fa4_sm90.py launch .gpu/fa4 NAME SEQLEN

Each candidate binary runs with both values of its launch-time knob `persistent` (same binary).
Every candidate is validated against a float32 reference on the benchmark's inputs (poisoned
outputs) before it is timed. Timing: triton's do_bench median (it flushes L2 before each launch:
the tuner's "cold" timer), candidates and baselines in interleaved rounds of rotated order; each
figure is the median over the rounds. Results: OUT/fa4_sm90_bench.jsonl (a header with device,
date, versions and command, then one row per measurement) and the table in OUT/fa4_sm90_bench.md.
The package command of phase 2 (autotune bench) replaces this script.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import platform
import shlex
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernels.fa4._sm90_config import AttentionSm90Config, default_config  # noqa: E402
from kernels.fa4.problem import AttentionProblem, flops  # noqa: E402

HEADS, HEAD_DIM, TOKENS = 16, 128, 16384
SEQLENS = (1024, 4096, 8192, 16384)
DTYPE = "bfloat16"


def candidates() -> dict[str, tuple[AttentionProblem, AttentionSm90Config]]:
    """The defaults and their neighbours, per causal flag."""
    out = {}
    for causal in (False, True):
        p = AttentionProblem(head_dim=HEAD_DIM, heads_q=HEADS, heads_kv=HEADS, causal=causal,
                             dtype=DTYPE)
        base = default_config(p)
        tag = "causal" if causal else "full"
        variants = {"default": base}
        for bn in (112, 128, 144, 160, 176, 192):
            variants[f"bn{bn}"] = dataclasses.replace(base, block_n=bn)
        variants["no_overlap"] = dataclasses.replace(base, overlap=False)
        variants["no_pingpong"] = dataclasses.replace(base, pingpong=False)
        variants["rescale_always"] = dataclasses.replace(base, rescale_threshold=0.0)
        variants["stages3"] = dataclasses.replace(base, block_n=128, stages=3)
        seen = []
        for name, c in variants.items():
            if c not in seen:
                seen.append(c)
                out[f"{tag}_{name}"] = (p, c)
    return out


def build(dest: Path) -> None:
    import tirx
    from kernels.fa4._sm90_config import violations
    from kernels.fa4.sm90 import build_attention

    for name, (p, c) in candidates().items():
        if violations(c, p):
            print(f"{name}: illegal, skipped ({violations(c, p)[0]})")
            continue
        art = tirx.build(build_attention(p, c), "sm_90a")
        art.save(dest / name, source=False)
        print(f"{name}: {art.resources.registers} regs, {art.resources.spill_bytes} B spilled")


def run(src: Path, out: Path, rounds: int, rep_ms: int) -> None:
    import torch
    import triton
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench

    import tirx
    from kernels.fa4.reference_torch import attention_reference, check_rows, errors, failures
    from kernels.fa4._sm90_config import launch_scalars

    props = torch.cuda.get_device_properties(0)
    header = {"kind": "header", "device": props.name, "sms": props.multi_processor_count,
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "command": shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]),
              "torch": torch.__version__, "triton": triton.__version__,
              "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
              "python": platform.python_version(), "heads": HEADS, "head_dim": HEAD_DIM,
              "tokens": TOKENS, "dtype": DTYPE, "rounds": rounds,
              "timer": f"triton do_bench median over {rep_ms} ms (L2 flushed per launch), "
                       "median over rounds"}
    out.mkdir(parents=True, exist_ok=True)
    path = out / "fa4_sm90_bench.jsonl"
    path.write_text(json.dumps(header) + "\n")
    kernels = {n: (tirx.Kernel(tirx.Artifact.load(src / n)), p, c)
               for n, (p, c) in candidates().items() if (src / n / "artifact.json").exists()}
    for causal in (False, True):
        for seqlen in SEQLENS:
            batch = TOKENS // seqlen
            problem = AttentionProblem(head_dim=HEAD_DIM, heads_q=HEADS, heads_kv=HEADS,
                                       causal=causal, dtype=DTYPE)
            fl = flops(problem, batch, seqlen, seqlen)
            q, k, v = (torch.randn(batch, seqlen, HEADS, HEAD_DIM, dtype=torch.bfloat16,
                                   device="cuda") for _ in range(3))
            rows = check_rows(seqlen, "cuda")
            ref_o, ref_lse = attention_reference(q, k, v, causal, problem.scale, rows)
            o = torch.empty_like(q)
            lse = torch.empty(batch, HEADS, seqlen, dtype=torch.float32, device="cuda")
            fns, bad = {}, {}
            print(f"causal={causal} seqlen={seqlen}:", end=" ", flush=True)
            for name, (kern, p, c) in kernels.items():
                if p.causal != causal:
                    continue
                for persistent in (False, True):
                    scalars = launch_scalars(dataclasses.replace(c, persistent=persistent),
                                             props.multi_processor_count)
                    o.fill_(float("nan"))
                    lse.fill_(float("nan"))
                    kern(q, k, v, o, lse, *scalars)
                    torch.cuda.synchronize()
                    fail = failures(errors(o, lse, ref_o, ref_lse, rows), DTYPE)
                    label = f"{name}{'_persistent' if persistent else ''}"
                    if fail:
                        bad[label] = fail
                        continue
                    fns[label] = (lambda kern=kern, s=scalars: kern(q, k, v, o, lse, *s,
                                                                    check=False))
            qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
            for label, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                                   ("fa2", SDPBackend.FLASH_ATTENTION)):
                def sdpa(backend=backend):
                    with sdpa_kernel(backend):
                        return torch.nn.functional.scaled_dot_product_attention(
                            qt, kt, vt, is_causal=causal)
                fns[label] = sdpa
            times = {label: [] for label in fns}
            labels = list(fns)
            for r in range(rounds):
                for label in labels[r % len(labels):] + labels[:r % len(labels)]:
                    times[label].append(statistics.median(
                        do_bench(fns[label], warmup=20, rep=rep_ms, return_mode="all")))
            done = [{"causal": causal, "seqlen": seqlen, "batch": batch, "name": label,
                     "ms": statistics.median(ts), "tflops": fl / statistics.median(ts) / 1e9,
                     "rounds_ms": ts} for label, ts in times.items()]
            done += [{"causal": causal, "seqlen": seqlen, "batch": batch, "name": label,
                      "failed": fail} for label, fail in bad.items()]
            with path.open("a") as f:  # a run cut short keeps what it measured
                f.writelines(json.dumps(r) + "\n" for r in done)
            print(" ".join(f"{r['name']}={r['tflops']:.0f}" for r in done if "tflops" in r),
                  f"failed={sorted(bad)}", flush=True)
    report(path)


def launch(src: Path, name: str, seqlen: int, persistent: bool) -> None:
    """One launch of candidate `name` on the benchmark's inputs at `seqlen` (after one warm-up
    launch), for a profiler to catch."""
    import torch

    import tirx
    from kernels.fa4._sm90_config import launch_scalars

    problem, c = candidates()[name]
    kern = tirx.Kernel(tirx.Artifact.load(src / name))
    batch = TOKENS // seqlen
    q, k, v = (torch.randn(batch, seqlen, HEADS, HEAD_DIM, dtype=torch.bfloat16, device="cuda")
               for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(batch, HEADS, seqlen, dtype=torch.float32, device="cuda")
    scalars = launch_scalars(dataclasses.replace(c, persistent=persistent),
                             torch.cuda.get_device_properties(0).multi_processor_count)
    for _ in range(2):
        kern(q, k, v, o, lse, *scalars)
    torch.cuda.synchronize()


def report(path: Path) -> None:
    header, *rows = (json.loads(line) for line in path.read_text().splitlines())
    lines = [f"# Hopper attention, {header['device']}, {header['date']}",
             f"`{header['command']}`; torch {header['torch']}, triton {header['triton']}, CUDA "
             f"{header['cuda']}, cuDNN {header['cudnn']}; {header['heads']} heads, head_dim "
             f"{header['head_dim']}, {header['tokens']} tokens, {header['dtype']}; "
             f"{header['timer']}", "",
             "| causal | seqlen | ours: default | ours: best (config) | cuDNN | FA2 | "
             "default/cuDNN | best/cuDNN | best/FA2 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for causal in (False, True):
        for seqlen in SEQLENS:
            sel = {r["name"]: r for r in rows if r["causal"] == causal and r["seqlen"] == seqlen
                   and "tflops" in r}
            if not sel:
                continue
            ours = {n: r for n, r in sel.items() if n not in ("cudnn", "fa2")}
            tag = "causal" if causal else "full"
            default = max((r["tflops"] for n, r in ours.items()
                           if n.startswith(f"{tag}_default")), default=float("nan"))
            best_name, best = max(((n, r["tflops"]) for n, r in ours.items()),
                                  key=lambda x: x[1], default=("-", float("nan")))
            cudnn, fa2 = sel["cudnn"]["tflops"], sel["fa2"]["tflops"]
            lines.append(f"| {causal} | {seqlen} | {default:.0f} | {best:.0f} ({best_name}) | "
                         f"{cudnn:.0f} | {fa2:.0f} | {default / cudnn:.2f} | {best / cudnn:.2f} "
                         f"| {best / fa2:.2f} |")
    failed = [r for r in rows if "failed" in r]
    if failed:
        lines += ["", "Failed validation (not timed):"] + [
            f"- {r['name']} causal={r['causal']} seqlen={r['seqlen']}: {r['failed']}"
            for r in failed]
    text = "\n".join(lines) + "\n"
    path.with_suffix(".md").write_text(text)
    print(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dest", type=Path)
    r = sub.add_parser("run")
    r.add_argument("src", type=Path)
    r.add_argument("out", type=Path)
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--rep-ms", type=int, default=100, help="do_bench's measuring time")
    rep = sub.add_parser("report")
    rep.add_argument("path", type=Path)
    la = sub.add_parser("launch")
    la.add_argument("src", type=Path)
    la.add_argument("name")
    la.add_argument("seqlen", type=int)
    la.add_argument("--persistent", action="store_true")
    args = ap.parse_args()
    if args.cmd == "build":
        build(args.dest)
    elif args.cmd == "run":
        run(args.src, args.out, args.rounds, args.rep_ms)
    elif args.cmd == "launch":
        launch(args.src, args.name, args.seqlen, args.persistent)
    else:
        report(args.path)


if __name__ == "__main__":
    main()
