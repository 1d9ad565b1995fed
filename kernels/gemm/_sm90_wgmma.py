"""Raw Hopper wgmma helpers for TIRx 0.27, which has no wgmma dispatch for tile ops.

Shared-memory operands are K-major tiles in the 128-byte-swizzle layout that
`mma_shared_layout(dtype, SWIZZLE_128B_ATOM, ...)` builds: 8-row atoms of 1024 B,
one 64-element (128 B) column block after another for BLK_K > 64.
"""

from __future__ import annotations

from tvm.script import tirx as T

SWIZZLE_128B = 3  # CUtensorMapSwizzle value the descriptor encoder takes
ATOM_ROWS_BYTES = 1024  # 8 rows x 128 B: the stride between 8-row core matrices
COL_BLOCK = 64  # 16-bit elements in one 128-byte swizzle row
WGMMA_M = 64
WGMMA_K = 16
PTX_TYPE = {"float16": "f16", "bfloat16": "bf16"}


def smem_desc_offset(rows: int, row0: int, k0: int) -> int:
    """Offset, in the descriptor's 16-byte units, of element (row0, k0) of a
    (rows, BLK_K) K-major 128B-swizzled tile, row0 a multiple of 8, k0 of 16."""
    block, k_in_block = divmod(k0, COL_BLOCK)
    byte = block * rows * 128 + row0 * 128 + k_in_block * 2
    return byte // 16


def wgmma_ss(dtype: str, n: int, acc, acc_base: int, a_desc, b_desc, scale_d):
    """One `wgmma.mma_async` m64nNk16 with both operands in shared memory, K-major:
    acc[acc_base : acc_base + n/2] (+)= A(64x16) @ B(n x 16)^T."""
    t = PTX_TYPE[dtype]
    op = T.ptx[f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t}"]
    regs = [acc[acc_base + i] for i in range(n // 2)]
    return op(*regs, a_desc, b_desc, scale_d, 1, 1, 0, 0)


_FENCE_N = 8
_FENCE_SRC = (
    "__device__ __forceinline__ void acc_fence8("
    + ", ".join(f"float& r{i}" for i in range(_FENCE_N))
    + ") { asm volatile(\"\" : "
    + ", ".join(f'\"+f\"(r{i})' for i in range(_FENCE_N))
    + ' :: \"memory\"); }'
)


def fence_accumulators(acc, count: int):
    """Tie the accumulator registers to program order around async wgmma (an empty asm that
    reads and writes them), so the compiler cannot move their reads past a wait_group."""
    assert count % _FENCE_N == 0
    for base in range(0, count, _FENCE_N):
        regs = [acc[base + i] for i in range(_FENCE_N)]
        T.evaluate(T.cuda.func_call("acc_fence8", *regs, source_code=_FENCE_SRC))


def acc_coords(i: int, warp, lane):
    """(row, col) within the 64 x N wgmma tile of f32 accumulator register i of a
    thread: pairs of columns, rows lane/4 and lane/4 + 8 of the warp's 16 rows."""
    row = warp * 16 + lane // 4 + 8 * ((i // 2) % 2)
    col = (i // 4) * 8 + (lane % 4) * 2 + (i % 2)
    return row, col
