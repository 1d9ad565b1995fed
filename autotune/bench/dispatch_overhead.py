"""Per-call host overhead of the autotune dispatcher over a bare tirx.Kernel launch, and a
CUDA-graph capture check. Goal: <= 5 us over the bare launch.

    python -m autotune.bench.dispatch_overhead [--shape 64x1024x1024] [--out result.json]

Host time per call = wall time of a loop of enqueues / calls (small kernel, loop shorter than
the launch queue: the host never blocks). Each repeat times every variant in a rotated order;
the overhead is the median over repeats of the difference within a repeat, so drift of the
host between variants cancels. The same kernel object serves both sides, so the difference is
the dispatch alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def per_call_samples(variants: dict, calls: int, repeats: int) -> dict[str, list[float]]:
    """Host us per call of each variant, `repeats` samples each, every repeat timing every
    variant in a rotated order (runner.timing.interleaved): host drift (clock, other
    processes) then hits all alike, and a repeat's samples can be compared with each other."""
    import torch

    from ..runner.timing import interleaved

    def per_call(fn):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        us = (time.perf_counter() - t0) / calls * 1e6
        torch.cuda.synchronize()
        return us

    return interleaved({name: lambda f=fn: per_call(f) for name, fn in variants.items()},
                       repeats)


def paired_overhead_us(samples: dict[str, list[float]], variant: str, base: str) -> float:
    """Median over repeats of (variant - base) measured in the same repeat."""
    return statistics.median(v - b for v, b in zip(samples[variant], samples[base]))


def graph_check(op, a, b) -> dict:
    """Capture the dispatcher in a CUDA graph, replay it on new data, compare with torch."""
    import torch

    op(a, b)  # route chosen and kernel loaded outside the capture
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        d = op(a, b)
    torch.cuda.current_stream().wait_stream(stream)
    a.copy_(torch.randn_like(a))
    graph.replay()
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    err = (torch.linalg.vector_norm(d.float() - ref) / torch.linalg.vector_norm(ref)).item()
    return {"captured": True, "rel_error_after_replay": err, "ok": err < 2e-2}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="64x1024x1024", help="MxNxK of the GEMM")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--store")
    parser.add_argument("--artifacts")
    parser.add_argument("--out", help="write the result as JSON here")
    args = parser.parse_args(argv)

    import torch

    from ..dispatch import VENDOR, VENDOR_FASTER, load

    op = load("gemm", store=args.store, artifacts=args.artifacts)
    M, N, K = (int(x) for x in args.shape.split("x"))
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    d = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    route = op.route(a, b)
    if route.reason == VENDOR:
        print(f"no TIRx kernel for {args.shape}: prebuild it (see the report); nothing to compare",
              file=sys.stderr)
        return 1
    if route.reason == VENDOR_FASTER:
        print(f"the vendor op serves {args.shape} ({route.why}): choose a shape a kernel serves",
              file=sys.stderr)
        return 1
    kernel = op.provider.get(route.problem, route.config)
    from ..dispatch.torch_op import register_torch_op

    torch_op = register_torch_op(op)  # torch.ops.autotune.gemm
    stream = torch.cuda.current_stream().cuda_stream
    variants = {
        "bare_kernel_explicit_stream": lambda: kernel(a, b, d, stream=stream, check=False),
        "bare_kernel": lambda: kernel(a, b, d, check=False),
        "dispatch_out": lambda: op(a, b, out=d),
        "dispatch_alloc": lambda: op(a, b),
        "torch_custom_op": lambda: torch_op(a, b),
        "torch_matmul": lambda: torch.matmul(a, b.T),
    }
    for fn in variants.values():  # warm every path (lazy init, allocator)
        fn()
    samples = per_call_samples(variants, args.calls, args.repeats)
    result = {name: statistics.median(xs) for name, xs in samples.items()}
    result["dispatch_overhead_us"] = paired_overhead_us(samples, "dispatch_out", "bare_kernel")
    result["dispatch_alloc_overhead_us"] = paired_overhead_us(samples, "dispatch_alloc",
                                                              "bare_kernel")
    result["goal_met"] = result["dispatch_overhead_us"] <= 5.0
    result["cuda_graph"] = graph_check(op, a, b)
    ref = a.float() @ b.float().T
    result["custom_op_rel_error"] = (torch.linalg.vector_norm(torch_op(a, b).float() - ref)
                                     / torch.linalg.vector_norm(ref)).item()
    result.update(shape=args.shape, route=route.reason, device=torch.cuda.get_device_name(0),
                  torch=torch.__version__)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
