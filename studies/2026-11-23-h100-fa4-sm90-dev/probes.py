"""Hang probes of the Hopper attention kernel on a GPU machine (no TVM there), from the
prebuilt test binaries (tests/fa4_sm90_kernels.py):

    echo -1 > MARK; i=0; while [ $i -lt N ]; do
        python3 probes.py cases $i MARK [CASES|CAUSAL_CASES]; i=$(( $(cat MARK) + 1 )); done

Each case launches once on fresh inputs under a 6 s watchdog (HANG: the process ends, the loop
starts the next case) and is then checked against the float32 reference on sampled rows.
The traced binaries of GPU call 6 (build_attention(trace=True): per CTA, the wait each role
entered last, written to pinned host memory) were built from commit bbfc287's kernel and
probes.py (`build`, `hang`); the trace build was removed once it had found the hang.
`sweepNN` names a config of tests/fa4_sm90_kernels.py's seeded sample as it was then (48 long;
now 24: the later names are gone).
"""
import dataclasses
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import fa4_sm90_kernels as K  # noqa: E402
from kernels.fa4._sm90_config import launch_scalars  # noqa: E402


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
    *((f"sweep{i:02d}", 2, 1000, 1000, False, "head") for i in (43, 17, 9, 2)),
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
    cases(int(sys.argv[2]), Path(sys.argv[3]), *sys.argv[4:5])
