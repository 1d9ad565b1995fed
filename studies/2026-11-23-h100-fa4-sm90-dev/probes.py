"""Development probes of the Hopper attention kernel on a GPU machine (no TVM there).

    python studies/2026-11-23-h100-fa4-sm90-dev/probes.py build DIR          # CPU: traced binaries
    python3 probes.py persist | gqa | bench                             # GPU, prebuilt artifacts
    python3 probes.py hang DIR NAME BATCH SEQLEN [--persistent]          # GPU, traced binary

`persist`/`gqa` launch prebuilt test binaries (tests/fa4_sm90_kernels.py) once each on fresh
inputs, a watchdog reporting HANG after 6 s. `bench` times the two hd128 defaults against cuDNN
and FlashAttention-2. `hang` runs a binary built with build_attention(trace=True) with its trace
buffer in host memory mapped into the device, so that when the launch hangs the host can still
read, per CTA, the wait each role entered last (kernels/fa4/sm90.py: TRACE_WAITS).
"""
import dataclasses
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import fa4_sm90_kernels as K  # noqa: E402
from kernels.fa4._sm90_config import launch_scalars  # noqa: E402

TRACED = ("hd128_bfloat16_full_28x4", "hd128_bfloat16_causal_16x16")


def inputs(p, B, SQ, SK):
    import torch

    dt = torch.bfloat16 if p.dtype == "bfloat16" else torch.float16
    q = torch.randn(B, SQ, p.heads_q, p.head_dim, dtype=dt, device="cuda")
    k = torch.randn(B, SK, p.heads_kv, p.head_dim, dtype=dt, device="cuda")
    v = torch.randn_like(k)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((B, p.heads_q, SQ), float("nan"), device="cuda")
    return q, k, v, o, lse


def probe(name, B, SQ, SK=None, persistent=None, order=None, limit=6.0):
    import torch

    import tirx

    SK = SK or SQ
    art, p, c = K.load(name)
    kern = tirx.Kernel(art)
    c = c if persistent is None else dataclasses.replace(c, persistent=persistent)
    c = c if order is None else dataclasses.replace(c, order=order)
    q, k, v, o, lse = inputs(p, B, SQ, SK)
    torch.cuda.synchronize()
    tag = f"{name} {B}x{SQ}x{SK} persistent={c.persistent} order={c.order}"
    watchdog = threading.Timer(limit, lambda: (print("HANG", tag, flush=True), os._exit(3)))
    watchdog.start()
    t0 = time.time()
    kern(q, k, v, o, lse, *launch_scalars(c, 132))
    torch.cuda.synchronize()
    watchdog.cancel()
    print("ok", tag, f"{(time.time() - t0) * 1e3:.1f} ms nan_o={int(o.isnan().sum())}",
          flush=True)
    return q, k, v, o, lse


def bench():
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench

    import tirx
    from kernels.fa4.problem import flops

    for causal in (False, True):
        name = f"hd128_bfloat16_{'causal' if causal else 'full'}_16x16"
        art, p, c = K.load(name)
        kern = tirx.Kernel(art)
        for S in (4096, 16384):
            B = 16384 // S
            q, k, v, o, lse = inputs(p, B, S, S)
            fl = flops(p, B, S, S)
            fns = {"ours": lambda: kern(q, k, v, o, lse, *launch_scalars(c, 132), check=False)}
            qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
            for lab, be in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                            ("fa2", SDPBackend.FLASH_ATTENTION)):
                def sdpa(be=be):
                    with sdpa_kernel(be):
                        return torch.nn.functional.scaled_dot_product_attention(
                            qt, kt, vt, is_causal=causal)
                fns[lab] = sdpa
            res = {lab: fl / statistics.median(do_bench(fn, warmup=10, rep=30,
                                                        return_mode="all")) / 1e9
                   for lab, fn in fns.items()}
            print(f"BENCH causal={causal} S={S} B={B} "
                  + " ".join(f"{k}={v:.0f}" for k, v in res.items()), flush=True)


def build(dest: Path):
    import tirx
    from kernels.fa4.sm90 import build_attention

    for name in TRACED:
        p, c = K.KERNELS[name]
        tirx.build(build_attention(p, c, trace=True), "sm_90a").save(dest / name, source=False)


def hang(src: Path, name: str, B: int, S: int, persistent: bool, limit: float = 6.0):
    """Launch the traced binary; on a hang, print how many CTAs sit in each combination of
    waits, a few CTAs in full, and exit. The trace lives in pinned host memory (the device
    writes it through unified addressing while the host reads it)."""
    import collections

    import torch

    import tirx
    from kernels.fa4._sm90_config import TRACE_WAITS

    p, c = K.KERNELS[name]
    c = dataclasses.replace(c, persistent=persistent)
    kern = tirx.Kernel(tirx.Artifact.load(src / name))
    q, k, v, o, lse = inputs(p, B, S, S)
    trace = torch.full((8192, 8), -1, dtype=torch.int32).pin_memory()
    torch.cuda.synchronize()
    kern(q, k, v, o, lse, *launch_scalars(c, 132), trace, check=False)
    done = threading.Event()
    threading.Thread(target=lambda: (torch.cuda.synchronize(), done.set()), daemon=True).start()
    if done.wait(limit):
        print("finished", name, B, S, persistent, flush=True)
        return
    rows = trace.numpy().copy()
    waits = lambda x: f"{x >> 4}:{TRACE_WAITS[x & 15]}" if x >= 0 else "-"
    used = [(i, r) for i, r in enumerate(rows) if r[0] >= 0 or r[2] >= 0]
    states = collections.Counter(
        " | ".join(waits(r[s]) if s % 2 else f"t={r[s]}" for s in (1, 3, 5)) for _, r in used)
    print(f"HANG {name} {B}x{S} persistent={persistent}: {len(used)} CTAs traced")
    for state, n in states.most_common(25):
        print(f"  {n:5d} x  producer {state}")
    for i, r in used[:12]:
        print(f"cta {i}: producer t={r[0]} {waits(r[1])} | c0 t={r[2]} {waits(r[3])} | "
              f"c1 t={r[4]} {waits(r[5])} | c2 t={r[6]} {waits(r[7])}", flush=True)
    os._exit(3)


# GPU call 5: which launches hang. (name, batch, seqlen_q, seqlen_k, persistent, order); a
# persistent launch of more tiles than SMs makes each CTA walk several tiles.
CASES = [
    ("hd128_bfloat16_full_28x4", 1, 16384, 16384, False, "head"),
    ("hd128_bfloat16_full_28x4", 1, 16384, 16384, True, "head"),
    ("hd128_bfloat16_full_32x8", 1, 16384, 16384, True, "head"),
    ("hd128_bfloat16_full_16x16", 1, 16384, 16384, True, "head"),
    ("hd128_bfloat16_full_16x16", 4, 4096, 4096, True, "lpt"),
    ("hd128_bfloat16_causal_16x16", 4, 4096, 4096, False, "lpt"),
    ("hd128_bfloat16_causal_16x16", 4, 4096, 4096, False, "head"),
    ("hd128_bfloat16_causal_16x16", 4, 4096, 4096, True, "head"),
    ("hd128_bfloat16_causal_16x16", 4, 4096, 4096, True, "lpt"),
    ("hd128_bfloat16_causal_16x16", 1, 1024, 1024, True, "head"),
    *((f"sweep{i}", 4, 2048, 2048, True, "head") for i in (22, 23, 24, 33, 29, 43, 27)),
]
# GPU call 6: where causal starts to hang (every causal launch of call 5 did).
CAUSAL_CASES = [
    *(("hd128_bfloat16_causal_16x16", 1, s, s, False, "head") for s in (128, 129, 256, 384)),
    ("hd128_bfloat16_causal_16x16", 1, 300, 1000, False, "head"),
    ("hd128_bfloat16_causal_16x16", 1, 1000, 300, False, "head"),
    *((f"sweep{i}", 2, 1000, 1000, False, "head") for i in (43, 17, 9, 2)),
]


def cases(start: int, mark: Path, which: str = "CASES"):
    """Run CASES[start:], each once with a watchdog and a sampled reference check; on a hang
    print it and exit (the caller restarts after the index written to `mark`)."""
    import torch

    from kernels.fa4.reference_torch import attention_reference, check_rows, errors, failures

    todo = globals()[which]
    for i in range(start, len(todo)):
        mark.write_text(str(i))
        name, B, SQ, SK, persistent, order = todo[i]
        q, k, v, o, lse = probe(name, B, SQ, SK, persistent, order)
        _, p, _ = K.load(name)
        rows = check_rows(SQ, "cuda", sample=128)
        ref = attention_reference(q, k, v, p.causal, p.scale, rows)
        print("  check", failures(errors(o, lse, *ref, rows), p.dtype) or "pass", flush=True)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "build":
        build(Path(sys.argv[2]))
    elif what == "hang":
        hang(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
             "--persistent" in sys.argv)
    elif what == "cases":
        cases(int(sys.argv[2]), Path(sys.argv[3]), *sys.argv[4:5])
    elif what == "bench":
        bench()
    elif what == "persist":
        probe("hd128_bfloat16_full_16x16", 4, 4096)
        probe("hd128_bfloat16_full_16x16", 4, 4096, persistent=True)
        probe("hd128_bfloat16_causal_16x16", 4, 4096, persistent=True)
        probe("hd128_bfloat16_full_16x16", 16, 1024, persistent=True)
    elif what == "gqa":
        probe("hd128_bfloat16_full_28x4", 1, 8192)
        probe("hd128_bfloat16_full_28x4", 1, 16384, persistent=True)
        probe("hd128_bfloat16_full_28x4", 1, 16384)
