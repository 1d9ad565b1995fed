"""Blackwell (sm_100a) GEMM template in TIRx: D[M, N] = A[M, K] @ B[N, K]^T.

fp16/bf16 in, fp32 accumulation in TMEM, fp16/bf16 out. One template covers the book's
Blackwell GEMM ("Modern GPU Programming for MLSys", chapters gemm_async and gemm_advanced):

- TMA loads into a `stages`-deep shared-memory ring (full/empty mbarriers per stage);
- `tcgen05.mma` issued by one elected thread per MMA consumer, accumulating in TMEM;
- epilogue: TMEM -> registers (`epi_n`-column chunks, `epi_ld` columns per tcgen05.ld) ->
  shared (`epi_stages` buffers) -> TMA store, overlapping one chunk's store with the next's
  staging; the accumulator is released to the MMA as soon as its last chunk is read;
- persistent tile scheduler over clusters (group-major raster, `group_m` rows per group,
  a launch argument: the kernel's fourth parameter, int32, so one binary serves every group);
- warp specialization: warpgroup `consumers` holds the TMA producer (warp 3) and the MMA
  issuers (warps 0..consumers-1); warpgroups 0..consumers-1 are the epilogues; setmaxnreg
  moves registers from the producer/MMA warpgroup to the epilogue warpgroups;
- `cta_group=2`: a 2-CTA cluster issues one paired MMA (M=256) from CTA 0, each CTA staging
  its own half of A and B;
- `multicast=True` (cta_group 1 only): a 2-CTA cluster along M shares the B tile, each CTA
  loading half of it and multicasting that half into both CTAs' shared memory;
- `consumers` MMA consumers (1 or 2) read different A rows and share the staged B tile.

M may be any size >= 1 (TMA zero-fills out-of-range loads and clips out-of-range stores); N and K
must be multiples of 8 (TMA needs 16-byte global strides); K tails are zero-filled too.
Legality of a config against the hardware is checked by `config_violations`, before anything
is compiled; `build` assumes a legal config.
"""

from __future__ import annotations

import dataclasses
import math

from .. import registers

BLK_M = 128  # rows of A (and D) per CTA per consumer: the tcgen05 M of one CTA
TMEM_COLUMNS = 512  # fp32 columns of tensor memory per SM
SMEM_LIMIT = 232448  # max dynamic shared memory per block on sm_100 (227 KiB)
BARRIER_BYTES = 1024  # barriers and the TMEM address slot live below the first tile
# setmaxnreg budget of the TMA/MMA warpgroup. 56 (the TIRx-kernels GEMM's figure) spilled the
# scheduler's index math in some configs here; 96 leaves the epilogues 200 each with 2 consumers
# (the pool of three warpgroups starting at 168 is 504, see kernels/registers.py).
PRODUCER_REGS = 96
DTYPES = ("float16", "bfloat16")
B200_SMS = 148


@dataclasses.dataclass(frozen=True)
class GemmConfig:
    """The template's compile-time knobs. See the module docstring for what each one changes;
    `group_m` is not here: it is passed at launch."""

    blk_n: int = 128  # rows of B staged per CTA per stage (MMA N = blk_n * cta_group)
    blk_k: int = 64  # K extent of one stage
    stages: int = 4  # depth of the A/B shared-memory ring
    epi_n: int = 64  # columns per epilogue chunk (TMEM load width)
    epi_stages: int = 2  # shared-memory store buffers per epilogue warpgroup
    epi_ld: int = 32  # columns per tcgen05.ld (a chunk is read in epi_n/epi_ld loads)
    cta_group: int = 2  # 1: one-CTA MMA; 2: paired MMA over a 2-CTA cluster
    consumers: int = 2  # MMA consumers sharing one staged B tile
    multicast: bool = False  # cta_group=1 only: 2-CTA cluster along M multicasting B

    # Template constants the kernel body reads off its config (it imports nothing from here);
    # unannotated, so they are class attributes, not fields.
    blk_m = BLK_M
    tmem_alloc_columns = TMEM_COLUMNS

    @property
    def producer_regs(self) -> int:
        """setmaxnreg budget of the TMA/MMA warpgroup: PRODUCER_REGS next to two epilogues;
        next to one (at setmaxnreg's 256) it keeps the other half of the pool: at 96, the
        index math of one-consumer configs spilled 16-76 B once ptxas honoured setmaxnreg."""
        rest = registers.pool(self.warpgroups) - self.consumers * registers.SETMAXNREG_MAX
        return max(PRODUCER_REGS, rest)

    @property
    def cluster(self) -> int:
        return 2 if (self.cta_group == 2 or self.multicast) else 1

    @property
    def mma_n(self) -> int:
        """Accumulator columns per consumer: the N of one tcgen05.mma."""
        return self.blk_n * self.cta_group

    @property
    def tile_m(self) -> int:
        """Rows of D one cluster computes per scheduled tile."""
        return BLK_M * self.consumers * self.cluster

    @property
    def tile_n(self) -> int:
        """Columns of D one cluster computes per scheduled tile."""
        return self.mma_n

    @property
    def warpgroups(self) -> int:
        return self.consumers + 1

    @property
    def threads(self) -> int:
        return 128 * self.warpgroups

    @property
    def tmem_columns(self) -> int:
        return self.consumers * self.mma_n

    @property
    def smem_bytes(self) -> int:
        ab = self.stages * (self.consumers * BLK_M + self.blk_n) * self.blk_k * 2
        d = self.consumers * self.epi_stages * BLK_M * self.epi_n * 2
        return BARRIER_BYTES + ab + d

    @property
    def epilogue_regs(self) -> int:
        """setmaxnreg budget of each epilogue warpgroup: the CTA's register pool less the
        producer's share, split between the epilogues, capped at setmaxnreg's 256."""
        per_thread = registers.pool(self.warpgroups) - self.producer_regs
        return min(registers.SETMAXNREG_MAX, per_thread // self.consumers // 8 * 8)


def config_violations(cfg: GemmConfig, M: int, N: int, K: int, dtype: str) -> list[str]:
    """Every hardware or template rule `cfg` breaks for this problem, one sentence each."""
    out = []
    if dtype not in DTYPES:
        out.append(f"dtype {dtype} is not supported (fp16/bf16 inputs only)")
    if M < 1:
        out.append(f"M={M} must be >= 1")
    for name, size in (("N", N), ("K", K)):
        if size < 8 or size % 8:
            out.append(f"{name}={size} must be a positive multiple of 8 (TMA needs 16-byte strides)")
    if cfg.cta_group not in (1, 2):
        out.append(f"cta_group={cfg.cta_group} must be 1 or 2")
    if cfg.consumers not in (1, 2):
        out.append(f"consumers={cfg.consumers} must be 1 or 2 (two epilogue warpgroups at most)")
    if cfg.multicast and cfg.cta_group != 1:
        out.append("multicast needs cta_group=1 (with cta_group=2 the paired MMA already shares B)")
    # tcgen05.mma kind::f16 shapes (PTX ISA 9.7.16.10.1): M=128 takes N in 16..256 step 16;
    # the paired M=256 takes N in 32..256 step 16.
    n_min = 16 * cfg.cta_group
    if not (n_min <= cfg.mma_n <= 256 and cfg.mma_n % 16 == 0):
        out.append(
            f"MMA N = blk_n*cta_group = {cfg.mma_n} must be a multiple of 16 in [{n_min}, 256] "
            f"for an M={BLK_M * cfg.cta_group} tcgen05.mma"
        )
    if cfg.multicast and (cfg.blk_n // 2) % 8:
        out.append(f"multicast splits B in two halves of blk_n/2={cfg.blk_n / 2} rows; need a multiple of 8")
    # One shared-memory row of a stage must be a whole 128-byte swizzle atom (or several).
    if cfg.blk_k not in (64, 128):
        out.append(f"blk_k={cfg.blk_k} must be 64 or 128 (128-byte swizzled rows of 16-bit data)")
    if cfg.stages < 2:
        out.append(f"stages={cfg.stages} must be >= 2 to overlap loads with MMAs")
    if cfg.tmem_columns > TMEM_COLUMNS:
        out.append(
            f"TMEM: consumers*blk_n*cta_group = {cfg.tmem_columns} fp32 columns exceeds {TMEM_COLUMNS}"
        )
    # The epilogue stages epi_n columns per TMA store; a staged row must be a whole swizzle atom
    # (32/64/128 bytes) or several 128-byte ones.
    if cfg.epi_n not in (16, 32, 64, 128):
        out.append(f"epi_n={cfg.epi_n} must be 16, 32, 64 or 128 (store rows of whole swizzle atoms)")
    elif cfg.mma_n % cfg.epi_n:
        out.append(f"epi_n={cfg.epi_n} must divide the accumulator width {cfg.mma_n}")
    elif (cfg.mma_n // cfg.epi_n) % cfg.epi_stages:
        out.append(
            f"epi_stages={cfg.epi_stages} must divide the {cfg.mma_n // cfg.epi_n} epilogue chunks "
            "per tile (store buffers are reused in a fixed rotation)"
        )
    # It reads TMEM with tcgen05.ld.32x32b, epi_ld columns (fp32 registers) per load. The ISA
    # allows up to 128, but 128 live fp32 registers next to the packed chunk spilled (measured on
    # a one-consumer cta_group=1 blk_n=256 config at 255 registers), so 64 is the widest we take.
    if cfg.epi_ld not in (16, 32, 64):
        out.append(f"epi_ld={cfg.epi_ld} must be 16, 32 or 64 (tcgen05.ld columns that fit the register budget)")
    elif cfg.epi_ld > cfg.epi_n:
        out.append(f"epi_ld={cfg.epi_ld} must not exceed epi_n={cfg.epi_n} (a load fills part of one chunk)")
    # Two consumers start every thread at 168 registers (three warpgroups per SM). A 128-column
    # chunk then fits only 16-column loads: 64-column ones spilled in all 13 such classes of the
    # first 2026-11-23 sweep, 32-column ones 80-124 B in all 13 of the second (setmaxnreg
    # honoured); every 16-column one was clean.
    elif cfg.consumers == 2 and cfg.epi_n == 128 and cfg.epi_ld > 16:
        out.append(f"epi_ld={cfg.epi_ld} with epi_n=128 and two consumers spills at their "
                   "168-register start (80-124 B measured): use epi_ld=16 or consumers=1")
    # B's tma_auto load moves a 128-element row of 16-bit data as two 64-element slabs through a
    # 3-D tensor map, which needs the global extent to split evenly into slabs.
    if cfg.blk_k == 128 and K % 64:
        out.append(f"blk_k=128 needs K % 64 == 0 (TMA splits K into 64-element slabs); K={K}")
    if cfg.epi_stages not in (1, 2):
        out.append(f"epi_stages={cfg.epi_stages} must be 1 or 2")
    if cfg.smem_bytes > SMEM_LIMIT:
        out.append(
            f"shared memory {cfg.smem_bytes} B (1024 + stages*(consumers*128+blk_n)*blk_k*2 + "
            f"consumers*epi_stages*128*epi_n*2) exceeds the {SMEM_LIMIT} B per-block limit"
        )
    return out


def launch_shape(cfg: GemmConfig, M: int, N: int, sm_count: int = B200_SMS) -> dict:
    """Grid of the persistent launch: one cluster per pair of SMs (or per SM), never more
    clusters than tiles."""
    tiles = math.ceil(M / cfg.tile_m) * math.ceil(N / cfg.tile_n)
    clusters = max(1, min(sm_count // cfg.cluster, tiles))
    return {"tiles": tiles, "clusters": clusters, "ctas": clusters * cfg.cluster,
            "threads": cfg.threads, "cluster": cfg.cluster}


def build(cfg: GemmConfig, M: int, N: int, K: int, dtype: str = "bfloat16",
          sm_count: int = B200_SMS, fixed_group_m: int | None = None):
    """The TIRx PrimFunc for one legal config and problem: gemm(A, B, D, group_m).

    `fixed_group_m` compiles the raster group in and leaves the group_m parameter unused, for
    an executor that binds buffers only (NumSim; specialize the parameter away). Substituting
    a constant into the launch-argument kernel instead makes TVM fold a guarded `x % 0`."""
    from ._sm100_kernel import make_kernel

    return make_kernel(cfg, M, N, K, dtype, launch_shape(cfg, M, N, sm_count), fixed_group_m)
