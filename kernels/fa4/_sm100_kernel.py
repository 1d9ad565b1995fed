"""The TVMScript body of the sm_100a FA4 template (see kernels/fa4/sm100.py for the design).

Kept in its own module because TVMScript parses the kernel from this file's source. Python-level
`if` on config values is folded at parse time, so each config compiles only what it uses.

Per-CTA protocol (every barrier has one producer role and one consumer role; parities are
tracked per role, in the order both sides walk the same tasks and blocks):

    q_full / q_empty      load -> MMA: Q tile landed / last Q K^T that reads it done
    kv_full / kv_empty    load -> MMA: K or V tile landed / the MMAs that read it done
    s_full                MMA -> softmax: Q K^T of a block is in an S tile
    p_full (256)          softmax (P stored) + correction (O rescaled or untouched) -> MMA
    o_full                MMA -> correction: a P V is done (waited for every one, in order)
    o_final               MMA -> softmax: the task's last P V is done (O is final)
    stats_full / _empty   softmax <-> correction: a block's per-row O scale in shared memory
    epi_full / epi_empty  softmax -> store warp: the normalized O tile staged in shared memory

The correction warpgroup supplies p_full's second half for every block: for t > 0 once O is
rescaled (or needs no rescale), for t = 0 of a task once it saw the previous task's last P V
done (nothing to rescale; the softmax half of that phase comes after its epilogue read O).
Correction returns the mailbox (stats_empty) only after its p_full arrival, so a softmax
warpgroup can never arrive for block t + 1 while block t's phase still waits for correction.
mbarrier waits name a phase by its parity, so a waiter may neither skip a phase (hence o_final
for the softmax warpgroups) nor be overtaken: no P V can finish before correction waited for
the one before it (NumSim's synccheck checks both).
"""

from __future__ import annotations

import math

import tvm
from tvm.backend.cuda.lang.pipeline import MBarrier, PipelineState, TCGen05Bar, TMABar
from tvm.backend.cuda.lang.tile_scheduler import (
    FlashAttentionLinearScheduler,
    FlashAttentionLPTScheduler,
)
from tvm.backend.cuda.tile_primitive.tma_utils import SwizzleMode, mma_shared_layout
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx
from tvm.tirx.layout import S, TCol, TileLayout, TLane, tid_in_wg

from kernels import registers  # absolute: tests load planted copies of this file

# 2^f on [0, 1) as 1 + f*(C1 + f*(C2 + f*C3)): a relative-error fit of ours (max 8.6e-5, below
# fp16's and bf16's rounding of P).
EXP2_C1, EXP2_C2, EXP2_C3 = 0.6951166329309152, 0.2276456738924219, 0.07706641690813808
LD_COLS = 32  # columns per tcgen05.ld/st of S, P and O in the softmax warpgroups
CORRECTION_COLS = 16  # columns of O per tcgen05.ld/st in the correction warpgroup


def make_kernel(cfg, problem, sm_count: int, fixed_threshold=None):
    BLK_M, TMEM_COLUMNS, ISSUE_REGS = cfg.blk_m, cfg.tmem_alloc_columns, cfg.issue_regs
    dt = tvm.DataType(problem.dtype)
    f32 = tvm.DataType("float32")
    HQ, HKV, D = problem.heads_q, problem.heads_kv, problem.head_dim
    G = problem.group
    SPT = BLK_M // G  # sequence positions per query tile
    CAUSAL = problem.causal
    QS, KVS, SS, BN = cfg.q_stages, cfg.kv_stages, cfg.s_stages, cfg.blk_n
    ROWS_PER_TASK = QS * SPT
    NUM_CTAS = sm_count
    SLABS = D // 64  # 64-column boxes: one 128-byte swizzle row of 16-bit data each
    WGS = cfg.warpgroups
    WG_CORR = QS
    WG_ISSUE = QS + 1
    START_REGS = registers.start_count(WGS)
    SOFTMAX_REGS, CORR_REGS = cfg.softmax_regs, cfg.correction_regs
    EMU = cfg.exp2_emu
    SCALE_LOG2 = problem.scale * math.log2(math.e)
    LN2 = math.log(2.0)
    NEG_INF = -float("inf")
    # TMEM columns (fp32): S tile s of stage q at (q*SS + s)*BN, O of stage q at O_COL + q*D.
    O_COL = QS * SS * BN
    TILE_BYTES = BLK_M * D * 2
    KV_BYTES = BN * D * 2

    QO_layout = mma_shared_layout(dt, SwizzleMode.SWIZZLE_128B_ATOM, (QS, BLK_M, D))
    KV_layout = mma_shared_layout(dt, SwizzleMode.SWIZZLE_128B_ATOM, (KVS, BN, D))
    row_layout = TileLayout(S[(128, BN) : (1@tid_in_wg, 1)])
    ld_layout = TileLayout(S[(128, LD_COLS) : (1@tid_in_wg, 1)])
    corr_layout = TileLayout(S[(128, CORRECTION_COLS) : (1@tid_in_wg, 1)])

    # fmt: off
    @T.prim_func
    def fa4(q: T.handle, k: T.handle, v: T.handle, o: T.handle, lse: T.handle,
            rescale_threshold: T.int32):
        B = T.int32()
        SQ = T.int32()
        SK = T.int32()
        Q = T.match_buffer(q, (B, SQ, HQ, D), dt)
        K = T.match_buffer(k, (B, SK, HKV, D), dt)
        V = T.match_buffer(v, (B, SK, HKV, D), dt)
        O = T.match_buffer(o, (B, SQ, HQ, D), dt)
        LSE = T.match_buffer(lse, (B, HQ, SQ), "float32")
        T.device_entry()
        T.attr({"tirx.launch_bounds_min_blocks_per_sm": 1})
        bx = T.cta_id([NUM_CTAS])
        wg_id = T.warpgroup_id([WGS])
        warp_id = T.warp_id_in_wg([4])
        lane_id = T.lane_id([32])

        pool = T.SMEMPool()
        tmem_addr = pool.alloc((1,), "uint32")
        q_full = TMABar(pool, QS)
        q_empty = TCGen05Bar(pool, QS)
        kv_full = TMABar(pool, KVS)
        kv_empty = TCGen05Bar(pool, KVS)
        s_full = TCGen05Bar(pool, QS * SS)
        p_full = MBarrier(pool, QS)
        o_full = TCGen05Bar(pool, QS)
        o_final = TCGen05Bar(pool, QS)
        stats_full = MBarrier(pool, QS)
        stats_empty = MBarrier(pool, QS)
        epi_full = MBarrier(pool, QS)
        epi_empty = MBarrier(pool, QS)
        pool.move_base_to(1024)
        Qs = pool.alloc((QS, BLK_M, D), dt, layout=QO_layout)
        KVs = pool.alloc((KVS, BN, D), dt, layout=KV_layout)
        Os = pool.alloc((QS, BLK_M, D), dt, layout=QO_layout)
        scale_box = pool.alloc((QS, BLK_M), "float32")

        q_full.init(1)
        q_empty.init(1)
        kv_full.init(1)
        kv_empty.init(1)
        s_full.init(1)
        p_full.init(256)  # a softmax warpgroup and the O-ready side
        o_full.init(1)
        o_final.init(1)
        stats_full.init(128)
        stats_empty.init(128)
        epi_full.init(128)
        epi_empty.init(1)
        pool.commit()

        # TMEM: all 512 columns, so the allocation starts at column 0.
        if wg_id == 0:
            if warp_id == 0:
                T.ptx["tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32"](
                    T.address_of(tmem_addr[0]), T.uint32(TMEM_COLUMNS))
                T.ptx["tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned"]()
        T.ptx.fence.proxy.async_.shared__cta()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()

        tmem = T.decl_buffer((128, TMEM_COLUMNS), f32, scope="tmem", allocated_addr=0,
                             layout=TileLayout(S[(128, TMEM_COLUMNS) : (1@TLane, 1@TCol)]))
        tmem16 = T.decl_buffer((128, 2 * TMEM_COLUMNS), dt, scope="tmem", allocated_addr=0,
                               layout=TileLayout(S[(128, 2 * TMEM_COLUMNS) : (1@TLane, 1@TCol)]))

        # The runtime sizes, copied into registers by each role after its setmaxnreg (see
        # refresh below): TVM would otherwise hoist the size arithmetic all roles share to the
        # kernel's entry, where ptxas spills it around every register reallocation.
        dims = T.alloc_local((3,), "int32")
        batches, seqlen_q, seqlen_k = T.meta_var(dims[0]), T.meta_var(dims[1]), T.meta_var(dims[2])
        NB = T.meta_var((seqlen_k + BN - 1) // BN)  # KV blocks of a sequence
        M_BLOCKS = T.meta_var((seqlen_q + ROWS_PER_TASK - 1) // ROWS_PER_TASK)  # tasks per head
        if cfg.scheduler == "lpt":
            # one group of every (batch, head) pair: all heads' last query blocks first
            sched = FlashAttentionLPTScheduler("fa", num_batches=batches, num_heads=HKV,
                                               num_m_blocks=M_BLOCKS, l2_swizzle=batches * HKV,
                                               num_ctas=NUM_CTAS)
        else:
            sched = FlashAttentionLinearScheduler("fa", num_batches=batches, num_heads=HKV,
                                                  num_m_blocks=M_BLOCKS, num_ctas=NUM_CTAS)
        batch = T.meta_var(sched.batch_idx)
        kv_head = T.meta_var(sched.head_idx)
        m_start = T.meta_var(sched.m_block_idx * ROWS_PER_TASK)

        # KV blocks of the current task (at least one, so rows that see no key still finish
        # with an empty sum), and how many of them, visited from the last down, need a mask.
        n_blk = T.alloc_local((1,), "int32")
        n_masked = T.alloc_local((1,), "int32")

        @T.inline
        def task_blocks():
            if CAUSAL:
                last_row = T.min(m_start + ROWS_PER_TASK, seqlen_q) - 1
                n_blk[0] = T.min(NB, T.max((last_row + seqlen_k - seqlen_q + BN) // BN, 1))
                unmasked = T.max(T.min(m_start + seqlen_k - seqlen_q + 1, seqlen_k), 0) // BN
            else:
                n_blk[0] = NB
                unmasked = seqlen_k // BN
            n_masked[0] = T.max(n_blk[0] - unmasked, 0)

        if fixed_threshold is None:
            threshold = T.meta_var(T.cast(rescale_threshold, "float32"))
        else:
            threshold = T.meta_var(T.float32(fixed_threshold))

        # The warp index (a lane-0 shuffle, so provably warp-uniform) is taken again after each
        # setmaxnreg, and every role starts its task walk there: ptxas spills whatever is live
        # across a register reallocation.
        warp_now = T.alloc_local((1,), "int32")

        @T.inline
        def refresh_warp():
            T.ptx.shfl_sync.idx.b32(warp_now[0], T.cuda.mov_sreg(32, "tid.x") >> 5, T.uint32(0),
                                    T.uint32(0x1F), T.uint32(0xFFFFFFFF))

        @T.inline
        def refresh():  # after a setmaxnreg: the warp index and the sizes, taken again
            refresh_warp()
            dims[0] = B
            dims[1] = SQ
            dims[2] = SK

        warp_in_wg = T.meta_var(warp_now[0] & 3)
        row = T.meta_var((warp_now[0] & 3) * 32 + lane_id)  # this thread's row of a 128-row tile

        # ptxas' guard-rail call inside tcgen05.alloc clobbers registers: nothing from before
        # it may stay live, so the roles are told apart by a fresh warp index too.
        refresh_warp()
        if warp_now[0] >> 2 == WG_ISSUE:
            T.ptx.setmaxnreg.dec.sync.aligned.u32(ISSUE_REGS)
            refresh()
            sched.init(bx)
            if warp_in_wg == 1:
                # ---- TMA loads: Q tiles of the task, then K and V in the MMA's order ----
                q_ps = PipelineState(1, phase=1)
                kv_ps = PipelineState(KVS, phase=1)

                # TMA boxes are explicit (tma_auto cannot prove runtime strides legal), one per
                # 64-column slab; rows past a sequence's end are zero-filled.
                @T.inline
                def load_kv(src, blk):
                    kv_empty.wait(kv_ps.stage, kv_ps.phase)
                    for ks in T.unroll(SLABS):
                        Tx.copy_async(KVs[kv_ps.stage, :, ks * 64:ks * 64 + 64],
                                      src[batch, blk * BN:blk * BN + BN, kv_head, ks * 64:ks * 64 + 64],
                                      dispatch="tma_explicit", mbar=kv_full.ptr_to([kv_ps.stage]))
                    kv_full.arrive(kv_ps.stage, KV_BYTES)
                    kv_ps.advance()

                if T.cuda.elect_sync():
                    while sched.valid():
                        task_blocks()
                        n = T.meta_var(n_blk[0])
                        for q in T.unroll(QS):
                            q_empty.wait(q, q_ps.phase)
                            Q4 = Qs.view(QS, SPT, G, D)  # a tile's rows: (position, head of group)
                            s0 = T.meta_var(m_start + q * SPT)
                            for ks in T.unroll(SLABS):
                                Tx.copy_async(Q4[q, :, :, ks * 64:ks * 64 + 64],
                                              Q[batch, s0:s0 + SPT, kv_head * G:kv_head * G + G, ks * 64:ks * 64 + 64],
                                              dispatch="tma_explicit", mbar=q_full.ptr_to([q]))
                            q_full.arrive(q, TILE_BYTES)
                        q_ps.advance()
                        for t in T.serial(T.min(SS, n)):
                            load_kv(K, n - 1 - t)
                        for t in T.serial(T.max(n - SS, 0)):
                            load_kv(V, n - 1 - t)
                            load_kv(K, n - 1 - (t + SS))
                        for t in T.serial(T.max(n - SS, 0), n):
                            load_kv(V, n - 1 - t)
                        sched.next_tile()
            elif warp_in_wg == 0:
                # ---- MMA issue: Q K^T of block t + s_stages after P V of block t ----
                # Shared-memory descriptors are encoded here, at each MMA ("local_hoist"), not
                # hoisted to the kernel's entry, where they would live across every
                # setmaxnreg (and be spilled around it).
                q_ps = PipelineState(1, phase=0)
                kv_ps = PipelineState(KVS, phase=0)
                p_ps = PipelineState(1, phase=0)
                # The S tile of the P V of block t, which the Q K^T of block t + SS rewrites.
                tile_ps = PipelineState(SS, phase=0)

                @T.inline
                def qk(q, t, n, tile):
                    s_tile = T.meta_var(q * SS + tile)
                    Tx.gemm_async(tmem[:, s_tile * BN:s_tile * BN + BN],
                                  Qs[q, :, :], KVs[kv_ps.stage, :, :],
                                  accum=False, dispatch="tcgen05", cta_group=1,
                                  smem_desc="local_hoist")
                    s_full.arrive(s_tile, cta_group=1)
                    if t == n - 1:
                        q_empty.arrive(q, cta_group=1)  # the last reader of this Q tile

                @T.inline
                def pv(q, t, n, v_stage):
                    p_full.wait(q, p_ps.phase)
                    T.ptx.tcgen05.fence__after_thread_sync()
                    p16 = T.meta_var(2 * (q * SS + tile_ps.stage) * BN + BN)
                    Tx.gemm_async(tmem[:, O_COL + q * D:O_COL + q * D + D],
                                  tmem16[:, p16:p16 + BN], KVs[v_stage, :, :],
                                  transB=True, accum=(t != 0), dispatch="tcgen05", cta_group=1,
                                  smem_desc="local_hoist")
                    o_full.arrive(q, cta_group=1)
                    if t == n - 1:
                        o_final.arrive(q, cta_group=1)

                @T.inline
                def wait_kv():
                    kv_full.wait(kv_ps.stage, kv_ps.phase)
                    T.ptx.tcgen05.fence__after_thread_sync()

                @T.inline
                def release_kv():
                    kv_empty.arrive(kv_ps.stage, cta_group=1)
                    kv_ps.advance()

                v_stage = T.alloc_local((1,), "int32")

                if T.cuda.elect_sync():
                    while sched.valid():
                        task_blocks()
                        n = T.meta_var(n_blk[0])
                        for t in T.serial(T.min(SS, n)):
                            wait_kv()
                            for q in T.unroll(QS):
                                if t == 0:
                                    q_full.wait(q, q_ps.phase)
                                    T.ptx.tcgen05.fence__after_thread_sync()
                                qk(q, t, n, (tile_ps.stage + t) % SS)
                            release_kv()
                        for t in T.serial(T.max(n - SS, 0)):
                            # V of block t, then K of block t + SS, in the ring's order; the
                            # stages interleave so one stage's MMAs run during the other's softmax
                            wait_kv()
                            v_stage[0] = kv_ps.stage
                            kv_ps.advance()
                            wait_kv()
                            for q in T.unroll(QS):
                                pv(q, t, n, v_stage[0])
                                qk(q, t + SS, n, tile_ps.stage)
                            kv_empty.arrive(v_stage[0], cta_group=1)
                            release_kv()
                            p_ps.advance()
                            tile_ps.advance()
                        for t in T.serial(T.max(n - SS, 0), n):
                            wait_kv()
                            for q in T.unroll(QS):
                                pv(q, t, n, kv_ps.stage)
                            release_kv()
                            p_ps.advance()
                            tile_ps.advance()
                        q_ps.advance()
                        sched.next_tile()
            elif warp_in_wg == 2:
                # ---- TMA stores of the normalized O tiles ----
                epi_ps = PipelineState(1, phase=0)
                if T.cuda.elect_sync():
                    while sched.valid():
                        for q in T.unroll(QS):
                            epi_full.wait(q, epi_ps.phase)
                            O4 = Os.view(QS, SPT, G, D)
                            s0 = T.meta_var(m_start + q * SPT)
                            for ks in T.unroll(SLABS):
                                Tx.copy_async(O[batch, s0:s0 + SPT, kv_head * G:kv_head * G + G, ks * 64:ks * 64 + 64],
                                              O4[q, :, :, ks * 64:ks * 64 + 64], dispatch="tma_explicit")
                            T.ptx.cp.async_.bulk.commit_group()
                            T.ptx.cp.async_.bulk.wait_group.read(0)
                            epi_empty.arrive(q)
                        epi_ps.advance()
                        sched.next_tile()
                    T.ptx.cp.async_.bulk.wait_group(0)
        elif warp_now[0] >> 2 == WG_CORR:
            # ---- correction: rescale O in TMEM where a row's reference moved ----
            if CORR_REGS < START_REGS:
                T.ptx.setmaxnreg.dec.sync.aligned.u32(CORR_REGS)
            refresh()
            sched.init(bx)
            stats_ps = PipelineState(1, phase=0)
            pv_done = T.alloc_local((1,), "int32")  # P V MMAs of earlier tasks, per stage
            pv_done[0] = 0
            acc_scale = T.alloc_local((1,), f32)
            o_reg = T.alloc_local((CORRECTION_COLS,), f32)
            o_wg = o_reg.view(128, CORRECTION_COLS, layout=corr_layout)
            for q in T.unroll(QS):
                p_full.arrive(q)  # O holds nothing yet: the first P V may overwrite it
            while sched.valid():
                task_blocks()
                n = T.meta_var(n_blk[0])
                for t in T.serial(1, n):
                    for q in T.unroll(QS):
                        stats_full.wait(q, stats_ps.phase)
                        acc_scale[0] = scale_box[q, row]
                        o_full.wait(q, (pv_done[0] + t - 1) % 2)
                        T.ptx.tcgen05.fence__after_thread_sync()
                        # the warp's 32 rows go through TMEM only if one of them needs it
                        if T.cuda.any_sync(T.uint32(0xFFFFFFFF), T.cast(acc_scale[0] != T.float32(1), "int32")) != 0:
                            for c in T.unroll(D // CORRECTION_COLS):
                                col = T.meta_var(O_COL + q * D + c * CORRECTION_COLS)
                                Tx.wg.copy_async(o_wg[:, :], tmem[:, col:col + CORRECTION_COLS])
                                T.ptx.tcgen05.wait__ld.sync.aligned()
                                for i in T.unroll(CORRECTION_COLS):
                                    o_reg[i] = o_reg[i] * acc_scale[0]
                                Tx.wg.copy_async(tmem[:, col:col + CORRECTION_COLS], o_wg[:, :])
                            T.ptx.tcgen05.wait__st.sync.aligned()
                        T.ptx.tcgen05.fence__before_thread_sync()
                        p_full.arrive(q)
                        stats_empty.arrive(q)
                    stats_ps.advance()
                for q in T.unroll(QS):
                    o_full.wait(q, (pv_done[0] + n - 1) % 2)  # the task's last P V
                    p_full.arrive(q)  # the next task's first P V may start a new O
                pv_done[0] = pv_done[0] + n
                sched.next_tile()
        else:
            # ---- softmax of query stage q = wg_id, then its epilogue ----
            if SOFTMAX_REGS > START_REGS:
                T.ptx.setmaxnreg.inc.sync.aligned.u32(SOFTMAX_REGS)
            refresh()
            sched.init(bx)
            q = T.meta_var(warp_now[0] >> 2)
            s_ps = PipelineState(SS, phase=0)
            stats_ps = PipelineState(1, phase=1)
            epi_ps = PipelineState(1, phase=1)
            final_ps = PipelineState(1, phase=0)
            row_max = T.alloc_local((1,), f32)  # the reference the running sums are relative to
            row_sum = T.alloc_local((1,), f32)
            acc_scale = T.alloc_local((1,), f32)
            bias = T.alloc_local((1,), f32)
            whole = T.alloc_local((1,), "int32")
            log_sum = T.alloc_local((1,), f32)
            score = T.alloc_local((BN,), f32)
            score_wg = score.view(128, BN, layout=row_layout)
            prob = T.alloc_local((LD_COLS,), dt)
            prob_wg = prob.view(128, LD_COLS, layout=ld_layout)
            o_reg = T.alloc_local((LD_COLS,), f32)
            o_wg = o_reg.view(128, LD_COLS, layout=ld_layout)
            o_out = T.alloc_local((LD_COLS,), dt)
            o_words = T.decl_buffer((LD_COLS // 2,), "uint32", data=o_out.data)  # packed pairs
            seq = T.meta_var(m_start + q * SPT + row // G)

            @T.inline
            def softmax_step(t, n, masked):
                s_full.wait(q * SS + s_ps.stage, s_ps.phase)
                T.ptx.tcgen05.fence__after_thread_sync()
                s_col = T.meta_var((q * SS + s_ps.stage) * BN)
                for c in T.unroll(BN // LD_COLS):
                    Tx.wg.copy_async(score_wg[:, c * LD_COLS:c * LD_COLS + LD_COLS],
                                     tmem[:, s_col + c * LD_COLS:s_col + c * LD_COLS + LD_COLS])
                T.ptx.tcgen05.wait__ld.sync.aligned()
                if masked:
                    key0 = T.meta_var((n - 1 - t) * BN)
                    if CAUSAL:
                        limit = T.meta_var(T.min(seqlen_k, seq + seqlen_k - seqlen_q + 1) - key0)
                    else:
                        limit = T.meta_var(seqlen_k - key0)
                    for i in T.unroll(BN):
                        score[i] = T.Select(i < limit, score[i], T.float32(NEG_INF))
                blk_max = T.alloc_local((1,), f32)
                blk_max[0] = score[0]
                for i in T.unroll(1, BN):
                    blk_max[0] = T.max(blk_max[0], score[i])
                # FA4's conditional rescale: keep the old reference unless the block's max
                # exceeds it by more than the threshold (in log2 units).
                if t == 0:
                    row_max[0] = blk_max[0]
                    acc_scale[0] = T.float32(1)
                else:
                    cand = T.meta_var(T.max(row_max[0], blk_max[0]))
                    delta = T.meta_var((row_max[0] - T.if_then_else(cand == T.float32(NEG_INF), T.float32(0), cand)) * SCALE_LOG2)
                    if delta >= -threshold:
                        acc_scale[0] = T.float32(1)
                    else:
                        T.ptx.ex2.approx.ftz.f32(acc_scale[0], delta)
                        row_max[0] = cand
                    stats_empty.wait(q, stats_ps.phase)
                    scale_box[q, row] = acc_scale[0]
                    stats_full.arrive(q)
                    stats_ps.advance()
                bias[0] = -T.if_then_else(row_max[0] == T.float32(NEG_INF), T.float32(0), row_max[0]) * SCALE_LOG2
                blk_sum = T.alloc_local((1,), f32)
                blk_sum[0] = T.float32(0)
                p_col = T.meta_var(2 * s_col + BN)  # P: the upper half of its S tile, 16-bit
                # P goes to TMEM a chunk at a time, so only one chunk of it lives in registers
                for c in T.unroll(BN // LD_COLS):
                    for k in T.unroll(LD_COLS):
                        i = T.meta_var(c * LD_COLS + k)
                        x = T.meta_var(score[i] * T.float32(SCALE_LOG2) + bias[0])  # one FMA
                        if not masked and i % 16 >= 16 - EMU:
                            # 2^x on the FMA units: 2^floor(x) into the exponent of 2^frac(x)
                            xc = T.meta_var(T.max(x, T.float32(-127)))
                            T.ptx.cvt.rmi.s32.f32(whole[0], xc)
                            frac = T.meta_var(xc - T.cast(whole[0], "float32"))
                            poly = T.meta_var(((T.float32(EXP2_C3) * frac + T.float32(EXP2_C2)) * frac + T.float32(EXP2_C1)) * frac + T.float32(1))
                            score[i] = T.cuda.uint_as_float(T.cuda.float_as_uint(poly) + T.shift_left(T.cast(whole[0], "uint32"), T.uint32(23)))
                        else:
                            T.ptx.ex2.approx.ftz.f32(score[i], x)
                        blk_sum[0] = blk_sum[0] + score[i]
                        prob[k] = T.cast(score[i], dt)
                    Tx.wg.copy_async(tmem16[:, p_col + c * LD_COLS:p_col + c * LD_COLS + LD_COLS],
                                     prob_wg[:, :])
                T.ptx.tcgen05.wait__st.sync.aligned()
                T.ptx.tcgen05.fence__before_thread_sync()
                p_full.arrive(q)
                if t == 0:
                    row_sum[0] = blk_sum[0]
                else:
                    row_sum[0] = row_sum[0] * acc_scale[0] + blk_sum[0]
                s_ps.advance()

            while sched.valid():
                task_blocks()
                n = T.meta_var(n_blk[0])
                for t in T.serial(n):
                    if t < n_masked[0]:
                        softmax_step(t, n, True)
                    else:
                        softmax_step(t, n, False)
                # ---- epilogue: O / row_sum -> shared -> TMA store; LSE to global ----
                o_final.wait(q, final_ps.phase)
                T.ptx.tcgen05.fence__after_thread_sync()
                final_ps.advance()
                epi_empty.wait(q, epi_ps.phase)
                bias[0] = T.if_then_else(row_sum[0] > T.float32(0), T.float32(1) / row_sum[0], T.float32(0))
                # a fresh warp index per task keeps ptxas from hoisting the staging addresses
                # below out of the task loop, where they would hold registers the scores need
                refresh_warp()
                for c in T.unroll(D // LD_COLS):
                    col = T.meta_var(O_COL + q * D + c * LD_COLS)
                    Tx.wg.copy_async(o_wg[:, :], tmem[:, col:col + LD_COLS])
                    T.ptx.tcgen05.wait__ld.sync.aligned()
                    for i in T.unroll(LD_COLS):
                        o_out[i] = T.cast(o_reg[i] * bias[0], dt)  # bias holds 1/row_sum here
                    # 16-byte stores: 8 consecutive columns stay together under the swizzle
                    for g in T.unroll(LD_COLS // 8):
                        T.ptx.st.shared.v4.b32(Os.ptr_to([q, row, c * LD_COLS + g * 8]),
                                               o_words[4 * g], o_words[4 * g + 1],
                                               o_words[4 * g + 2], o_words[4 * g + 3])
                T.ptx.fence.proxy.async_.shared__cta()
                T.ptx.tcgen05.fence__before_thread_sync()
                epi_full.arrive(q)
                epi_ps.advance()
                if seq < seqlen_q:
                    T.ptx.lg2.approx.ftz.f32(log_sum[0], row_sum[0])
                    LSE[batch, kv_head * G + row % G, seq] = T.if_then_else(
                        row_sum[0] > T.float32(0),
                        (row_max[0] * SCALE_LOG2 + log_sum[0]) * LN2,
                        T.float32(float("inf")))
                sched.next_tile()

        # ---- teardown: every TMEM reader is done before the free ----
        T.cuda.cta_sync()
        refresh_warp()
        if warp_now[0] == 0:
            T.ptx["tcgen05.dealloc.cta_group::1.sync.aligned.b32"](
                tmem_addr[0], T.uint32(TMEM_COLUMNS))
    # fmt: on

    return fa4
