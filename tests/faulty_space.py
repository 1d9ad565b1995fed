"""A search space whose knob picks a kernel that works, deadlocks, or faults: real TIRx kernels
for proving on a GPU that the runner survives a hang and an illegal address."""

from __future__ import annotations

import optuna
from tvm.script import tirx as T

from autotune.spaces.base import Problem, SearchSpace

N = 4096


def _ok():
    @T.prim_func
    def kernel(a: T.Buffer((N,), "float32"), out: T.Buffer((N,), "float32")):
        T.device_entry()
        bx = T.cta_id([N // 128])
        tid = T.thread_id([128])
        out[bx * 128 + tid] = a[bx * 128 + tid] * T.float32(2)

    return kernel


def _hang():
    @T.prim_func
    def kernel(a: T.Buffer((N,), "float32"), out: T.Buffer((N,), "float32")):
        T.device_entry()
        T.cta_id([N // 128])
        tid = T.thread_id([128])
        pool = T.SMEMPool()
        bar = pool.alloc((1,), "uint64", align=8)
        pool.commit()
        if tid == 0:
            T.ptx.mbarrier.init.shared.b64(bar.ptr_to([0]), T.uint32(1))
        T.cuda.cta_sync()
        T.cuda.mbarrier_wait(bar.ptr_to([0]), 0)  # nobody arrives: waits forever
        out[tid] = a[tid]

    return kernel


def _fault():
    @T.prim_func
    def kernel(a: T.Buffer((N,), "float32"), out: T.Buffer((N,), "float32")):
        T.device_entry()
        bx = T.cta_id([N // 128])
        tid = T.thread_id([128])
        out[bx * 128 + tid + 2000000000] = a[tid]  # ~8 GB past the buffer: illegal address

    return kernel


class FaultySpace(SearchSpace):
    name = "faulty"
    kernel = "test"
    arch = "sm_90a"

    def parameters(self, problem):
        return {"behavior": optuna.distributions.CategoricalDistribution(["ok", "hang", "fault"])}

    def violations(self, config, problem):
        return []

    def default_config(self, problem):
        return {"behavior": "ok"}

    def parse_problem(self, text, dtype="float32"):
        return Problem.of(dtype, N=N)

    def build(self, config, problem):
        return {"ok": _ok, "hang": _hang, "fault": _fault}[config["behavior"]]()

    def make_inputs(self, problem, seed, device="cuda"):
        import torch

        g = torch.Generator(device=device).manual_seed(seed)
        return [torch.randn(N, device=device, generator=g), torch.empty(N, device=device)]

    def output_indices(self, problem):
        return [1]

    def reference(self, problem, inputs):
        return [inputs[0] * 2]

    def flops(self, problem):
        return float(N)
