"""A Llama-3-8B-style decoder block whose GEMMs go through the autotune dispatcher, timed
against the same block on torch's defaults (cuBLAS GEMMs), with an output check.

    python examples/llama_block.py                 # decode M=1..64 and prefill M=512..8192
    python examples/llama_block.py --list-shapes   # the GEMM shapes (MxNxK), for prebuild

Decode: M sequences each add one token, attending over a KV cache of --context tokens.
Prefill: one sequence of M tokens, causal. Attention is torch SDPA on both sides (the TIRx
attention template has not landed); RoPE is left out - it changes no GEMM shape.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = 4096, 32, 8, 128, 14336
QKV = (HEADS + 2 * KV_HEADS) * HEAD_DIM  # fused q, k, v projection: 6144
DECODE_M = (1, 2, 4, 8, 16, 32, 64)
PREFILL_M = (512, 1024, 2048, 4096, 8192)
# (N, K) of each projection, as a weight of shape (N, K): qkv, o, gate+up fused, down.
PROJECTIONS = {"qkv": (QKV, HIDDEN), "o": (HIDDEN, HEADS * HEAD_DIM), "gate_up": (2 * FFN, HIDDEN),
               "down": (HIDDEN, FFN)}


def gemm_shapes(ms) -> list[str]:
    return [f"{m}x{n}x{k}" for m in ms for n, k in PROJECTIONS.values()]


class Block:
    def __init__(self, linear, dtype, seed: int = 0):
        import torch

        self.linear = linear  # (x, weight (N, K)) -> x @ weight.T
        gen = torch.Generator(device="cpu").manual_seed(seed)
        self.w = {name: (torch.randn(n, k, generator=gen) / k ** 0.5).to("cuda", dtype)
                  for name, (n, k) in PROJECTIONS.items()}
        self.norm1 = torch.ones(HIDDEN, device="cuda", dtype=dtype)
        self.norm2 = torch.ones(HIDDEN, device="cuda", dtype=dtype)

    @staticmethod
    def rms_norm(x, weight, eps: float = 1e-5):
        import torch

        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + eps)).to(x.dtype) * weight

    def __call__(self, x, k_cache=None, v_cache=None):
        """x: (B, S, HIDDEN). With caches (B, KV_HEADS, C, HEAD_DIM): decode over C + S keys."""
        import torch
        import torch.nn.functional as F

        B, S, _ = x.shape
        qkv = self.linear(self.rms_norm(x, self.norm1), self.w["qkv"])
        q, k, v = qkv.split([HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], dim=-1)
        q = q.view(B, S, HEADS, HEAD_DIM).transpose(1, 2)
        k = k.view(B, S, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = v.view(B, S, KV_HEADS, HEAD_DIM).transpose(1, 2)
        if k_cache is not None:
            k, v = torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=k_cache is None, enable_gqa=True)
        attn = attn.transpose(1, 2).reshape(B, S, HEADS * HEAD_DIM)
        x = x + self.linear(attn, self.w["o"])
        gate, up = self.linear(self.rms_norm(x, self.norm2), self.w["gate_up"]).chunk(2, dim=-1)
        return x + self.linear(F.silu(gate) * up, self.w["down"])


def time_ms(fn, iters: int, warmup: int = 5) -> float:
    import torch

    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def run_case(mode: str, m: int, blocks: dict, args) -> dict:
    import torch

    dtype = getattr(torch, args.dtype)
    gen = torch.Generator(device="cpu").manual_seed(m)
    if mode == "decode":
        x = torch.randn(m, 1, HIDDEN, generator=gen).to("cuda", dtype)
        cache = [torch.randn(m, KV_HEADS, args.context, HEAD_DIM, generator=gen).to("cuda", dtype)
                 for _ in range(2)]
    else:
        x = torch.randn(1, m, HIDDEN, generator=gen).to("cuda", dtype)
        cache = [None, None]
    outputs = {name: block(x, *cache) for name, block in blocks.items()}
    ref, out = outputs["torch"].float(), outputs["autotune"].float()
    rel_error = (torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref)).item()
    iters = args.iters if mode == "decode" else max(5, args.iters // 4)
    times = {name: time_ms(lambda b=block: b(x, *cache), iters) for name, block in blocks.items()}
    return {"mode": mode, "M": m, "torch_ms": times["torch"], "autotune_ms": times["autotune"],
            "speedup": times["torch"] / times["autotune"], "rel_error": rel_error,
            "ok": rel_error <= args.tolerance}


def report(rows: list[dict], context: dict) -> str:
    lines = [f"# Llama-3-8B decoder block: GEMMs through autotune vs torch defaults", ""]
    lines += [f"- {k}: {v}" for k, v in context.items()] + [""]
    lines += ["| mode | M | torch ms | autotune ms | speed-up | rel. error | ok |",
              "|---|---:|---:|---:|---:|---:|---|"]
    lines += [f"| {r['mode']} | {r['M']} | {r['torch_ms']:.4f} | {r['autotune_ms']:.4f} | "
              f"{r['speedup']:.3f} | {r['rel_error']:.2e} | {'yes' if r['ok'] else 'NO'} |"
              for r in rows]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list-shapes", action="store_true", help="print GEMM shapes and exit")
    parser.add_argument("--decode", type=int, nargs="*", default=list(DECODE_M))
    parser.add_argument("--prefill", type=int, nargs="*", default=list(PREFILL_M))
    parser.add_argument("--context", type=int, default=1024, help="decode KV-cache length")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--tolerance", type=float, default=2e-2)
    parser.add_argument("--store", help="config store (default: the one for this GPU)")
    parser.add_argument("--artifacts", help="prebuilt kernels (default ~/.cache/autotune/dispatch)")
    parser.add_argument("--out", help="write <out>.md and <out>.json")
    args = parser.parse_args(argv)
    if args.list_shapes:
        print(" ".join(gemm_shapes([*args.decode, *args.prefill])))
        return 0

    import platform

    import torch
    import torch.nn.functional as F

    import autotune

    op = autotune.load("gemm", store=args.store, artifacts=args.artifacts)
    dtype = getattr(torch, args.dtype)
    blocks = {"torch": Block(F.linear, dtype), "autotune": Block(op, dtype)}
    rows = [run_case("decode", m, blocks, args) for m in args.decode]
    rows += [run_case("prefill", m, blocks, args) for m in args.prefill]
    routes = {}
    for route in op.routes.values():
        routes[route.reason] = routes.get(route.reason, 0) + 1
    context = {"device": torch.cuda.get_device_name(0), "host": platform.node(),
               "torch": torch.__version__, "dtype": args.dtype, "decode context": args.context,
               "config store": op.store_path or "none usable (defaults)",
               "GEMM routes by rule": ", ".join(f"{k} {v}" for k, v in sorted(routes.items()))}
    text = report(rows, context)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(f"{args.out}.md").write_text(text)
        Path(f"{args.out}.json").write_text(json.dumps({"context": context, "rows": rows}, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
