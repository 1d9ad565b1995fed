"""Hopper (sm_90a) GEMM template: D = A @ B^T, A (M x K), B (N x K), both K-major.

Warp-specialized: warpgroup 0 is the producer (one thread issues TMA loads into a
`stages`-deep shared-memory ring guarded by full/empty mbarriers), warpgroups 1..C are
consumers that issue `wgmma` on their `wg_m` rows of the CTA tile, cooperatively on one
tile (three consumers of 64 rows make the 192-row tiles that fill the SMs' waves where
128-row ones leave a last wave mostly idle) or on its columns (`consumer_split="n"`, each
consumer all wg_m rows: 192-row tiles of 3 m64 atoms in two consumers' registers, as
cuBLAS's coopB kernels), or, ping-pong, two consumers on tiles of their own
taken in turn, an order barrier each keeping their mainloops apart so that one's epilogue runs
under the other's wgmmas. `setmaxnreg` moves registers from the producer to the consumers.

Knobs (see GemmConfig) cover tile sizes, depth, 1x1/2x1/1x2 clusters with TMA multicast
of the operand the pair shares, persistent scheduling with grouped raster order, a
register or shared-memory + TMA-store epilogue, swap-AB (compute D^T = B @ A^T: the weights
on the 64-row wgmma side, M on the fine-grained wgmma N, as cuBLAS's kernels run), and
split-K: a cluster of `split_k` CTAs each takes a contiguous share of one tile's K tiles,
parks its f32 partial sums in its own (now idle) ring, and after a cluster barrier every CTA
reduces and stores 1/split_k of the tile, reading its peers' partials through distributed
shared memory (no workspace, no second kernel). Stream-K: one persistent cluster per SM (pair
of SMs) shares out the last waves' K tiles equally; a cluster's CTAs walk the same cluster
tiles and K tiles in step, so a pair keeps its multicast; partials meet in the kernel's
scratch buffers in global memory (`scratch_*` parameters, supplied by the launcher).
`l2_evict="first"` marks the operand loads evict-first in L2.

Tails: TMA zero-fills out-of-bounds loads (ragged M, N, K), the register epilogue guards
every store, the TMA store clips at the tensor edge.
"""

from __future__ import annotations

from tvm import tirx as tir
from tvm.ir import PointerType, PrimType
from tvm.backend.cuda.lang.pipeline import MBarrier, PipelineState, TMABar
from tvm.backend.cuda.tile_primitive.tma_utils import SwizzleMode, mma_shared_layout
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx

from ._sm90_config import (  # noqa: F401  (re-exported: the template's public surface)
    DTYPES,
    ELEM_BYTES,
    H100_SMS,
    GemmConfig,
    Geometry,
    accumulator_regs,
    check_shape,
    epilogue_chunk,
    epilogue_starts,
    geometry,
    multicast_slices,
    smem_bytes,
    stream_k_split,
    wgmma_n,
)
from ._sm90_wgmma import (
    ATOM_ROWS_BYTES,
    COL_BLOCK,
    SWIZZLE_128B,
    WGMMA_K,
    WGMMA_M,
    acc_coords,
    fence_accumulators,
    smem_desc_offset,
    wgmma_ss,
)

_FENCE4_SRC = ('__device__ __forceinline__ void acc_fence4(float& r0, float& r1, float& r2, '
               'float& r3) { asm volatile("" : "+f"(r0), "+f"(r1), "+f"(r2), "+f"(r3) :: '
               '"memory"); }')
PRODUCER_REGS = 40
# setmaxnreg budgets: (producer + consumers) x 128 threads x regs <= 65536
CONSUMER_REGS = {1: 240, 2: 232, 3: 152}


def _tile_coords(t, g: Geometry, cfg: GemmConfig):
    """Cluster tile index t -> (cluster tile row, cluster tile col), grouped raster."""
    outer, inner = (g.cluster_tiles_m, g.cluster_tiles_n)
    if cfg.raster == "n":
        outer, inner = inner, outer
    grp = min(cfg.group, outer)
    span = grp * inner
    first = (t // span) * grp
    size = T.min(grp, outer - first)
    rem = t % span
    o, i = first + rem % size, rem // size
    return (o, i) if cfg.raster == "m" else (i, o)


def cluster_sync():
    """barrier.cluster with release/acquire, spelled so the compiler also keeps memory accesses
    on their side of it (T.cuda.cluster_sync's asm has no memory clobber): the split-K partials
    are plain shared-memory stores and DSMEM loads."""
    T.evaluate(T.ptx.barrier.cluster.arrive.release.aligned())
    T.evaluate(T.ptx.barrier.cluster.wait.acquire.aligned())


_EPI_SWIZZLE = {64: SwizzleMode.SWIZZLE_128B_ATOM, 32: SwizzleMode.SWIZZLE_64B_ATOM,
                16: SwizzleMode.SWIZZLE_32B_ATOM}  # by epilogue chunk width: one swizzle row


def build_gemm(M: int, N: int, K: int, dtype: str, cfg: GemmConfig, num_sms: int = H100_SMS):
    """The TIRx PrimFunc for one (shape, config). Legality is the plugin's job; this
    asserts only what would otherwise miscompile."""
    check_shape(M, N, K, dtype)
    g = geometry(M, N, K, cfg, num_sms)
    C, WG_M, BLK_M, BLK_N, BLK_K = cfg.consumers, cfg.wg_m, cfg.blk_m, cfg.blk_n, cfg.blk_k
    STAGES, CS, MC, SK = cfg.stages, cfg.cluster_size, cfg.multicast_size, cfg.split_k
    SWAP, EPI_TMA, STREAM_K = cfg.swap_ab, cfg.epilogue == "tma", cfg.stream_k
    PINGPONG = cfg.pingpong
    SPLIT_N, CN = cfg.consumer_split == "n", cfg.consumer_cols
    M_ATOMS = WG_M // WGMMA_M
    PART = wgmma_n(BLK_N)  # rows of one TMA box of the B tile
    MMA_N = wgmma_n(CN)  # columns of one wgmma
    ACC = accumulator_regs(cfg)
    STAGE_BYTES = (BLK_M + BLK_N) * BLK_K * ELEM_BYTES
    X_STAGE_UNITS = BLK_M * BLK_K * ELEM_BYTES // 16  # descriptor units per ring stage
    Y_STAGE_UNITS = BLK_N * BLK_K * ELEM_BYTES // 16
    # Multicast parts: rank r of MC CTAs loads rows [r*H, (r+1)*H) of the shared tile for all
    # (B tiles whose atoms do not divide evenly: the first ranks one atom more, Y_BIG rows).
    HX = BLK_M // cfg.cluster_n
    Y_BIG, HY, Y_BIGS = multicast_slices(BLK_N, cfg.cluster_m) if cfg.cluster_m > 1 \
        else (0, BLK_N, 0)
    MCAST = (1 << MC) - 1
    NWG = C + 1
    ROWS, COLS, KT, TOTAL, NCL = g.rows, g.cols, g.k_tiles, g.total, g.clusters
    CREGS = CONSUMER_REGS[C]
    REDUCE_BARRIER = C + 1  # named barrier of all consumers (1..C are each warpgroup's own)
    SLICE = ACC // SK  # accumulators each split-K rank reduces and stores
    assert SK == 1 or (not cfg.persistent and not EPI_TMA and MC == 1 and SLICE % 2 == 0
                       and KT >= SK), "split-K: one tile per cluster, register epilogue"
    assert not STREAM_K or (cfg.persistent and SK == 1), "stream-K: persistent, no split-K"
    assert not PINGPONG or (C == 2 and cfg.persistent and SK == 1 and not STREAM_K), \
        "ping-pong: two consumers, persistent, neither split-K nor stream-K"
    assert not SPLIT_N or (C > 1 and not PINGPONG and SK == 1 and not STREAM_K
                           and BLK_N % (8 * C) == 0), \
        "column split: cooperative consumers, 8-column shares, neither split-K nor stream-K"

    X_layout = mma_shared_layout(dtype, SwizzleMode.SWIZZLE_128B_ATOM, (STAGES, BLK_M, BLK_K))
    Y_layout = mma_shared_layout(dtype, SwizzleMode.SWIZZLE_128B_ATOM, (STAGES, BLK_N, BLK_K))
    EPI_W, EPI_BUFS = epilogue_chunk(cfg)
    if SWAP:  # staged as D holds it: EPI_W rows of M, the consumer's WG_M columns of N
        d_shape = (C * EPI_BUFS, EPI_W, WG_M)
        D_layout = mma_shared_layout(dtype, SwizzleMode.SWIZZLE_128B_ATOM, d_shape)
    else:
        d_shape = (C * EPI_BUFS, WG_M, EPI_W)
        D_layout = mma_shared_layout(dtype, _EPI_SWIZZLE[EPI_W], d_shape)

    def cta_tile(tile, rank):
        """(first row, first col) of this CTA's tile for cluster tile `tile`."""
        ctm, ctn = _tile_coords(tile, g, cfg)
        tm = ctm * cfg.cluster_m + (rank if cfg.cluster_m > 1 else 0)
        tn = ctn * cfg.cluster_n + (rank if cfg.cluster_n > 1 else 0)
        return tm * BLK_M, tn * BLK_N

    HINT = {"cache_hint": "evict_first"} if cfg.l2_evict == "first" else {}

    def load_stage(Xs, Ys, Xg, Yg, stage, r0, c0, k0, rank, bar):
        """TMA loads of one ring stage, one 64-column swizzle block at a time (a box row is at
        most 128 B); in a pair, each CTA loads its half of the shared tile for both CTAs."""
        for kb in range(0, BLK_K, COL_BLOCK):
            ks = k0 + kb
            if cfg.cluster_n > 1:
                Tx.copy_async(Xs[stage, rank * HX:rank * HX + HX, kb:kb + COL_BLOCK],
                              Xg[r0 + rank * HX:r0 + rank * HX + HX, ks:ks + COL_BLOCK],
                              dispatch="tma_explicit", mbar=bar, cta_mask=MCAST, **HINT)
            else:
                Tx.copy_async(Xs[stage, :, kb:kb + COL_BLOCK],
                              Xg[r0:r0 + BLK_M, ks:ks + COL_BLOCK], dispatch="tma_explicit",
                              mbar=bar, **HINT)
            if cfg.cluster_m > 1 and Y_BIGS:
                with T.If(rank < Y_BIGS):
                    with T.Then():
                        load_y_slice(Ys, Yg, stage, rank * Y_BIG, Y_BIG, c0, kb, ks, bar)
                    with T.Else():
                        load_y_slice(Ys, Yg, stage, Y_BIGS * Y_BIG + (rank - Y_BIGS) * HY, HY,
                                     c0, kb, ks, bar)
            elif cfg.cluster_m > 1:
                load_y_slice(Ys, Yg, stage, rank * HY, HY, c0, kb, ks, bar)
            else:  # a TMA box spans at most 256 rows: tiles wider than that load in parts
                for y0 in range(0, BLK_N, PART):
                    Tx.copy_async(Ys[stage, y0:y0 + PART, kb:kb + COL_BLOCK],
                                  Yg[c0 + y0:c0 + y0 + PART, ks:ks + COL_BLOCK],
                                  dispatch="tma_explicit", mbar=bar, **HINT)

    def load_y_slice(Ys, Yg, stage, y0, rows, c0, kb, ks, bar):
        """Rows [y0, y0 + rows) of the shared B tile, multicast to the cluster's CTAs."""
        Tx.copy_async(Ys[stage, y0:y0 + rows, kb:kb + COL_BLOCK],
                      Yg[c0 + y0:c0 + y0 + rows, ks:ks + COL_BLOCK], dispatch="tma_explicit",
                      mbar=bar, cta_mask=MCAST, **HINT)

    def issue_mma(acc, a_desc, b_desc, x_unit, y_unit, row_part, col_part, first_k):
        """All wgmmas of one K tile for this consumer's WG_M rows (the row_part-th) and CN
        columns (the col_part-th): per m64 atom, one wgmma per MMA_N columns (an m64nN fragment
        holds column block c in registers 4c..4c+3, so the parts' accumulators side by side
        are the consumer's whole fragment). Offsets of 8-row multiples are linear in the
        swizzled layout: a runtime part adds 8 descriptor units a row."""
        for kk in range(BLK_K // WGMMA_K):
            for j in range(M_ATOMS):
                a_off = smem_desc_offset(BLK_M, 0, kk * WGMMA_K) + j * WGMMA_M * 128 // 16
                a = a_desc + T.cast(x_unit + row_part * (WG_M * 128 // 16) + a_off, "uint64")
                scale_d = T.bool(True) if kk > 0 else first_k
                for y0 in range(0, CN, MMA_N):
                    b_off = smem_desc_offset(BLK_N, y0, kk * WGMMA_K)
                    b = b_desc + T.cast(y_unit + col_part * (CN * 128 // 16) + b_off, "uint64")
                    T.evaluate(wgmma_ss(dtype, MMA_N, acc, (j * CN + y0) // 2, a, b, scale_d))

    def release(empty, peer_empty, stage, warp, rank):
        """Lane 0 of each warp: hand a consumed stage back to every producer that writes into
        this CTA's ring, warp w to the CTA of rank `rank ^ w` (w = 0: its own). In fours,
        `peer_empty` is that CTA's first empty barrier, mapped once before the main loop: a
        mapa and a four-way branch each K tile had made the consumer's loop twice cuBLAS's
        length, and hoisting them ran 64-80-wide fours 1.03-1.07x faster (H200, held busy:
        studies/2026-11-29-h200-gemm-s30/release). Pairs map per K tile still: the H100
        store's pair entries were measured with that kernel."""
        with T.If(warp == 0):
            with T.Then():
                empty.arrive(stage)
        if MC == 4:
            with T.If(warp > 0):
                with T.Then():
                    T.evaluate(T.ptx.mbarrier.arrive.shared__cluster.b64(
                        peer_empty + T.cast(stage, "uint32") * 8))
        if MC == 2:
            with T.If(warp == 1):
                with T.Then():
                    empty.arrive(stage, remote=rank ^ 1)

    def map_into(ptr, rank):
        """The shared::cluster address of `ptr` in the CTA of `rank` (plain Python: the mapa
        lands in the calling frame, its scratch declared there)."""
        mapped = T.alloc_local([1], "uint32")
        T.evaluate(T.ptx.mapa.shared__cluster.u32(
            mapped[0], T.cuda.cvta_generic_to_shared(ptr), T.cast(rank, "uint32")))
        return mapped[0]

    def fence_acc(acc):
        """All accumulators, eight at a time, the last four alone where the consumer's columns
        are an odd multiple of 8 (here, not in the shared helper: the attention template's
        compile sweep is keyed by that file)."""
        whole = ACC - ACC % 8
        fence_accumulators(acc, whole)
        if ACC % 8:
            regs = [acc[whole + i] for i in range(4)]
            T.evaluate(T.cuda.func_call("acc_fence4", *regs, source_code=_FENCE4_SRC))

    def store_reg(D, acc, row0, col0, warp, lane, lo=0, hi=ACC):
        """Accumulators [lo, hi) -> global, guarded at the edges; D^T when swapped."""
        for idx in range(lo, hi, 2):
            j, i = divmod(idx, CN // 2)
            r, c = acc_coords(i, warp, lane)
            row, col = row0 + j * WGMMA_M + r, col0 + c
            v0, v1 = acc[idx], acc[idx + 1]
            if SWAP:  # D^T: the pair lands in two rows of D; M may be odd
                for dc, v in ((0, v0), (1, v1)):
                    with T.If(T.And(row < ROWS, col + dc < COLS)):
                        with T.Then():
                            T.buffer_store(D, T.Cast(dtype, v), [col + dc, row])
            else:  # N is a multiple of 8: col < N implies col + 1 < N; one 32-bit store
                with T.If(T.And(row < ROWS, col < COLS)):
                    with T.Then():
                        with T.vectorized(2) as v:
                            T.buffer_store(D, T.Cast(dtype, acc[idx + v]), [row, col + v])

    def park_partials(R, acc, consumer, tid):
        """Split-K: this thread's partial sums -> R[consumer, i, tid] (a warp's 32 words of one
        accumulator are contiguous: conflict-free here and for the peers' reads)."""
        for i in range(ACC):
            T.buffer_store(R, acc[i], [consumer, i, tid])

    def peer_partials(R, peer):
        """R as CTA `peer` of the cluster holds it: a generic pointer into its shared memory."""
        mapped = T.alloc_local((1,), "uint64")
        T.evaluate(T.ptx.mapa.u64(mapped[0], R.ptr_to([0, 0, 0]), T.uint32(peer)))
        ptr_type = PointerType(PrimType("float32"), "shared")
        ptr = tir.Var(f"partials_of_rank{peer}", ptr_type)
        T.Bind(T.reinterpret(ptr_type, mapped[0]), var=ptr)
        return T.decl_buffer(R.shape, "float32", data=ptr, scope="shared")

    def reduce_and_store(R, acc, consumer, tid, rank, D, row0, col0, warp, lane):
        """Split-K: rank q adds every peer's partials of accumulators [q*SLICE, (q+1)*SLICE)
        to its own and stores them, so the cluster writes the tile once, in SK parallel parts."""
        for q in range(SK):
            lo, hi = q * SLICE, (q + 1) * SLICE
            with T.If(rank == q):
                with T.Then():
                    for peer in range(SK):
                        if peer != q:
                            P = peer_partials(R, peer)
                            for i in range(lo, hi):
                                T.buffer_store(acc, acc[i] + P[consumer, i, tid], [i])
                    store_reg(D, acc, row0, col0, warp, lane, lo, hi)

    def store_chunks(D, Ds, acc, consumer, row0, col0, warp, lane):
        """TMA-store epilogue, one swizzle-row-wide column chunk at a time through EPI_BUFS
        shared buffers per consumer: chunk n waits only until the store of chunk n - EPI_BUFS
        has read its buffer, and the small staging area leaves shared memory to the ring.
        Each warp writes its 16 rows with `stmatrix` (four 8x8 matrices, 16 columns, per
        instruction: the accumulator fragment is stmatrix's register layout), not with 2-byte
        stores. TMA clips each box at the tensor's edge.

        Swapped (D^T in the accumulators: rows are N, columns M), `stmatrix.trans` writes each
        8x8 matrix transposed, so the chunk is staged as D holds it (EPI_W rows of M, WG_M
        columns of N) and stored by TMA in 64-column boxes, as the operands are loaded."""
        leader = T.And(warp == 0, lane == 0)
        frag = T.alloc_local((8,), dtype)  # one stmatrix.x4: 4 words of 2 elements
        words = frag.view("uint32")
        # lane L addresses row L % 8 of matrix L // 8: rows +8 for odd matrices, columns +8
        # for the second pair (transposed: a matrix's rows are the accumulators' columns)
        lane_row = warp * 16 + (lane // 8) % 2 * 8 + lane % 8
        lane_col = lane // 16 * 8
        t_row = lane // 16 * 8 + lane % 8
        t_col = warp * 16 + (lane // 8) % 2 * 8
        for n, start in enumerate(epilogue_starts(CN, EPI_W)):
            buf = consumer * EPI_BUFS + n % EPI_BUFS
            with T.If(leader):
                with T.Then():
                    T.evaluate(T.ptx.cp.async_.bulk.wait_group.read(EPI_BUFS - 1))
            T.evaluate(T.cuda.warpgroup_sync(1 + consumer))
            for j in range(M_ATOMS):
                for p in range(EPI_W // 16):
                    first = j * CN // 2 + start // 2 + p * 8
                    for k in range(8):
                        T.buffer_store(frag, T.Cast(dtype, acc[first + k]), [k])
                    if SWAP:
                        addr = Ds.ptr_to([buf, p * 16 + t_row, j * WGMMA_M + t_col])
                        T.evaluate(T.ptx.stmatrix.sync.aligned.m8n8.x4.trans.shared.b16(
                            addr, words[0], words[1], words[2], words[3]))
                    else:
                        addr = Ds.ptr_to([buf, j * WGMMA_M + lane_row, p * 16 + lane_col])
                        T.evaluate(T.ptx.stmatrix.sync.aligned.m8n8.x4.shared.b16(
                            addr, words[0], words[1], words[2], words[3]))
            T.evaluate(T.ptx.fence.proxy.async_.shared__cta())
            T.evaluate(T.cuda.warpgroup_sync(1 + consumer))
            with T.If(leader):
                with T.Then():
                    if SWAP:
                        m0 = col0 + start
                        for jb in range(0, WG_M, COL_BLOCK):
                            Tx.copy_async(D[m0:m0 + EPI_W, row0 + jb:row0 + jb + COL_BLOCK],
                                          Ds[buf, :, jb:jb + COL_BLOCK], dispatch="tma_explicit")
                    else:
                        Tx.copy_async(D[row0:row0 + WG_M, col0 + start:col0 + start + EPI_W],
                                      Ds[buf, :, :], dispatch="tma_explicit")
                    T.evaluate(T.ptx.cp.async_.bulk.commit_group())

    if STREAM_K:
        WHOLE_TILES, SHARED_ITERS = stream_k_split(g)
        TILE_LIMIT = WHOLE_TILES  # the persistent loop runs the whole tiles, then the shares
    else:
        TILE_LIMIT = TOTAL

    @T.inline
    def body(A, B, D, P, F):
        """The kernel; P (partials) and F (flags) are stream-K's scratch buffers, else None."""
        T.device_entry()
        if SPLIT_N:
            # One block per SM: ptxas then knows the register count at entry, which setmaxnreg
            # trades from (else C7508: ignored, and 192x208 column-split tiles spilled 968 B
            # under the 166 registers ptxas chose). The other configs' kernels stay as they
            # were measured: where their allocation falls short of the launch cap (one
            # consumer, wg_m=128) ptxas ignores setmaxnreg there too.
            T.attr({"tirx.launch_bounds_min_blocks_per_sm": 1})
        bx = T.cta_id([g.grid])
        if CS > 1:
            cbx, cby = T.cta_id_in_cluster([CS, 1])
        wg_id = T.warpgroup_id([NWG])
        warp = T.warp_id_in_wg([4])
        lane = T.lane_id([32])

        pool = T.SMEMPool()
        full = TMABar(pool, STAGES)
        empty = MBarrier(pool, STAGES)
        if PINGPONG:  # order[c]: the other consumer has passed its tile's last full barrier
            order = MBarrier(pool, 2)
        pool.move_base_to(1024)
        Xs = pool.alloc((STAGES, BLK_M, BLK_K), dtype, layout=X_layout)
        Ys = pool.alloc((STAGES, BLK_N, BLK_K), dtype, layout=Y_layout)
        if EPI_TMA:
            Ds = pool.alloc(d_shape, dtype, layout=D_layout)
        if SK > 1:  # the partials overlay the ring, idle once the last K tile is consumed
            pool.move_base_to(1024)
            R = pool.alloc((C, ACC, 128), "float32")
        full.init(1)
        empty.init((1 if PINGPONG else C) * MC)  # each stage's consumers, in every CTA it feeds
        if PINGPONG:
            order.init(1)
        pool.commit()
        T.ptx.fence.proxy.async_.shared__cta()
        T.ptx.fence.mbarrier_init.release.cluster()
        if CS > 1:
            cluster_sync()
        else:
            T.cuda.cta_sync()

        rank = T.meta_var(bx % CS)
        cluster_id = T.meta_var(bx // CS)
        # split-K: rank r of the cluster takes K tiles [r*KT/SK, (r+1)*KT/SK)
        k_first = T.meta_var(rank * KT // SK if SK > 1 else 0)
        k_count = T.meta_var((rank + 1) * KT // SK - rank * KT // SK if SK > 1 else KT)
        # stream-K: this cluster's share [share_begin, share_end) of the shared K tiles (each
        # of its CTAs computes its own part of every cluster tile in it)
        share_begin = T.meta_var(cluster_id * SHARED_ITERS // NCL if STREAM_K else 0)
        share_end = T.meta_var((cluster_id + 1) * SHARED_ITERS // NCL if STREAM_K else 0)
        # its last piece, when that ends inside a tile, is parked for the tile's finisher; it
        # runs first: it starts at K = 0 (or inside one tile), so the CTAs walk K nearly in step
        # and share the operand slabs through L2, and the partials are ready early
        park_begin = T.meta_var(
            T.max(share_begin, (share_end - 1) // KT * KT) if STREAM_K else 0)

        if wg_id == 0:
            # ---------------- producer ----------------
            T.ptx.setmaxnreg.dec.sync.aligned.u32(PRODUCER_REGS)
            if warp == 0:
                if T.cuda.elect_sync():
                    ps = PipelineState(STAGES, 1)

                    @T.inline
                    def produce(tile, k_first, k_count):
                        r0 = T.meta_var(cta_tile(tile, rank)[0])
                        c0 = T.meta_var(cta_tile(tile, rank)[1])
                        for kt in T.serial(k_count):
                            k0 = T.meta_var((k_first + kt) * BLK_K if SK > 1 or STREAM_K
                                            else kt * BLK_K)
                            empty.wait(ps.stage, ps.phase)
                            full.arrive(ps.stage, STAGE_BYTES)
                            bar = T.meta_var(full.ptr_to([ps.stage]))
                            if SWAP:
                                load_stage(Xs, Ys, B, A, ps.stage, r0, c0, k0, rank, bar)
                            else:
                                load_stage(Xs, Ys, A, B, ps.stage, r0, c0, k0, rank, bar)
                            ps.advance()

                    tile: T.int32 = cluster_id
                    while tile < TILE_LIMIT:
                        produce(tile, k_first, k_count)
                        tile = tile + NCL
                    if STREAM_K:
                        if share_end % KT > 0:
                            produce(WHOLE_TILES + park_begin // KT, park_begin % KT,
                                    share_end - park_begin)
                        it: T.int32 = share_begin
                        while it < T.Select(share_end % KT > 0, park_begin, share_end):
                            kf: T.int32 = it % KT
                            kc: T.int32 = T.min(KT - kf, share_end - it)
                            produce(WHOLE_TILES + it // KT, kf, kc)
                            it = it + kc
            if SK > 1:
                cluster_sync()  # the consumers' partials are parked
        else:
            # ---------------- consumers ----------------
            T.ptx.setmaxnreg.inc.sync.aligned.u32(CREGS)
            # a size-1 dimension indexed by a variable defeats the TMA alignment proof
            consumer = T.meta_var(wg_id - 1 if C > 1 else 0)
            # which wg_m rows and CN columns of the CTA tile are this consumer's: under
            # ping-pong, its tile's only ones; under a column split, all rows
            part = T.meta_var(0 if PINGPONG or SPLIT_N else consumer)
            col_part = T.meta_var(consumer if SPLIT_N else 0)
            acc = T.alloc_local((ACC,), "float32")
            a_desc = T.alloc_local((1,), "uint64")
            b_desc = T.alloc_local((1,), "uint64")
            T.cuda.wgmma.encode_matrix_descriptor(
                T.address_of(a_desc[0]), Xs.ptr_to([0, 0, 0]), 1, ATOM_ROWS_BYTES // 16,
                SWIZZLE_128B)
            T.cuda.wgmma.encode_matrix_descriptor(
                T.address_of(b_desc[0]), Ys.ptr_to([0, 0, 0]), 1, ATOM_ROWS_BYTES // 16,
                SWIZZLE_128B)
            peer_empty = T.meta_var(map_into(empty.ptr_to([0]), rank ^ warp) if MC == 4
                                    else None)
            cs = PipelineState(STAGES, 0)
            prev: T.int32 = 0

            @T.inline
            def consume(k_count):
                """The K tiles of one tile (or share of one) into acc."""
                for kt in T.serial(k_count):
                    full.wait(cs.stage, cs.phase)
                    fence_acc(acc)
                    T.ptx.wgmma.fence.sync.aligned()
                    issue_mma(acc, a_desc[0], b_desc[0], cs.stage * X_STAGE_UNITS,
                              cs.stage * Y_STAGE_UNITS, part, col_part, kt > 0)
                    T.ptx.wgmma.commit_group.sync.aligned()
                    T.ptx.wgmma.wait_group.sync.aligned(1)
                    fence_acc(acc)
                    if kt > 0:
                        # the previous stage's wgmmas are done: hand it back to every producer
                        # that writes into this CTA's ring
                        if lane == 0:
                            release(empty, peer_empty, prev, warp, rank)
                    prev = cs.stage
                    cs.advance()
                if PINGPONG:  # the other consumer's next tile may start its wgmmas now
                    if lane == 0:
                        if warp == 0:
                            order.arrive(1 - consumer)
                T.ptx.wgmma.wait_group.sync.aligned(0)
                fence_acc(acc)
                if lane == 0:
                    release(empty, peer_empty, prev, warp, rank)

            @T.inline
            def epilogue(tile):
                r0 = T.meta_var(cta_tile(tile, rank)[0])
                c0 = T.meta_var(cta_tile(tile, rank)[1])
                if SK > 1:
                    if C > 1:  # every consumer is past its last wgmma: the ring is idle
                        T.ptx.bar.sync(REDUCE_BARRIER, C * 128)
                    park_partials(R, acc, consumer, warp * 32 + lane)
                    cluster_sync()
                    reduce_and_store(R, acc, consumer, warp * 32 + lane, rank, D,
                                     r0 + consumer * WG_M, c0, warp, lane)
                elif EPI_TMA:
                    store_chunks(D, Ds, acc, consumer, r0 + part * WG_M, c0 + col_part * CN,
                                 warp, lane)
                else:
                    store_reg(D, acc, r0 + part * WG_M, c0 + col_part * CN, warp, lane)

            if PINGPONG:
                @T.inline
                def skip_stages(n):
                    """Past the other consumer's n K tiles of the ring."""
                    cs.phase = cs.phase ^ ((cs.stage + n) // STAGES % 2)
                    cs.stage = (cs.stage + n) % STAGES

                # the CTA's tiles are dealt in turn: this consumer's are every other one. Before
                # each (but the CTA's first) it waits until the other consumer has passed its
                # tile's full barriers: then this tile's stages are at most one phase ahead of
                # the parity waits, and the two mainloops alternate on the tensor cores.
                skip_stages(consumer * KT)
                turn: T.int32 = 0
                own: T.int32 = cluster_id + consumer * NCL
                while own < TILE_LIMIT:
                    if own > cluster_id:
                        order.wait(consumer, turn)
                        turn = turn ^ 1
                    consume(KT)
                    epilogue(own)
                    skip_stages(KT)
                    own = own + 2 * NCL
            else:
                tile: T.int32 = cluster_id
                while tile < TILE_LIMIT:
                    consume(k_count)
                    # ---------------- epilogue ----------------
                    epilogue(tile)
                    tile = tile + NCL
            if STREAM_K:
                tid = T.meta_var(warp * 32 + lane)
                leader = T.meta_var((warp == 0) & (lane == 0))
                flag = T.meta_var(bx * C + consumer)
                if share_end % KT > 0:
                    # the parked piece: a tile's head or middle, for the CTA that finishes it
                    consume(share_end - park_begin)
                    for i in T.unroll(ACC):
                        T.buffer_store(P, acc[i], [bx, consumer, i, tid])
                    T.evaluate(T.ptx.fence.acq_rel.gpu())
                    T.evaluate(T.cuda.warpgroup_sync(1 + consumer))
                    if leader:
                        T.evaluate(T.ptx.st.release.gpu.global_.b32(F.ptr_to([flag]),
                                                                   T.int32(1)))
                # the other pieces end at a tile's last K tile: add the partials of the earlier
                # clusters' CTAs of this rank that hold the tile's first K tiles (parked first
                # thing), store the tile
                it: T.int32 = share_begin
                while it < T.Select(share_end % KT > 0, park_begin, share_end):
                    kf: T.int32 = it % KT
                    kc: T.int32 = T.min(KT - kf, share_end - it)
                    consume(kc)
                    tile_begin = T.meta_var(it // KT * KT)
                    peer: T.int32 = cluster_id - 1
                    while (kf > 0) & (peer >= 0) & ((peer + 1) * SHARED_ITERS // NCL > tile_begin):
                        peer_cta = T.meta_var(peer * CS + rank)
                        if leader:
                            seen = T.alloc_local((1,), "int32")
                            seen[0] = 0
                            while seen[0] == 0:
                                T.evaluate(T.ptx.ld.acquire.gpu.global_.b32(
                                    seen[0], F.ptr_to([peer_cta * C + consumer])))
                            F[peer_cta * C + consumer] = 0  # ready for the next launch
                        T.evaluate(T.cuda.warpgroup_sync(1 + consumer))
                        for i in T.unroll(ACC):
                            T.buffer_store(acc, acc[i] + P[peer_cta, consumer, i, tid], [i])
                        peer = peer - 1
                    epilogue(WHOLE_TILES + it // KT)
                    it = it + kc
            if EPI_TMA:
                if (warp == 0) & (lane == 0):
                    T.ptx.cp.async_.bulk.wait_group(0)
        # No CTA may leave while a peer can still multicast into it, arrive on its barriers or
        # read its partials.
        if CS > 1:
            cluster_sync()

    if STREAM_K:
        @T.prim_func
        def gemm(A: T.Buffer((M, K), dtype), B: T.Buffer((N, K), dtype),
                 D: T.Buffer((M, N), dtype),
                 scratch_partials: T.Buffer((NCL * CS, C, ACC, 128), "float32"),
                 scratch_flags: T.Buffer((NCL * CS * C,), "int32")):
            body(A, B, D, scratch_partials, scratch_flags)
    else:
        @T.prim_func
        def gemm(A: T.Buffer((M, K), dtype), B: T.Buffer((N, K), dtype),
                 D: T.Buffer((M, N), dtype)):
            body(A, B, D, None, None)

    return gemm
