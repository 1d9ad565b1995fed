"""Hopper (sm_90a) attention forward: O = softmax(Q K^T * scale) V and the log-sum-exp, in TIRx.

Warp-specialized, FA3's design with FA4's conditional rescale. Warpgroup 0 is the producer: one
thread loads each tile's Q, then its K and V tiles through TMA into a `stages`-deep ring guarded
by full/empty mbarriers (K and V have their own barriers, so Q K^T can start before V lands).
Warpgroups 1..C are consumers, 64 query rows each, sharing the Q tile and the K/V ring:
S = Q K^T on wgmma from shared memory, the online softmax on S's registers, and O += P V on wgmma
with P from registers (the rs form) and V read N-major. setmaxnreg moves registers from the
producer to the consumers.

Per consumer and K/V tile (FA3's intra-warpgroup overlap, knob `overlap`): issue Q K^T of tile
j+1, then P V of tile j; wait for S; softmax of tile j+1 while P V runs; wait; rescale O. With
`pingpong`, consumers take turns issuing their wgmmas (named barriers), so one's softmax runs
while the other's matrix multiplies do.

Key tiles are walked from the last to the first: the first visited may hold the key tail or
the causal diagonal and is always masked; under a causal mask the next few (up to the diagonal)
are masked through a uniform branch in the one loop body, the rest skip it. Causal tiles past
the diagonal are never loaded. Causal masking with seqlen_q != seqlen_k is aligned to the
bottom right (see kernels/fa4/problem.py).

Runtime sizes: batch and the sequence lengths are buffer dimensions the tensors set at launch
(one binary for every length). TMA zero-fills the rows past a sequence's end (per batch: the
descriptors are rank 4) and clips the O store there. O leaves through shared memory (the
consumer's own rows of the Q tile, dead after its last Q K^T) and a TMA store.

Q tiles come through a `q_stages`-deep ring. With two, a persistent CTA's producer loads the
next tile's Q (and, ring permitting, its first K/V tiles) while the consumers finish this one,
and a consumer hands a Q stage back (after its O store has read it) only once the next tile's
first Q K^T is issued, so the store's read-out overlaps that matrix multiply.

Kernel parameters after the tensors: `max_ctas` (the grid is min(tiles, max_ctas): a persistent
kernel with max_ctas = #SMs x ctas_per_sm, one tile per CTA with a larger value; a persistent
CTA c walks the tile list in waves of `grid` tiles, taking the c-th tile of even waves and the
c-th from the end of odd ones, so that in a longest-first list the long and short tiles of
consecutive waves pair up) and `order`, the tile list: 0 a head's query tiles back to back, 1
longest-first across all heads, 2 longest-first within groups of heads whose K/V fit in
L2_GROUP_BYTES together (lpt's balance without its L2 misses).
"""

from __future__ import annotations

import contextlib
import math
import types

from tvm.backend.cuda.lang.pipeline import MBarrier, PipelineState, TMABar
from tvm.backend.cuda.tile_primitive.tma_utils import SwizzleMode, mma_shared_layout
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx

from kernels.gemm._sm90_wgmma import (
    ATOM_ROWS_BYTES,
    COL_BLOCK,
    SWIZZLE_128B,
    WGMMA_K,
    fence_accumulators,
    smem_desc_offset,
    wgmma_ss,
)

from ._sm90_config import L2_GROUP_BYTES, WG_ROWS, AttentionSm90Config, violations
from ._sm90_mma import K16_ROWS_UNITS, keep_alive, mn_major_lbo, pack_pair, wgmma_rs
from .problem import AttentionProblem

SCHED_BARRIER = 4  # named barriers 4.. order the consumers' wgmma issue (1..3: their own syncs)
NEG_INF = float("-inf")
LN2 = math.log(2.0)


@contextlib.contextmanager
def when(cond):
    """A runtime `if` (no else) around the statements of a `with` block."""
    with T.If(cond):
        with T.Then():
            yield


def build_attention(problem: AttentionProblem, cfg: AttentionSm90Config):
    """The TIRx PrimFunc attention(Q, K, V, O, LSE, max_ctas, order) for `problem` and `cfg`
    (layouts in kernels/fa4/problem.py)."""
    bad = violations(cfg, problem)
    if bad:
        raise ValueError("illegal attention config: " + "; ".join(bad))
    dtype, D, CAUSAL = problem.dtype, problem.head_dim, problem.causal
    HQ, HKV, GROUP = problem.heads_q, problem.heads_kv, problem.group
    C, BN, STAGES, QSTAGES = cfg.consumers, cfg.block_n, cfg.stages, cfg.q_stages
    BM = cfg.block_m
    NWG = C + 1
    COLS = D // COL_BLOCK  # 64-column swizzle blocks of a head_dim row
    S_REGS, P_REGS, O_REGS = BN // 2, BN // 4, D // 2
    Q_BYTES, KV_BYTES = BM * D * 2, BN * D * 2
    Q_STAGE_UNITS = Q_BYTES // 16
    KV_STAGE_UNITS = KV_BYTES // 16  # descriptor units per ring stage
    SCALE_LOG2 = problem.scale * math.log2(math.e)
    THRESHOLD = cfg.rescale_threshold
    PINGPONG, OVERLAP = cfg.pingpong, cfg.overlap

    Q_layout = mma_shared_layout(dtype, SwizzleMode.SWIZZLE_128B_ATOM, (QSTAGES, BM, D))
    KV_layout = mma_shared_layout(dtype, SwizzleMode.SWIZZLE_128B_ATOM, (STAGES, BN, D))

    # ------------------------------------------------------------------ tile geometry
    def tile_coords(t, n_mblocks, batch, SK, order):
        """Linear tile t -> (query block, batch, query head). Query blocks run last-first:
        under a causal mask the last ones are the longest. Order 2 cuts the heads into groups
        whose K/V fit L2_GROUP_BYTES (the last group may be smaller) and runs each group's
        tiles longest-first across its heads."""
        heads = HQ * batch
        gh = T.max(1, T.min(heads, L2_GROUP_BYTES // T.max(1, SK * (D * 4 // GROUP))))
        g0 = t // (gh * n_mblocks) * gh  # the group's first head
        size = T.min(gh, heads - g0)
        w = t - g0 * n_mblocks  # the tile's rank in its group
        per_head = T.Select(order == 0, t % n_mblocks,
                            T.Select(order == 1, t // heads, w // size))
        head = T.Select(order == 0, t // n_mblocks,
                        T.Select(order == 1, t % heads, g0 + w % size))
        return n_mblocks - 1 - per_head, head // HQ, head % HQ

    def walk_tile(k, bx, n_ctas):
        """The tile a CTA takes in wave k: its own index in even waves, mirrored in odd ones."""
        return k * n_ctas + T.Select(k % 2 == 0, bx, n_ctas - 1 - bx)

    def kv_range(m_block, SQ, SK):
        """(key tiles to visit, the first tile index that needs masking)."""
        n_kv = T.ceildiv(SK, BN)
        tail = T.floordiv(SK, BN)  # the tile holding the key tail, or n_kv when there is none
        if not CAUSAL:
            return n_kv, tail
        off = SK - SQ  # bottom-right alignment: query i sees keys j <= i + off
        n_max = T.max(0, T.min(n_kv, T.floordiv((m_block + 1) * BM - 1 + off, BN) + 1))
        return n_max, T.min(tail, T.floordiv(m_block * BM + off + 1, BN))

    def load(dst, src, b, row0, rows, head, bar, stage):
        """TMA loads of rows [row0, row0 + rows) of one head into a ring stage, one 64-column
        swizzle block at a time (a box row is at most 128 B)."""
        for cb in range(COLS):
            c0 = cb * COL_BLOCK
            tile = dst[stage, :, c0:c0 + COL_BLOCK]
            Tx.copy_async(tile, src[b, row0:row0 + rows, head, c0:c0 + COL_BLOCK],
                          dispatch="tma_explicit", mbar=bar)

    # ------------------------------------------------------------------ consumer pieces
    def issue_qk(cx, stage):
        """S = Q[consumer rows] @ K[stage]^T, one commit group."""
        for kk in range(D // WGMMA_K):
            a = cx.q_desc[0] + T.cast(cx.q_stage[0] * Q_STAGE_UNITS
                                      + smem_desc_offset(BM, 0, kk * WGMMA_K)
                                      + cx.consumer * (WG_ROWS * 128 // 16), "uint64")
            b = cx.k_desc[0] + T.cast(stage * KV_STAGE_UNITS
                                      + smem_desc_offset(BN, 0, kk * WGMMA_K), "uint64")
            T.evaluate(wgmma_ss(dtype, BN, cx.s, 0, a, b, T.bool(kk > 0)))
        T.evaluate(T.ptx.wgmma.commit_group.sync.aligned())

    def issue_pv(cx, stage):
        """O (+)= P @ V[stage], 16 keys per wgmma, V read N-major; one commit group. The first
        P V of a tile overwrites O (pv_acc false)."""
        for kk in range(BN // WGMMA_K):
            b = cx.v_desc[0] + T.cast(stage * KV_STAGE_UNITS + kk * K16_ROWS_UNITS, "uint64")
            scale_d = T.bool(True) if kk > 0 else cx.pv_acc[0]
            T.evaluate(wgmma_rs(dtype, D, cx.acc, cx.p, 4 * kk, b, scale_d))
        T.evaluate(T.ptx.wgmma.commit_group.sync.aligned())
        T.buffer_store(cx.pv_acc, T.bool(True), [0])

    def wgmma_fence(*regs):
        """Pin register writes before the wgmmas that read them (wgmma.fence orders only
        the hardware; the empty asm keeps the compiler from sinking the writes past it)."""
        for buf, count in regs:
            fence_accumulators(buf, count)
        T.evaluate(T.ptx.wgmma.fence.sync.aligned())

    def wait_s(cx, pending: int):
        """Wait until at most `pending` commit groups are in flight, S's among the done."""
        T.evaluate(T.ptx.wgmma.wait_group.sync.aligned(pending))
        fence_accumulators(cx.s, S_REGS)

    def wait_o(cx):
        """Wait for P V: O is final for this tile, and P's registers may be reused."""
        T.evaluate(T.ptx.wgmma.wait_group.sync.aligned(0))
        fence_accumulators(cx.acc, O_REGS)
        keep_alive(cx.p, P_REGS)

    def release(cx, bar, ring):
        with when(cx.leader):
            bar.arrive(ring.stage)
        ring.advance()

    def sched_sync(cx):
        if PINGPONG:
            T.evaluate(T.ptx.bar.sync(T.uint32(SCHED_BARRIER + cx.consumer), T.uint32(256)))

    def sched_arrive(cx):
        if PINGPONG:
            nxt = (cx.consumer + 1) % C
            T.evaluate(T.ptx.bar.arrive(T.uint32(SCHED_BARRIER + nxt), T.uint32(256)))

    def row_indices(h):
        """Accumulator registers of row half h (rows lane/4 and lane/4 + 8 of the warp)."""
        return [4 * j + 2 * h + e for j in range(BN // 8) for e in (0, 1)]

    def tree(values, op):
        while len(values) > 1:
            values = [op(values[i], values[i + 1]) if i + 1 < len(values) else values[i]
                      for i in range(0, len(values), 2)]
        return values[0]

    def mask_scores(cx, h, n):
        """-inf where key n*BN + col is past seqlen_k or (causal) after the query's diagonal."""
        limit = cx.SK - n * BN
        if CAUSAL:
            row = cx.row0 + cx.warp * 16 + cx.lane // 4 + 8 * h
            limit = T.min(limit, row + (cx.SK - cx.SQ) + 1 - n * BN)
        # the thread's first column; in a register, or the expression is expanded per element
        T.buffer_store(cx.limit, limit - (cx.lane % 4) * 2, [0])
        for i in row_indices(h):
            col = (i // 4) * 8 + i % 2
            T.buffer_store(cx.s, T.Select(col < cx.limit[0], cx.s[i], T.float32(NEG_INF)), [i])

    def softmax(cx, n, first: bool, mask_from):
        """Online softmax of S in place (S becomes P in f32). Per row half h: the running max
        m (scaled, log2 units), the correction corr = 2^(m_old - m_new) for O and l, and l.
        Masked: always on the first tile (mask_from None); on later tiles of a causal problem
        when n >= mask_from; never on later tiles otherwise (only the first holds the tail)."""
        s, m, l, corr = cx.s, cx.m, cx.l, cx.corr
        if mask_from is None:
            for h in range(2):
                mask_scores(cx, h, n)
        elif CAUSAL:
            with when(n >= mask_from):
                for h in range(2):
                    mask_scores(cx, h, n)
        for h in range(2):
            # the row max goes to a register first: an expression holding the shuffles, used
            # in both arms of the Select below, would put them in one arm (C's ?:), where only
            # some lanes run them, and a shuffle that waits for lanes that never come hangs
            T.buffer_store(cx.m_new, T.cuda.warp_reduce(
                tree([s[i] for i in row_indices(h)], T.max), "max", 4) * T.float32(SCALE_LOG2),
                [h])
            mx = cx.m_new[h]
            if first:
                m_new = mx
            elif THRESHOLD > 0:
                # conditional rescale: keep the old max unless the new one is past the
                # threshold (-inf - -inf is NaN, which compares false: no key yet keeps -inf)
                grown = T.max(m[h], mx)
                m_new = T.Select(grown - m[h] > T.float32(THRESHOLD), grown, m[h])
            else:
                m_new = T.max(m[h], mx)
            T.buffer_store(cx.m_new, m_new, [h])
            m_safe = T.Select(cx.m_new[h] == T.float32(NEG_INF), T.float32(0), cx.m_new[h])
            if not first:
                T.evaluate(T.ptx.ex2.approx.ftz.f32(corr[h], m[h] - m_safe))
            T.buffer_store(m, cx.m_new[h], [h])
            for i in row_indices(h):
                T.evaluate(T.ptx.ex2.approx.ftz.f32(s[i], s[i] * T.float32(SCALE_LOG2) - m_safe))
            total = tree([s[i] for i in row_indices(h)], lambda a, b: a + b)
            T.buffer_store(l, total if first else l[h] * corr[h] + total, [h])

    def rescale_o(cx):
        """O *= corr per row, skipped when no row of the warp moved its max."""
        moved = T.Or(cx.corr[0] != T.float32(1), cx.corr[1] != T.float32(1))
        with when(T.cuda.any_sync(T.uint32(0xFFFFFFFF), moved) != 0):
            for i in range(O_REGS):
                T.buffer_store(cx.acc, cx.acc[i] * cx.corr[(i // 2) % 2], [i])

    def to_p(cx):
        for j in range(P_REGS):
            T.evaluate(pack_pair(dtype, cx.p, j, cx.s[2 * j], cx.s[2 * j + 1]))

    def first_tile(cx, n):
        """The first (highest) key tile: S, softmax (masked: it may hold the key tail or the
        diagonal) and, without overlap, its P V."""
        cx.k_full.wait(cx.ks.stage, cx.ks.phase)
        wgmma_fence((cx.s, S_REGS))
        issue_qk(cx, cx.ks.stage)
        release_previous_q(cx)
        wait_s(cx, 0)
        release(cx, cx.k_empty, cx.ks)
        softmax(cx, n, first=True, mask_from=None)
        to_p(cx)
        T.buffer_store(cx.pv_acc, T.bool(False), [0])
        if not OVERLAP:
            cx.v_full.wait(cx.vs.stage, cx.vs.phase)
            sched_sync(cx)
            wgmma_fence()
            issue_pv(cx, cx.vs.stage)
            wait_o(cx)
            release(cx, cx.v_empty, cx.vs)

    def next_tile(cx, n, first_masked):
        """Key tile n after the first. Overlap: Q K^T of n and P V of the previous tile go out
        together, the softmax of n runs while P V does. Without: S, softmax, then P V."""
        cx.k_full.wait(cx.ks.stage, cx.ks.phase)
        if OVERLAP:
            cx.v_full.wait(cx.vs.stage, cx.vs.phase)
            sched_sync(cx)
            wgmma_fence((cx.s, S_REGS), (cx.acc, O_REGS))
            issue_qk(cx, cx.ks.stage)
            issue_pv(cx, cx.vs.stage)
            sched_arrive(cx)
            wait_s(cx, 1)
            release(cx, cx.k_empty, cx.ks)
            softmax(cx, n, first=False, mask_from=first_masked)
            wait_o(cx)
            release(cx, cx.v_empty, cx.vs)
            rescale_o(cx)
            to_p(cx)
        else:
            wgmma_fence((cx.s, S_REGS))
            issue_qk(cx, cx.ks.stage)
            sched_arrive(cx)
            wait_s(cx, 0)
            release(cx, cx.k_empty, cx.ks)
            softmax(cx, n, first=False, mask_from=first_masked)
            rescale_o(cx)
            to_p(cx)
            cx.v_full.wait(cx.vs.stage, cx.vs.phase)
            sched_sync(cx)
            wgmma_fence((cx.acc, O_REGS))
            issue_pv(cx, cx.vs.stage)
            wait_o(cx)
            release(cx, cx.v_empty, cx.vs)

    def last_pv(cx):
        """Overlap: P V of the last visited (lowest) key tile. Without: the ping-pong turn
        that the last P V took is handed on."""
        if OVERLAP:
            cx.v_full.wait(cx.vs.stage, cx.vs.phase)
            wgmma_fence((cx.acc, O_REGS))
            issue_pv(cx, cx.vs.stage)
            wait_o(cx)
            release(cx, cx.v_empty, cx.vs)
        else:
            sched_arrive(cx)

    def mainloop(cx, n_max, first_masked):
        """Key tiles n_max-1 down to 0. The first may hold the key tail or the diagonal; of
        the others only causal ones may need masking, which a uniform branch skips past the
        diagonal (one loop body: two would each want their own register assignment)."""
        first_tile(cx, n_max - 1)
        with T.serial(0, n_max - 1) as j:
            next_tile(cx, n_max - 2 - j, first_masked)
        last_pv(cx)

    def release_previous_q(cx):
        """With two Q stages: hand back the previous tile's stage once its O store has read it
        (the store ran while this tile's first Q K^T was issued). With one, the epilogue does."""
        if QSTAGES > 1:
            with when(T.And(cx.leader, cx.prev_q[0] >= 0)):
                T.evaluate(T.ptx.cp.async_.bulk.wait_group.read(0))
                cx.q_empty.arrive(cx.prev_q[0])

    def no_keys(cx):
        """A causal query tile that sees no key (seqlen_q > seqlen_k): O = 0, lse = +inf."""
        release_previous_q(cx)
        for i in range(O_REGS):
            T.buffer_store(cx.acc, T.float32(0), [i])
        for h in range(2):
            T.buffer_store(cx.m, T.float32(NEG_INF), [h])
            T.buffer_store(cx.l, T.float32(0), [h])

    def epilogue(cx, b, hq):
        """O / l and lse = (m + log2 l) ln 2 (a row with no key: O = 0, lse = +inf). The lse
        goes straight to global memory; O through this consumer's rows of the Q tile (dead
        after its last Q K^T) with stmatrix (the accumulator fragment is stmatrix's register
        layout), then one TMA store per 64-column block, clipped at seqlen_q. The Q tile is
        handed back once the stores have read it (with two Q stages, at the next tile)."""
        for h in range(2):
            total = T.cuda.warp_reduce(cx.l[h], "sum", 4)
            T.buffer_store(cx.l, total, [h])
            T.buffer_store(cx.corr, T.Select(cx.l[h] == T.float32(0), T.float32(1),
                                             T.float32(1) / cx.l[h]), [h])
            lse = T.Select(cx.l[h] == T.float32(0), T.float32(float("inf")),
                           (cx.m[h] + T.log2(cx.l[h])) * T.float32(LN2))
            row = cx.row0 + cx.warp * 16 + cx.lane // 4 + 8 * h
            with when(T.And(cx.lane % 4 == 0, row < cx.SQ)):
                T.buffer_store(cx.LSE, lse, [b, hq, row])
        for i in range(O_REGS):
            T.buffer_store(cx.acc, cx.acc[i] * cx.corr[(i // 2) % 2], [i])
        T.evaluate(T.cuda.warpgroup_sync(1 + cx.consumer))  # all warps past their last Q K^T
        words = cx.frag.view("uint32")
        lane_row = cx.consumer * WG_ROWS + cx.warp * 16 + (cx.lane // 8) % 2 * 8 + cx.lane % 8
        lane_col = cx.lane // 16 * 8
        for p16 in range(D // 16):  # 16 columns per stmatrix.x4
            for k in range(8):
                T.buffer_store(cx.frag, T.Cast(dtype, cx.acc[p16 * 8 + k]), [k])
            T.evaluate(T.ptx.stmatrix.sync.aligned.m8n8.x4.shared.b16(
                cx.Qs.ptr_to([cx.q_stage[0], lane_row, p16 * 16 + lane_col]), words[0],
                words[1], words[2], words[3]))
        T.evaluate(T.ptx.fence.proxy.async_.shared__cta())
        T.evaluate(T.cuda.warpgroup_sync(1 + cx.consumer))
        r0 = cx.consumer * WG_ROWS
        with when(cx.leader):
            for cb in range(COLS):
                c0 = cb * COL_BLOCK
                Tx.copy_async(cx.O[b, cx.row0:cx.row0 + WG_ROWS, hq, c0:c0 + COL_BLOCK],
                              cx.Qs[cx.q_stage[0], r0:r0 + WG_ROWS, c0:c0 + COL_BLOCK],
                              dispatch="tma_explicit")
            T.evaluate(T.ptx.cp.async_.bulk.commit_group())
            if QSTAGES == 1:
                T.evaluate(T.ptx.cp.async_.bulk.wait_group.read(0))
                cx.q_empty.arrive(0)
        if QSTAGES > 1:
            T.buffer_store(cx.prev_q, cx.q_stage[0], [0])

    def consumer_tile(cx, n_mblocks, B, order):
        """Tile cx.tile[0]. The key tiles and the first masked one, which every key tile reads,
        are computed once into registers (cx.tile[1:3]): as expressions, the tile-order
        arithmetic (integer divisions by runtime sizes) would be expanded at every use, loop
        included. The rest (the first row, read only on masked tiles; batch and head, read
        by the epilogue) stays expressions: as registers held through the loop, they spill
        head_dim 64's consumers (272 B), which have none to spare."""
        m_block = tile_coords(cx.tile[0], n_mblocks, B, cx.SK, order)[0]
        for i, value in enumerate(kv_range(m_block, cx.SQ, cx.SK)):
            T.buffer_store(cx.tile, value, [1 + i])
        cx.row0, n_max, first_masked = m_block * BM + cx.consumer * WG_ROWS, cx.tile[1], cx.tile[2]
        T.buffer_store(cx.q_stage, cx.qp.stage, [0])
        cx.q_full.wait(cx.qp.stage, cx.qp.phase)
        cx.qp.advance()
        with T.If(n_max > 0):
            with T.Then():
                mainloop(cx, n_max, first_masked)
            with T.Else():
                no_keys(cx)
        _, b, hq = tile_coords(cx.tile[0], n_mblocks, B, cx.SK, order)
        epilogue(cx, b, hq)

    @T.prim_func
    def attention(q: T.handle, k: T.handle, v: T.handle, o: T.handle, lse: T.handle,
                  max_ctas: T.int32, order: T.int32):
        B = T.int32()
        SQ = T.int32()
        SK = T.int32()
        Q = T.match_buffer(q, (B, SQ, HQ, D), dtype)
        K = T.match_buffer(k, (B, SK, HKV, D), dtype)
        V = T.match_buffer(v, (B, SK, HKV, D), dtype)
        O = T.match_buffer(o, (B, SQ, HQ, D), dtype)
        LSE = T.match_buffer(lse, (B, HQ, SQ), "float32")
        T.device_entry()
        # ctas_per_sm blocks per SM: ptxas then starts every thread at that share of the
        # register file, the count setmaxnreg trades from (without it, ptxas ignores setmaxnreg)
        T.attr({"tirx.launch_bounds_min_blocks_per_sm": cfg.ctas_per_sm})
        n_mblocks = T.meta_var(T.ceildiv(SQ, BM))
        n_tiles = T.meta_var(n_mblocks * HQ * B)
        n_ctas = T.meta_var(T.min(n_tiles, max_ctas))
        bx = T.cta_id([n_ctas])
        wg_id = T.warpgroup_id([NWG])
        warp = T.warp_id_in_wg([4])
        lane = T.lane_id([32])

        pool = T.SMEMPool()
        q_full = TMABar(pool, QSTAGES)
        q_empty = MBarrier(pool, QSTAGES)
        k_full = TMABar(pool, STAGES)
        k_empty = MBarrier(pool, STAGES)
        v_full = TMABar(pool, STAGES)
        v_empty = MBarrier(pool, STAGES)
        pool.move_base_to(1024)
        Qs = pool.alloc((QSTAGES, BM, D), dtype, layout=Q_layout)
        Ks = pool.alloc((STAGES, BN, D), dtype, layout=KV_layout)
        Vs = pool.alloc((STAGES, BN, D), dtype, layout=KV_layout)
        q_full.init(1)
        q_empty.init(C)
        k_full.init(1)
        k_empty.init(C)
        v_full.init(1)
        v_empty.init(C)
        pool.commit()
        T.ptx.fence.proxy.async_.shared__cta()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()

        if wg_id == 0:
            # ---------------- producer ----------------
            T.ptx.setmaxnreg.dec.sync.aligned.u32(cfg.producer_regs)
            if warp == 0:
                if T.cuda.elect_sync():
                    ring = PipelineState(STAGES, 1)
                    qp = PipelineState(QSTAGES, 1)
                    # the tile in a register; its coordinates as expressions (the producer
                    # has registers for little else, and issues only a few TMAs per key tile)
                    t = T.alloc_local((1,), "int32")
                    wave: T.int32 = 0
                    while wave * n_ctas < n_tiles:
                        t[0] = walk_tile(wave, bx, n_ctas)
                        if t[0] < n_tiles:
                            m_block = T.meta_var(tile_coords(t[0], n_mblocks, B, SK, order)[0])
                            b = T.meta_var(tile_coords(t[0], n_mblocks, B, SK, order)[1])
                            hq = T.meta_var(tile_coords(t[0], n_mblocks, B, SK, order)[2])
                            hkv = T.meta_var(hq // GROUP)
                            n_max = T.meta_var(kv_range(m_block, SQ, SK)[0])
                            q_empty.wait(qp.stage, qp.phase)
                            q_full.arrive(qp.stage, Q_BYTES)
                            load(Qs, Q, b, m_block * BM, BM, hq, q_full.ptr_to([qp.stage]),
                                 qp.stage)
                            qp.advance()
                            for j in T.serial(n_max):
                                n0 = T.meta_var((n_max - 1 - j) * BN)
                                k_empty.wait(ring.stage, ring.phase)
                                k_full.arrive(ring.stage, KV_BYTES)
                                load(Ks, K, b, n0, BN, hkv, k_full.ptr_to([ring.stage]),
                                     ring.stage)
                                v_empty.wait(ring.stage, ring.phase)
                                v_full.arrive(ring.stage, KV_BYTES)
                                load(Vs, V, b, n0, BN, hkv, v_full.ptr_to([ring.stage]),
                                     ring.stage)
                                ring.advance()
                        wave = wave + 1
        else:
            # ---------------- consumers ----------------
            T.ptx.setmaxnreg.inc.sync.aligned.u32(cfg.consumer_regs)
            cx = T.meta_var(types.SimpleNamespace(
                consumer=wg_id - 1 if C > 1 else 0, warp=warp, lane=lane,
                leader=T.And(warp == 0, lane == 0), SQ=SQ, SK=SK, O=O, LSE=LSE, Qs=Qs,
                q_full=q_full, q_empty=q_empty, k_full=k_full, k_empty=k_empty, v_full=v_full,
                v_empty=v_empty,
                s=T.alloc_local((S_REGS,), "float32"), p=T.alloc_local((P_REGS,), "uint32"),
                acc=T.alloc_local((O_REGS,), "float32"), m=T.alloc_local((2,), "float32"),
                m_new=T.alloc_local((2,), "float32"), l=T.alloc_local((2,), "float32"),
                corr=T.alloc_local((2,), "float32"), pv_acc=T.alloc_local((1,), "bool"),
                frag=T.alloc_local((8,), dtype), q_desc=T.alloc_local((1,), "uint64"),
                q_stage=T.alloc_local((1,), "int32"), prev_q=T.alloc_local((1,), "int32"),
                tile=T.alloc_local((3,), "int32"), limit=T.alloc_local((1,), "int32"),
                k_desc=T.alloc_local((1,), "uint64"), v_desc=T.alloc_local((1,), "uint64"),
                ks=PipelineState(STAGES, 0), vs=PipelineState(STAGES, 0),
                qp=PipelineState(QSTAGES, 0)))
            T.cuda.wgmma.encode_matrix_descriptor(
                T.address_of(cx.q_desc[0]), Qs.ptr_to([0, 0, 0]), 1, ATOM_ROWS_BYTES // 16,
                SWIZZLE_128B)
            T.cuda.wgmma.encode_matrix_descriptor(
                T.address_of(cx.k_desc[0]), Ks.ptr_to([0, 0, 0]), 1, ATOM_ROWS_BYTES // 16,
                SWIZZLE_128B)
            T.cuda.wgmma.encode_matrix_descriptor(
                T.address_of(cx.v_desc[0]), Vs.ptr_to([0, 0, 0]), mn_major_lbo(BN),
                ATOM_ROWS_BYTES // 16, SWIZZLE_128B)
            # The fences before a wgmma read its accumulators: give them defined values, or the
            # compiler keeps them live (undefined) from the kernel's entry, producer included.
            for i in range(S_REGS):
                cx.s[i] = T.float32(0)
            for i in range(O_REGS):
                cx.acc[i] = T.float32(0)
            if PINGPONG:
                if wg_id == C:  # the last consumer lets consumer 0 take the first turn
                    T.ptx.bar.arrive(T.uint32(SCHED_BARRIER), T.uint32(256))
            cx.prev_q[0] = -1  # no tile's O store yet
            wave: T.int32 = 0
            while wave * n_ctas < n_tiles:
                cx.tile[0] = walk_tile(wave, bx, n_ctas)
                if cx.tile[0] < n_tiles:
                    consumer_tile(cx, n_mblocks, B, order)
                wave = wave + 1
            if warp == 0:
                if lane == 0:
                    T.ptx.cp.async_.bulk.wait_group(0)

    return attention
