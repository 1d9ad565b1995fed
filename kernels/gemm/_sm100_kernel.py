"""The TVMScript body of the sm_100a GEMM template (see kernels/gemm/sm100.py).

Kept in its own module because TVMScript parses the kernel from this file's source.
Python-level `if` on config values is folded at parse time, so each config compiles only
the machinery it uses.
"""

from __future__ import annotations

import tvm
from tvm.backend.cuda.lang.pipeline import MBarrier, PipelineState, TCGen05Bar, TMABar
from tvm.backend.cuda.lang.tile_scheduler import ClusterPersistentScheduler2D
from tvm.backend.cuda.tile_primitive.tma_utils import SwizzleMode, mma_shared_layout
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx
from tvm.tirx.layout import S, TCol, TileLayout, TLane, tid_in_wg


def _swizzle_for_row(row_bytes: int) -> SwizzleMode:
    if row_bytes % 128 == 0:
        return SwizzleMode.SWIZZLE_128B_ATOM
    if row_bytes % 64 == 0:
        return SwizzleMode.SWIZZLE_64B_ATOM
    return SwizzleMode.SWIZZLE_32B_ATOM


def make_kernel(cfg, M: int, N: int, K: int, dtype: str, launch: dict, fixed_group_m=None):
    BLK_M, TMEM_COLUMNS, PRODUCER_REGS = cfg.blk_m, cfg.tmem_alloc_columns, cfg.producer_regs
    ab_type = tvm.DataType(dtype)
    acc_type = tvm.DataType("float32")
    ELEM_BYTES = 2

    CG = cfg.cta_group
    CLUSTER = cfg.cluster
    MULTICAST = cfg.multicast
    CONSUMERS = cfg.consumers
    BLK_N, BLK_K, STAGES = cfg.blk_n, cfg.blk_k, cfg.stages
    MMA_N = cfg.mma_n
    EPI_N, EPI_STAGES, EPI_LD = cfg.epi_n, cfg.epi_stages, cfg.epi_ld
    EPI_CHUNKS = MMA_N // EPI_N
    EPI_SLAB = min(EPI_N, 64)  # a TMA box row is at most one 128-byte swizzle atom
    EPI_SLABS = EPI_N // EPI_SLAB
    K_TILES = (K + BLK_K - 1) // BLK_K
    NUM_CTAS = launch["ctas"]
    NUM_CLUSTERS = launch["clusters"]
    NUM_M_TILES = (M + cfg.tile_m - 1) // cfg.tile_m
    NUM_N_TILES = (N + cfg.tile_n - 1) // cfg.tile_n
    # Each CTA loads B_ROWS rows of B per stage: all of its blk_n, or its half when multicasting.
    B_ROWS = BLK_N // 2 if MULTICAST else BLK_N
    # Bytes that land in the barrier-owning CTA's shared memory per stage (both CTAs' for a pair).
    STAGE_TX = CG * (CONSUMERS * BLK_M + BLK_N) * BLK_K * ELEM_BYTES
    PEER_MASK = 3  # both CTAs of a 2-CTA cluster
    EPI_REGS = cfg.epilogue_regs

    A_layout = mma_shared_layout(ab_type, SwizzleMode.SWIZZLE_128B_ATOM,
                                 (STAGES, CONSUMERS, BLK_M, BLK_K))
    B_layout = mma_shared_layout(ab_type, SwizzleMode.SWIZZLE_128B_ATOM, (STAGES, BLK_N, BLK_K))
    D_layout = mma_shared_layout(ab_type, _swizzle_for_row(EPI_N * ELEM_BYTES),
                                 (CONSUMERS, EPI_STAGES, BLK_M, EPI_N))

    # fmt: off
    @T.prim_func
    def gemm(
        A: T.Buffer((M, K), ab_type),
        B: T.Buffer((N, K), ab_type),
        D: T.Buffer((M, N), ab_type),
        group_m: T.int32,
    ):
        T.device_entry()
        # One block per SM: ptxas then knows every thread's register count at entry, the count
        # setmaxnreg trades from. Without it ptxas ignores setmaxnreg (C7508) and capped some
        # configs at 64 registers, which spilled 24-124 B (the 2026-11-23 compile sweep).
        T.attr({"tirx.launch_bounds_min_blocks_per_sm": 1})
        bx = T.cta_id([NUM_CTAS])
        if CLUSTER == 2:
            cbx, cby = T.cta_id_in_cluster([2, 1])
        else:
            cbx = T.meta_var(0)
        wg_id = T.warpgroup_id([CONSUMERS + 1])
        warp_id = T.warp_id_in_wg([4])
        lane_id = T.lane_id([32])
        # Consumer index of this MMA warp / epilogue warpgroup. A literal 0 when there is one
        # consumer: indexing a size-1 shared dimension by a variable defeats TMA's alignment proof.
        if CONSUMERS == 1:
            mma_c = T.meta_var(0)
            epi_c = T.meta_var(0)
        else:
            mma_c = T.meta_var(warp_id)
            epi_c = T.meta_var(wg_id)

        pool = T.SMEMPool()
        tmem_addr = pool.alloc((1,), "uint32")
        tma2mma = TMABar(pool, STAGES)  # A/B stage landed
        mma2tma = TCGen05Bar(pool, STAGES)  # A/B stage consumed by every MMA reading it
        mma2ld = TCGen05Bar(pool, CONSUMERS)  # a consumer's accumulator is complete
        ld2mma = MBarrier(pool, CONSUMERS)  # a consumer's accumulator was read out
        pool.move_base_to(1024)
        Asmem = pool.alloc((STAGES, CONSUMERS, BLK_M, BLK_K), ab_type, layout=A_layout)
        Bsmem = pool.alloc((STAGES, BLK_N, BLK_K), ab_type, layout=B_layout)
        Dsmem = pool.alloc((CONSUMERS, EPI_STAGES, BLK_M, EPI_N), ab_type, layout=D_layout)

        tma2mma.init(1)
        # Every consumer's MMA releases the stage; with multicast, the peer's MMAs must also be
        # done, since the peer's TMA writes its half of B into this CTA's stage.
        mma2tma.init(CONSUMERS * (2 if MULTICAST else 1))
        mma2ld.init(1)
        ld2mma.init(128 * CG)  # every epilogue thread of each CTA in the MMA pair
        pool.commit()

        if wg_id == 0:
            if warp_id == 0:
                T.ptx[f"tcgen05.alloc.cta_group::{CG}.sync.aligned.shared::cta.b32"](
                    T.address_of(tmem_addr[0]), T.uint32(TMEM_COLUMNS))
        T.ptx.fence.proxy.async_.shared__cta()
        T.ptx.fence.mbarrier_init.release.cluster()
        if CLUSTER == 2:
            T.cuda.cluster_sync()
        else:
            T.cuda.cta_sync()

        tmem = T.decl_buffer((128, TMEM_COLUMNS), acc_type, scope="tmem", allocated_addr=0,
                             layout=TileLayout(S[(128, TMEM_COLUMNS) : (1@TLane, 1@TCol)]))

        # The raster group is the launch argument (one binary serves every group_m), clamped:
        # a group of 0 would divide by zero in the tile-index math.
        sched = ClusterPersistentScheduler2D(
            "ts", num_m_tiles=NUM_M_TILES, num_n_tiles=NUM_N_TILES,
            l2_group_size=T.max(group_m, 1) if fixed_group_m is None else fixed_group_m,
            num_clusters=NUM_CLUSTERS)
        sched.init(bx // CLUSTER)
        m_idx = T.meta_var(sched.m_idx)
        n_idx = T.meta_var(sched.n_idx)

        if CG == 2:
            tma2mma_bar = tma2mma.remote_view(0)  # CTA 0's barrier tracks both CTAs' loads
            ld2mma_bar = ld2mma.remote_view(0)  # CTA 0's MMA waits for both CTAs' epilogues
        else:
            tma2mma_bar = tma2mma
            ld2mma_bar = ld2mma

        if wg_id == CONSUMERS:
            T.ptx.setmaxnreg.dec.sync.aligned.u32(PRODUCER_REGS)
            if warp_id == 3:
                # ---- TMA producer ----
                tma_ps = PipelineState(STAGES, phase=1)
                if T.cuda.elect_sync():
                    while sched.valid():
                        for kt in range(K_TILES):
                            mma2tma.wait(tma_ps.stage, tma_ps.phase)
                            k0 = T.meta_var(kt * BLK_K)
                            for c in T.unroll(CONSUMERS):
                                a_row = T.meta_var(((m_idx * CONSUMERS + c) * CLUSTER + cbx) * BLK_M)
                                # Explicit boxes, one per 128-byte swizzle slab: tma_auto cannot
                                # map A when M is 1 (it squeezes the row dimension away).
                                for ks in T.unroll(BLK_K // 64):
                                    Tx.copy_async(Asmem[tma_ps.stage, c, :, ks * 64:ks * 64 + 64],
                                                  A[a_row:a_row + BLK_M, k0 + ks * 64:k0 + ks * 64 + 64],
                                                  dispatch="tma_explicit", cta_group=CG,
                                                  mbar=tma2mma_bar.ptr_to([tma_ps.stage]))
                            b_row = T.meta_var(n_idx * MMA_N + cbx * B_ROWS)
                            if MULTICAST:
                                # Half the rows of a stage are contiguous only within one
                                # 64-element K slab of the swizzled layout: one copy per slab.
                                s_row = T.meta_var(cbx * B_ROWS)
                                for ks in T.unroll(BLK_K // 64):
                                    Tx.copy_async(Bsmem[tma_ps.stage, s_row:s_row + B_ROWS, ks * 64:ks * 64 + 64],
                                                  B[b_row:b_row + B_ROWS, k0 + ks * 64:k0 + ks * 64 + 64],
                                                  dispatch="tma_auto", cta_group=1,
                                                  cta_mask=PEER_MASK,
                                                  mbar=tma2mma.ptr_to([tma_ps.stage]))
                            else:
                                Tx.copy_async(Bsmem[tma_ps.stage, :, :],
                                              B[b_row:b_row + B_ROWS, k0:k0 + BLK_K],
                                              dispatch="tma_auto", cta_group=CG,
                                              mbar=tma2mma_bar.ptr_to([tma_ps.stage]))
                            if CG == 2:
                                if cbx == 0:
                                    tma2mma_bar.arrive(tma_ps.stage, STAGE_TX)
                            else:
                                tma2mma.arrive(tma_ps.stage, STAGE_TX)
                            tma_ps.advance()
                        sched.next_tile()
            elif warp_id < CONSUMERS:
                # ---- MMA issuer of consumer `mma_c` (CTA 0 issues for the pair) ----
                mma_ps = PipelineState(STAGES, phase=0)
                acc_ps = PipelineState(1, phase=1)

                @T.inline
                def issue_mmas():
                    if T.cuda.elect_sync():
                        while sched.valid():
                            ld2mma.wait(mma_c, acc_ps.phase)
                            acc_ps.advance()
                            T.ptx.tcgen05.fence__after_thread_sync()
                            for kt in range(K_TILES):
                                tma2mma.wait(mma_ps.stage, mma_ps.phase)
                                T.ptx.tcgen05.fence__after_thread_sync()
                                Tx.gemm_async(tmem[:, mma_c * MMA_N:mma_c * MMA_N + MMA_N],
                                              Asmem[mma_ps.stage, mma_c, :, :],
                                              Bsmem[mma_ps.stage, :, :],
                                              accum=(kt != 0), dispatch="tcgen05", cta_group=CG)
                                if CLUSTER == 2:
                                    mma2tma.arrive(mma_ps.stage, cta_group=CG, cta_mask=PEER_MASK)
                                else:
                                    mma2tma.arrive(mma_ps.stage, cta_group=CG)
                                mma_ps.advance()
                            if CG == 2:
                                mma2ld.arrive(mma_c, cta_group=CG, cta_mask=PEER_MASK)
                            else:
                                mma2ld.arrive(mma_c, cta_group=CG)
                            sched.next_tile()

                if CG == 2:
                    if cbx == 0:
                        issue_mmas()
                else:
                    issue_mmas()
        else:
            # ---- epilogue of consumer `epi_c`: TMEM -> registers -> shared -> TMA store ----
            T.ptx.setmaxnreg.inc.sync.aligned.u32(EPI_REGS)
            acc_ps = PipelineState(1, phase=0)
            out_h = T.alloc_local((EPI_N,), ab_type)
            while sched.valid():
                mma2ld.wait(epi_c, acc_ps.phase)
                acc_ps.advance()
                T.ptx.tcgen05.fence__after_thread_sync()
                d_row = T.meta_var(((m_idx * CONSUMERS + epi_c) * CLUSTER + cbx) * BLK_M)
                for i in T.unroll(EPI_CHUNKS):
                    # The chunk comes out of TMEM in EPI_LD-column loads, each cast to 16 bits
                    # at once, so only EPI_LD fp32 values are live next to the packed chunk.
                    for j in T.unroll(EPI_N // EPI_LD):
                        acc = T.alloc_local((EPI_LD,), acc_type)
                        acc_wg = acc.view(128, EPI_LD, layout=TileLayout(S[(128, EPI_LD) : (1@tid_in_wg, 1)]))
                        col = T.meta_var(epi_c * MMA_N + i * EPI_N + j * EPI_LD)
                        Tx.wg.copy_async(acc_wg[:], tmem[:, col:col + EPI_LD])
                        T.ptx.tcgen05.wait__ld.sync.aligned()
                        Tx.cast(out_h[j * EPI_LD:j * EPI_LD + EPI_LD], acc[:])
                    if i == EPI_CHUNKS - 1:
                        # The accumulator is in registers: the MMA may start the next tile.
                        T.ptx.tcgen05.fence__before_thread_sync()
                        ld2mma_bar.arrive(epi_c)
                    buf = T.meta_var(i % EPI_STAGES)
                    if warp_id == 0:
                        if lane_id == 0:
                            # The store that last read this buffer must be done reading it.
                            T.ptx.cp.async_.bulk.wait_group.read(EPI_STAGES - 1)
                    T.cuda.warpgroup_sync(wg_id + 10)
                    Tx.copy(Dsmem[epi_c, buf, warp_id * 32 + lane_id, :], out_h[:])
                    T.ptx.fence.proxy.async_.shared__cta()
                    T.cuda.warpgroup_sync(wg_id + 10)
                    if warp_id == 0:
                        if lane_id == 0:
                            d_col = T.meta_var(n_idx * MMA_N + i * EPI_N)
                            for js in T.unroll(EPI_SLABS):  # explicit boxes, as for A
                                c0 = T.meta_var(js * EPI_SLAB)
                                Tx.copy_async(D[d_row:d_row + BLK_M, d_col + c0:d_col + c0 + EPI_SLAB],
                                              Dsmem[epi_c, buf, :, c0:c0 + EPI_SLAB],
                                              dispatch="tma_explicit")
                            T.ptx.cp.async_.bulk.commit_group()
                sched.next_tile()
            if warp_id == 0:
                if lane_id == 0:
                    T.ptx.cp.async_.bulk.wait_group(0)

        # ---- teardown: every TMEM reader of the cluster is done before the free ----
        if CLUSTER == 2:
            T.cuda.cluster_sync()
        else:
            T.cuda.cta_sync()
        if wg_id == 0:
            if warp_id == 0:
                T.ptx[f"tcgen05.relinquish_alloc_permit.cta_group::{CG}.sync.aligned"]()
                T.ptx[f"tcgen05.dealloc.cta_group::{CG}.sync.aligned.b32"](
                    tmem_addr[0], T.uint32(TMEM_COLUMNS))
    # fmt: on

    return gemm
