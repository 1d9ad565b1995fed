"""Small TIRx kernels that exercise the compile/launch layer (TMA, clusters, errors).

GPU machines have no TVM: `python tests/tirx_kernels.py OUT_DIR` compiles these here into
artifacts that travel there; `artifact(name)` loads them (or builds them where TVM exists).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import tvm
from tvm.backend.cuda.tile_primitive.tma_utils import SwizzleMode, mma_shared_layout
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx

PREBUILT = Path(os.environ.get("AUTOTUNE_PREBUILT", Path(__file__).resolve().parents[1] / ".prebuilt"))


def tma_scale(M: int, N: int, BM: int = 64, BN: int = 64, smem_pad: int = 0):
    """D = 2 * A, A read tile by tile through TMA into swizzled shared memory."""
    layout = mma_shared_layout(tvm.DataType("float16"), SwizzleMode.SWIZZLE_128B_ATOM, (BM, BN))

    @T.prim_func
    def kernel(A: T.Buffer((M, N), "float16"), D: T.Buffer((M, N), "float16")):
        T.device_entry()
        bx, by = T.cta_id([M // BM, N // BN])
        warp_id = T.warp_id([4])
        lane_id = T.lane_id([32])
        pool = T.SMEMPool()
        bar = pool.alloc((1,), "uint64", align=8)
        pool.move_base_to(1024 + smem_pad)
        tile = pool.alloc((BM, BN), "float16", layout=layout)
        pool.commit()
        tid = T.meta_var(warp_id * 32 + lane_id)
        if tid == 0:
            T.ptx.mbarrier.init.shared.b64(bar.ptr_to([0]), T.uint32(1))
        T.ptx.fence.proxy.async_.shared__cta()
        T.cuda.cta_sync()
        if tid == 0:
            Tx.copy_async(tile[:, :], A[bx * BM:(bx + 1) * BM, by * BN:(by + 1) * BN],
                          dispatch="tma_auto", cta_group=1, mbar=bar.ptr_to([0]))
            T.ptx.mbarrier.arrive.expect_tx.shared.b64(bar.ptr_to([0]), T.uint32(BM * BN * 2))
        T.cuda.mbarrier_wait(bar.ptr_to([0]), 0)
        for i in range(BM * BN // 128):
            r = T.meta_var((i * 128 + tid) // BN)
            c = T.meta_var((i * 128 + tid) % BN)
            D[bx * BM + r, by * BN + c] = tile[r, c] * T.float16(2)

    return kernel


def tma_rows_runtime(H: int = 4, D: int = 64, BM: int = 64):
    """D = 2 * Q and L[b, h, s] = s for Q, D of shape (B, S, H, D) and L of shape (B, H, S),
    B and S set by the tensors at launch: one binary for every size. Q is read through a rank-4
    TMA descriptor whose dims depend on S and B (rows past S are zero-filled)."""
    layout = mma_shared_layout(tvm.DataType("float16"), SwizzleMode.SWIZZLE_128B_ATOM, (BM, D))

    @T.prim_func
    def kernel(q: T.handle, d: T.handle, lse: T.handle):
        B = T.int32()
        S = T.int32()
        Q = T.match_buffer(q, (B, S, H, D), "float16")
        O = T.match_buffer(d, (B, S, H, D), "float16")
        L = T.match_buffer(lse, (B, H, S), "float32")
        T.device_entry()
        bx, by = T.cta_id([T.ceildiv(S, BM), B * H])
        tid = T.thread_id([128])
        pool = T.SMEMPool()
        bar = pool.alloc((1,), "uint64", align=8)
        pool.move_base_to(1024)
        tile = pool.alloc((BM, D), "float16", layout=layout)
        pool.commit()
        b = T.meta_var(by // H)
        h = T.meta_var(by % H)
        if tid == 0:
            T.ptx.mbarrier.init.shared.b64(bar.ptr_to([0]), T.uint32(1))
        T.ptx.fence.proxy.async_.shared__cta()
        T.cuda.cta_sync()
        if tid == 0:
            Tx.copy_async(tile[:, :], Q[b, bx * BM:(bx + 1) * BM, h, :], dispatch="tma_explicit",
                          mbar=bar.ptr_to([0]))
            T.ptx.mbarrier.arrive.expect_tx.shared.b64(bar.ptr_to([0]), T.uint32(BM * D * 2))
        T.cuda.mbarrier_wait(bar.ptr_to([0]), 0)
        for i in range(BM * D // 128):
            r = T.meta_var((i * 128 + tid) // D)
            c = T.meta_var((i * 128 + tid) % D)
            if bx * BM + r < S:
                O[b, bx * BM + r, h, c] = tile[r, c] * T.float16(2)
        if tid < BM:
            if bx * BM + tid < S:
                L[b, h, bx * BM + tid] = T.cast(bx * BM + tid, "float32")

    return kernel


def cluster_rank(n_ctas: int = 8, cluster: int = 2):
    """out[cta] = its rank in the cluster, after a cluster-wide barrier."""

    @T.prim_func
    def kernel(out: T.Buffer((n_ctas,), "int32")):
        T.device_entry()
        bx = T.cta_id([n_ctas])
        rank = T.cta_id_in_cluster([cluster])
        tid = T.thread_id([128])
        T.cuda.cluster_sync()
        if tid == 0:
            out[bx] = rank

    return kernel


def affine_index(n: int = 256):
    """out[i] = i * scale + bias: two int32 launch arguments (TVM passes them to the device
    kernel in its own order, not the caller's)."""

    @T.prim_func
    def kernel(out: T.Buffer((n,), "int32"), scale: T.int32, bias: T.int32):
        T.device_entry()
        bx = T.cta_id([n // 128])
        tid = T.thread_id([128])
        out[bx * 128 + tid] = (bx * 128 + tid) * scale + bias

    return kernel


def undefined_extern():
    """Lowers fine; NVRTC rejects the call to a function that does not exist."""

    @T.prim_func
    def kernel(out: T.Buffer((128,), "int32")):
        T.device_entry()
        T.cta_id([1])
        tid = T.thread_id([128])
        out[tid] = T.call_extern("int32", "no_such_device_function", tid)

    return kernel


KERNELS = {
    "tma_scale_sm90": (lambda: tma_scale(256, 512), "sm_90a"),
    "cluster_rank_sm90": (lambda: cluster_rank(8, 2), "sm_90a"),
    "affine_index_sm90": (lambda: affine_index(256), "sm_90a"),
    "tma_rows_runtime_sm90": (tma_rows_runtime, "sm_90a"),
}


def artifact(name: str):
    """Build where TVM exists; otherwise load the artifact compiled for this machine."""
    import tirx

    make, arch = KERNELS[name]
    return tirx.build(make(), arch)


def prebuild(out: Path) -> None:
    import shutil

    for name in KERNELS:
        art = artifact(name)
        shutil.copytree(art.path, out / name, dirs_exist_ok=True)
        print(f"{name}: {art.launch.symbol} grid={art.launch.grid} cluster={art.launch.cluster}")


if __name__ == "__main__":
    prebuild(Path(sys.argv[1]) if len(sys.argv) > 1 else PREBUILT)
