"""A Llama-3-8B-style decoder block whose attention and GEMMs all go through autotune's dispatch
(the torch custom ops torch.ops.autotune.attention and torch.ops.autotune.gemm), timed against
the same block on torch's own ops (cuDNN SDPA where it takes the call, cuBLAS GEMMs), both
captured in CUDA graphs under the tuner's timing protocol, with an output check.

    python examples/llama_block.py                 # decode M=1..64 and prefill M=512..8192
    python examples/llama_block.py --list-shapes gemm   # shapes for `python -m autotune.dispatch
    python examples/llama_block.py --list-shapes attention   # prebuild` (GEMM, attention)

Decode: M sequences each add one token, attending over a KV cache of --context tokens. The cache
has a slot for the new token, written in place as serving engines do (a torch.cat that copies
the whole cache every step was ~70% of both blocks' decode time, burying the kernels).
Prefill: one sequence of M tokens, causal. Each block keeps its KV cache in its attention's
layout: torch's (batch, heads, tokens, head_dim) for SDPA, ours (batch, tokens, heads,
head_dim) as FlashAttention's. RoPE is left out: it changes no kernel's shape.
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
# torch's block: cuDNN first, then torch's own order (a backend that refuses a call is skipped)
TORCH_SDPA_ORDER = ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")


def gemm_shapes(ms) -> list[str]:
    return [f"{m}x{n}x{k}" for m in ms for n, k in PROJECTIONS.values()]


def attention_shapes(decode, prefill, context: int, dtype: str = "bfloat16") -> list[str]:
    """The problems the block's attention calls run, in ops/attention.py's syntax, as dispatch
    derives them from the calls (a decode step of GQA runs with its heads packed)."""
    import torch

    from autotune.ops.attention import ATTENTION

    def problem(b, sq, sk, causal):
        q = torch.empty(b, sq, HEADS, HEAD_DIM, dtype=getattr(torch, dtype), device="meta")
        k = torch.empty(b, sk, KV_HEADS, HEAD_DIM, dtype=q.dtype, device="meta")
        return ATTENTION.shape(ATTENTION.call_problem((q, k, k, causal)))

    return ([problem(m, 1, context + 1, False) for m in decode]
            + [problem(1, m, m, True) for m in prefill])


def sdpa_backend_used(q, k, v, causal: bool) -> str:
    """The first backend of TORCH_SDPA_ORDER that takes this call: the one torch's block runs."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    for name in TORCH_SDPA_ORDER:
        try:
            with sdpa_kernel(getattr(SDPBackend, name)):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
            return name
        except RuntimeError:
            continue
    raise RuntimeError("no SDPA backend takes the call")


def torch_attention(q, k, v, causal: bool):
    """q (B, HEADS, S, D), k and v (B, KV_HEADS, T, D): SDPA, cuDNN first."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([getattr(SDPBackend, n) for n in TORCH_SDPA_ORDER], set_priority=True):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)


class Block:
    def __init__(self, linear, attention, dtype, seed: int = 0):
        """linear(x, weight (N, K)) = x @ weight.T. attention: None for torch's SDPA on
        (batch, heads, tokens, head_dim) tensors, else attention(q, k, v, causal) on
        FlashAttention's (batch, tokens, heads, head_dim)."""
        import torch

        self.linear, self.attention = linear, attention
        gen = torch.Generator(device="cpu").manual_seed(seed)
        self.w = {name: (torch.randn(n, k, generator=gen) / k ** 0.5).to("cuda", dtype)
                  for name, (n, k) in PROJECTIONS.items()}
        self.norm1 = torch.ones(HIDDEN, device="cuda", dtype=dtype)
        self.norm2 = torch.ones(HIDDEN, device="cuda", dtype=dtype)

    @property
    def cache_dim(self) -> int:
        """The tokens' dimension of this block's KV cache."""
        return 2 if self.attention is None else 1

    @staticmethod
    def rms_norm(x, weight, eps: float = 1e-5):
        import torch

        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + eps)).to(x.dtype) * weight

    def __call__(self, x, k_cache=None, v_cache=None):
        """x: (B, S, HIDDEN). With caches: decode; the caches' last S token slots take this
        call's keys and values (written in place), and attention runs over the whole caches."""
        import torch
        import torch.nn.functional as F

        B, S, _ = x.shape
        qkv = self.linear(self.rms_norm(x, self.norm1), self.w["qkv"])
        q, k, v = qkv.split([HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], dim=-1)
        q = q.view(B, S, HEADS, HEAD_DIM)
        k, v = k.view(B, S, KV_HEADS, HEAD_DIM), v.view(B, S, KV_HEADS, HEAD_DIM)
        if self.attention is None:
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if k_cache is not None:
            tokens = k_cache.shape[self.cache_dim]
            k_cache.narrow(self.cache_dim, tokens - S, S).copy_(k)
            v_cache.narrow(self.cache_dim, tokens - S, S).copy_(v)
            k, v = k_cache, v_cache
        causal = k_cache is None
        if self.attention is None:
            attn = torch_attention(q, k, v, causal).transpose(1, 2)
        else:
            attn = self.attention(q, k, v, causal)
        attn = attn.reshape(B, S, HEADS * HEAD_DIM)
        x = x + self.linear(attn, self.w["o"])
        gate, up = self.linear(self.rms_norm(x, self.norm2), self.w["gate_up"]).chunk(2, dim=-1)
        return x + self.linear(F.silu(gate) * up, self.w["down"])


def time_blocks(calls: dict, rounds: int) -> dict[str, float]:
    """Median ms of each block call as a forward pass runs it (the tuner's protocol: captured in
    a CUDA graph, runner/protocol.py), rounds interleaved in rotated order. One input set: a
    block's 436 MB of weights stream from device memory on every call."""
    from autotune.runner.protocol import time_in_graph
    from autotune.runner.timing import interleaved

    per_round = interleaved({name: lambda c=call: time_in_graph(lambda i: c(), 1).ms
                             for name, call in calls.items()}, rounds)
    return {name: statistics.median(times) for name, times in per_round.items()}


def case_inputs(mode: str, m: int, args):
    """x, each block's KV caches, and a probe call for sdpa_backend_used."""
    import torch

    dtype = getattr(torch, args.dtype)
    gen = torch.Generator(device="cpu").manual_seed(m)
    if mode == "decode":
        x = torch.randn(m, 1, HIDDEN, generator=gen).to("cuda", dtype)
        # FlashAttention's layout, with a slot for the new token; torch's block gets a transposed copy
        cache = [torch.randn(m, args.context + 1, KV_HEADS, HEAD_DIM, generator=gen).to("cuda", dtype)
                 for _ in range(2)]
        caches = {"torch": [c.transpose(1, 2).contiguous() for c in cache], "autotune": cache}
        probe = (torch.empty(m, HEADS, 1, HEAD_DIM, device="cuda", dtype=dtype),
                 caches["torch"][0], caches["torch"][1], False)
    else:
        x = torch.randn(1, m, HIDDEN, generator=gen).to("cuda", dtype)
        caches = {"torch": [None, None], "autotune": [None, None]}
        probe = (torch.empty(1, HEADS, m, HEAD_DIM, device="cuda", dtype=dtype),
                 *(torch.empty(1, KV_HEADS, m, HEAD_DIM, device="cuda", dtype=dtype),) * 2, True)
    return x, caches, probe


def run_case(mode: str, m: int, blocks: dict, args) -> dict:
    import torch

    x, caches, probe = case_inputs(mode, m, args)
    outputs = {name: block(x, *caches[name]) for name, block in blocks.items()}
    ref, out = outputs["torch"].float(), outputs["autotune"].float()
    rel_error = (torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref)).item()
    times = time_blocks({name: lambda b=block, c=caches[name]: b(x, *c)
                         for name, block in blocks.items()}, args.rounds)
    return {"mode": mode, "M": m, "torch_ms": times["torch"], "autotune_ms": times["autotune"],
            "speedup": times["torch"] / times["autotune"], "rel_error": rel_error,
            "ok": rel_error <= args.tolerance, "torch_sdpa": sdpa_backend_used(*probe)}


def profile_case(mode: str, m: int, blocks: dict, args) -> dict:
    """Each block's CUDA graph, kernel by kernel (autotune/bench/graph_profile.py)."""
    from autotune.bench.graph_profile import profile_graphs

    x, caches, _ = case_inputs(mode, m, args)
    return profile_graphs({name: lambda b=block, c=caches[name]: b(x, *c)
                           for name, block in blocks.items()}, rounds=args.rounds)


def profile_report(profiles: dict, routes: dict) -> str:
    """Markdown: per case, the blocks' time by kernel group side by side, then every kernel of
    each block in order; the routes dispatch took."""
    from autotune.bench.graph_profile import group_table, kernel_table

    lines = ["# The decoder block's CUDA graphs, kernel by kernel", "",
             "torch.profiler (CUDA activities) over interleaved rounds of 10 replays per block, "
             "each after the protocol's warm-up; per kernel the median over the replays, us", ""]
    for (mode, m), by_block in profiles.items():
        lines += [f"## {mode} M={m}", "", group_table(by_block)]
        for name, profile in by_block.items():
            lines += [f"### {name}", "", kernel_table(profile)]
    lines += ["## Routes", ""] + [f"- {op} {key}: {why}" for op, per in routes.items()
                                  for key, why in per.items()]
    return "\n".join(lines) + "\n"


def report(rows: list[dict], context: dict) -> str:
    lines = ["# Llama-3-8B decoder block: attention and GEMMs through autotune vs torch", ""]
    lines += [f"- {k}: {v}" for k, v in context.items()] + [""]
    lines += ["| mode | M | torch ms | autotune ms | speed-up | rel. error | ok | torch SDPA |",
              "|---|---:|---:|---:|---:|---:|---|---|"]
    lines += [f"| {r['mode']} | {r['M']} | {r['torch_ms']:.4f} | {r['autotune_ms']:.4f} | "
              f"{r['speedup']:.3f} | {r['rel_error']:.2e} | {'yes' if r['ok'] else 'NO'} | "
              f"{r['torch_sdpa']} |" for r in rows]
    return "\n".join(lines) + "\n"


def routes_by_rule(op) -> str:
    counts = {}
    for route in op.routes.values():
        counts[route.reason] = counts.get(route.reason, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list-shapes", choices=("gemm", "attention"),
                        help="print the GEMM (MxNxK) or attention shapes and exit")
    parser.add_argument("--decode", type=int, nargs="*", default=list(DECODE_M))
    parser.add_argument("--prefill", type=int, nargs="*", default=list(PREFILL_M))
    parser.add_argument("--context", type=int, default=1024, help="decode KV-cache length")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds")
    parser.add_argument("--tolerance", type=float, default=2e-2)
    parser.add_argument("--store", help="GEMM config store (default: the one for this GPU)")
    parser.add_argument("--attention-store", help="attention config store (default: this GPU's)")
    parser.add_argument("--artifacts", help="prebuilt kernels (default ~/.cache/autotune/dispatch)")
    parser.add_argument("--first-use", type=int, metavar="N",
                        help="GEMM shapes the store lacks are tuned on their first call, N "
                             "configs and cuBLAS timed (default $AUTOTUNE_FIRST_USE, else off)")
    parser.add_argument("--out", help="write <out>.md and <out>.json")
    parser.add_argument("--profile", action="store_true",
                        help="also profile each case's two graphs kernel by kernel "
                             "(<out>_profile.md and .json)")
    args = parser.parse_args(argv)
    if args.list_shapes == "gemm":
        print(" ".join(gemm_shapes([*args.decode, *args.prefill])))
        return 0
    if args.list_shapes == "attention":
        print(" ".join(attention_shapes(args.decode, args.prefill, args.context, args.dtype)))
        return 0

    import platform

    import torch
    import torch.nn.functional as F

    import autotune
    from autotune.dispatch.torch_op import register_torch_op

    gemm = autotune.load("gemm", store=args.store, artifacts=args.artifacts,
                         first_use=args.first_use)
    attention = autotune.load("attention", store=args.attention_store, artifacts=args.artifacts)
    register_torch_op(gemm)
    register_torch_op(attention)
    dtype = getattr(torch, args.dtype)
    blocks = {"torch": Block(F.linear, None, dtype),
              "autotune": Block(torch.ops.autotune.gemm, torch.ops.autotune.attention, dtype)}
    cases = [("decode", m) for m in args.decode] + [("prefill", m) for m in args.prefill]
    rows = [run_case(mode, m, blocks, args) for mode, m in cases]
    context = {"device": torch.cuda.get_device_name(0), "host": platform.node(),
               "torch": torch.__version__, "dtype": args.dtype, "decode context": args.context,
               "timing": f"CUDA graph per block call (autotune/runner/protocol.py time_in_graph), "
                         f"median of {args.rounds} interleaved rounds",
               "command": " ".join(["python", "examples/llama_block.py", *sys.argv[1:]]),
               "GEMM store": gemm.store_path or "none usable (defaults)",
               "attention store": attention.store_path or "none usable (defaults)",
               "GEMM first use": (f"{gemm.first_use.count} configs and cuBLAS timed on a "
                                  "shape's first call" if gemm.first_use else "off"),
               "GEMM routes by rule": routes_by_rule(gemm),
               "attention routes by rule": routes_by_rule(attention)}
    text = report(rows, context)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(f"{args.out}.md").write_text(text)
        Path(f"{args.out}.json").write_text(json.dumps({"context": context, "rows": rows}, indent=1))
    if args.profile:
        from autotune.bench.graph_profile import as_json

        profiles = {case: profile_case(*case, blocks, args) for case in cases}
        routes = {name: {route.problem.key: route.reason for route in op.routes.values()}
                  for name, op in (("gemm", gemm), ("attention", attention))}
        text = profile_report(profiles, routes)
        if not args.out:
            print(text)
        else:
            Path(f"{args.out}_profile.md").write_text(text)
            Path(f"{args.out}_profile.json").write_text(json.dumps(
                {"context": context, "routes": routes,
                 "profiles": [{"mode": mode, "M": m, **{n: as_json(p) for n, p in by.items()}}
                              for (mode, m), by in profiles.items()]}, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
