"""Hopper pieces attention needs beyond the GEMM's raw wgmma helpers (kernels/gemm/_sm90_wgmma.py,
which it reuses): P V with P from registers (wgmma's rs form), V read N-major from the row-major
tile TMA wrote, and 16-bit packing of P.

Register fragments of an m64nNk16 wgmma, per thread (lane l of warp w of the warpgroup): the f32
accumulator register i holds row w*16 + l/4 + 8*((i/2)%2), column (i/4)*8 + (l%4)*2 + i%2 (see
acc_coords); the A fragment of k-step kk is four 32-bit registers of 16-bit pairs, which for P
are exactly the accumulator pairs (8kk, 8kk+1), (8kk+2, 8kk+3), ... of S: P needs no shuffle.
"""

from __future__ import annotations

from tvm.script import tirx as T

from kernels.gemm._sm90_wgmma import COL_BLOCK, PTX_TYPE

ROW_BYTES = COL_BLOCK * 2  # one row of a 64-element swizzle block
K16_ROWS_UNITS = 16 * ROW_BYTES // 16  # descriptor units spanned by 16 rows of a swizzle block


def mn_major_lbo(rows: int) -> int:
    """Leading-byte offset (16-byte units) of a B operand read N-major from a (rows, cols) tile
    stored as 64-column 128B-swizzled blocks: the distance from one 64-column block to the next.
    The stride byte offset is the 1024 B between 8-row atoms, as for K-major."""
    return rows * ROW_BYTES // 16


def wgmma_rs(dtype: str, n: int, acc, a, a_base: int, b_desc, scale_d):
    """One `wgmma.mma_async` m64nNk16 with A from registers (a[a_base : a_base + 4], 16-bit
    pairs) and B from shared memory read N-major (trans-b): acc (+)= A(64x16) @ B(16 x n)."""
    t = PTX_TYPE[dtype]
    op = T.ptx[f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t}"]
    regs = [acc[i] for i in range(n // 2)]
    return op(*regs, *(a[a_base + i] for i in range(4)), b_desc, scale_d, 1, 1, 1)


def pack_pair(dtype: str, dst, index: int, lo, hi):
    """dst[index] = (lo, hi) rounded to `dtype`, lo in the low half (cvt puts its first source
    in the high half)."""
    t = {"bfloat16": "bf16x2", "float16": "f16x2"}[dtype]
    return T.ptx[f"cvt.rn.{t}.f32"](dst[index], hi, lo)


_KEEP_N = 8


def _keep_src(n: int) -> str:
    return (f"__device__ __forceinline__ void keep_alive{n}("
            + ", ".join(f"unsigned r{i}" for i in range(n)) + ") { asm volatile(\"\" :: "
            + ", ".join(f'\"r\"(r{i})' for i in range(n)) + ' : \"memory\"); }')


def keep_alive(regs, count: int):
    """Read registers in an empty asm: an async wgmma still reads them (P of the rs form), so
    their values must stay where they are until after the wait_group this follows."""
    for base in range(0, count, _KEEP_N):
        n = min(_KEEP_N, count - base)
        T.evaluate(T.cuda.func_call(f"keep_alive{n}", *(regs[base + i] for i in range(n)),
                                    source_code=_keep_src(n)))
