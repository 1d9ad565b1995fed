"""Configuration and geometry of the Hopper GEMM template, in plain Python (no TVM): the
search-space plugin uses these on machines where TVM is not installed."""

from __future__ import annotations

import dataclasses
import math

DTYPES = ("bfloat16", "float16")
H100_SMS = 132  # H100 SXM and H200 alike
# Clusters of 4 and 8 CTAs the GPU runs at once (cuOccupancyMaxActiveClusters, H200, any of our
# kernels: studies/2026-11-28-h200-gemm-s25/occupancy): a cluster sits inside one GPC, and the
# GPCs' SM counts leave 12 SMs outside clusters of 4. Pairs fill all 132 SMs (66).
CO_RESIDENT_CLUSTERS = {4: 30, 8: 15}
SMEM_LIMIT = 232448  # dynamic shared memory one CTA may ask for on sm_90 (227 KB)
ELEM_BYTES = 2
MAX_WGMMA_N = 256


@dataclasses.dataclass(frozen=True)
class GemmConfig:
    wg_m: int = 64  # rows per consumer warpgroup: 64 or 128 (one or two m64 wgmma)
    consumers: int = 2  # consumer warpgroups: cooperative on one CTA tile, or in turns (pingpong)
    blk_n: int = 256
    blk_k: int = 64
    stages: int = 4
    cluster_m: int = 1  # 2 or 4: CTAs along M share (multicast) the B tile
    cluster_n: int = 1  # 2 or 4: CTAs along N share (multicast) the A tile
    persistent: bool = True
    raster: str = "m"  # "m": walk down M inside a group of `group` tile rows; "n": transposed
    group: int = 8
    epilogue: str = "tma"  # "tma": registers -> smem -> TMA store; "reg": registers -> global
    swap_ab: bool = False  # compute D^T = B @ A^T: N fills the 64-row wgmma side
    split_k: int = 1  # >1: a cluster of split_k CTAs shares one tile's K, reduced through DSMEM
    # L2 policy of the operand loads. "first": evict first - streamed tiles leave the L2's other
    # lines alone (say, dirty ones a previous kernel wrote, which would need a write-back to
    # make room); costs reuse of the tiles through L2 where many CTAs reread them.
    l2_evict: str = "normal"
    # Stream-K (persistent, one cluster per SM or SM pair): all but the last full wave of
    # (cluster) tiles run whole; the rest's K tiles are cut into equal shares, one per cluster,
    # so the last wave has no idle SMs. A share's last piece, when it ends inside a tile, runs
    # first and parks its f32 partials in a scratch buffer in global memory (a flag announces
    # them); the cluster holding the tile's last K tile adds them and stores the tile. A pair's
    # CTAs walk the same tiles and K tiles in step, each its own half, so multicast still works.
    stream_k: bool = False
    # Ping-pong (two consumers, persistent): each consumer owns whole wg_m-row tiles, the CTA's
    # tiles dealt to them in turn; their mainloops take turns on the tensor cores, so one's
    # epilogue runs while the other's wgmmas do. Cooperative (False): both consumers share
    # each tile, and the tensor cores idle through every epilogue.
    pingpong: bool = False
    # TMA-store epilogue chunks where no 64- or 32-column chunk tiles BLK_N (epilogue_chunk):
    # "overlap" stores 64- or 32-column chunks, the last overlapping the one before it; "narrow"
    # stores 16-column ones (4x the stores and barriers, a quarter of the staging: more room
    # for the ring; the kernels stored before session 30). Either way for every other BLK_N.
    epi_tail: str = "overlap"
    # How cooperative consumers share the CTA tile: "m", each its own wg_m rows and every
    # column; "n", every one of the wg_m rows and its own BLK_N / consumers columns (cuBLAS's
    # "coopB" kernels, e.g. 192x176 tiles at 850x8704x8192 on an H200: three m64 atoms in each
    # of two consumers, where three 64-row consumers hold at most 96 accumulators).
    consumer_split: str = "m"

    @property
    def blk_m(self) -> int:
        """Rows of one tile: a consumer's own under ping-pong or a column split, else all
        consumers'."""
        if self.pingpong or self.consumer_split == "n":
            return self.wg_m
        return self.wg_m * self.consumers

    @property
    def consumer_cols(self) -> int:
        """Columns of the tile one consumer computes: all, or its share of a column split."""
        return self.blk_n // self.consumers if self.consumer_split == "n" else self.blk_n

    @property
    def multicast_size(self) -> int:
        """CTAs that share (multicast) an operand tile: 1, 2 or 4."""
        return self.cluster_m * self.cluster_n

    @property
    def cluster_size(self) -> int:
        """CTAs per launched cluster: the multicast pair, or the split-K group."""
        return self.multicast_size * self.split_k

    @classmethod
    def from_dict(cls, d: dict) -> "GemmConfig":
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _ring_bytes(cfg: GemmConfig) -> int:
    """Barriers and the ring. The split-K partials reuse the ring, which is idle once the last
    K tile is consumed."""
    ring = cfg.stages * (cfg.blk_m + cfg.blk_n) * cfg.blk_k * ELEM_BYTES
    return 1024 + max(ring, reduce_bytes(cfg))


def smem_bytes(cfg: GemmConfig) -> int:
    """Dynamic shared memory the kernel asks for (barriers, ring, epilogue tile)."""
    return _ring_bytes(cfg) + epilogue_bytes(cfg)


def epilogue_chunk(cfg: GemmConfig) -> tuple[int, int]:
    """TMA-store epilogue: (columns per chunk, staging buffers per consumer). A chunk is one
    swizzle row (64 or 32 elements: the widest that tiles the consumer's columns, BLK_N or
    its share under a column split, for conflict-free writes).
    A BLK_N past 32 that neither tiles (an odd multiple of 16, or of 8) takes 64-column chunks
    where they fit beside the ring, else 32-column ones, the last chunk overlapping the one
    before it (epilogue_starts; epi_tail "overlap"), or 16-column ones ("narrow", or where
    neither fits beside the ring: the legal configs are those of before the knob; the last
    overlapping where BLK_N is an odd multiple of 8): 16-column chunks made 4x the
    stores and barriers (H100: 240 ran 2.3x slower than 256; with overlapping chunks 0.98x,
    H200, studies/2026-11-29-h200-gemm-s32/epilogue/). Two buffers let a chunk's store
    overlap the next chunk's shared-memory writes. 256-row tiles (two 128-row consumers) take
    one where two would not fit beside the ring: two each are 64 KB at 256x192 and left it 2
    stages, too few to feed the tensor cores (H100, held busy at 4096x28672x4096: 0.72 TFLOP/J
    against 0.96-1.00 for 3-4 stage tiles). So do column-split tiles (each consumer stages
    all wg_m rows: 48 KB in two 64-column buffers at 192 rows), first choosing the chunk width
    as if with one."""
    def staging(width, bufs):
        return _staging_bytes(cfg, width, bufs)

    single_ok = cfg.blk_m == 256 or cfg.consumer_split == "n"
    cols = cfg.consumer_cols
    width = next((w for w in (64, 32) if cols % w == 0), None)
    if width is None:  # the widest swizzle row under BLK_N whose staging fits beside the ring
        fits = [w for w in (64, 32) if w < cols and cfg.epi_tail == "overlap"
                and _ring_bytes(cfg) + staging(w, 1 if cfg.consumer_split == "n" else 2)
                <= SMEM_LIMIT]
        width = fits[0] if fits else 16
    bufs = min(2, len(epilogue_starts(cols, width)))
    if single_ok and _ring_bytes(cfg) + staging(width, bufs) > SMEM_LIMIT:
        bufs = 1
    return width, bufs


def epilogue_starts(blk_n: int, width: int) -> list[int]:
    """The first column of each epilogue chunk: every `width` columns, the last chunk ending
    at BLK_N (overlapping the one before it where `width` does not tile BLK_N: those columns
    are stored twice, with the same values, by the same CTA)."""
    return [min(c, blk_n - width) for c in range(0, blk_n, width)]


def _staging_bytes(cfg: GemmConfig, width: int, bufs: int) -> int:
    """Shared memory of the epilogue's staging: `bufs` chunks `width` wide per consumer."""
    return cfg.consumers * bufs * cfg.wg_m * width * ELEM_BYTES


def epilogue_bytes(cfg: GemmConfig) -> int:
    if cfg.epilogue != "tma":
        return 0
    return _staging_bytes(cfg, *epilogue_chunk(cfg))


def wgmma_n(blk_n: int) -> int:
    """Columns of one wgmma: BLK_N in equal parts of at most 256 (wgmma's widest N, and a
    TMA box's most rows), each a multiple of 8 (wgmma's N step): BLK_N a multiple of 8 up to
    256, of 16 past it."""
    parts = -(-blk_n // MAX_WGMMA_N)
    assert blk_n % (8 * parts) == 0, f"BLK_N={blk_n} does not split into {parts} wgmma N"
    return blk_n // parts


SWIZZLE_ATOM_ROWS = 8  # a 128-byte swizzle atom: a multicast slice starts and ends on one


def multicast_slices(rows: int, ctas: int) -> tuple[int, int, int]:
    """How `ctas` CTAs split a shared tile of `rows` rows, each loading its slice for all, in
    whole swizzle atoms: (big, small, bigs): ranks below `bigs` load `big` rows, the others
    `small` (equal slices where the atoms divide evenly: bigs = 0)."""
    atoms, left = divmod(rows, SWIZZLE_ATOM_ROWS)
    assert not left and atoms >= ctas, f"{rows} rows do not split into {ctas} whole-atom slices"
    per, bigs = divmod(atoms, ctas)
    return (per + 1) * SWIZZLE_ATOM_ROWS, per * SWIZZLE_ATOM_ROWS, bigs


def accumulator_regs(cfg: GemmConfig) -> int:
    """f32 accumulator registers per consumer thread."""
    return (cfg.wg_m // 64) * cfg.consumer_cols // 2


def reduce_bytes(cfg: GemmConfig) -> int:
    """Split-K: each consumer thread's f32 partial sums, exposed to the cluster's peers."""
    return cfg.consumers * accumulator_regs(cfg) * 128 * 4 if cfg.split_k > 1 else 0


@dataclasses.dataclass(frozen=True)
class Geometry:
    """Launch geometry derived from (problem, config)."""

    rows: int  # extent of the tile-row side (M, or N when swapped)
    cols: int
    cluster_tiles_m: int
    cluster_tiles_n: int
    total: int  # cluster tiles
    clusters: int  # clusters launched
    cluster_size: int
    k_tiles: int

    @property
    def grid(self) -> int:
        return self.clusters * self.cluster_size


def geometry(M: int, N: int, K: int, cfg: GemmConfig, num_sms: int = H100_SMS) -> Geometry:
    rows, cols = (N, M) if cfg.swap_ab else (M, N)
    ctm = math.ceil(math.ceil(rows / cfg.blk_m) / cfg.cluster_m)
    ctn = math.ceil(math.ceil(cols / cfg.blk_n) / cfg.cluster_n)
    total = ctm * ctn
    resident = co_resident_clusters(cfg.cluster_size, num_sms)
    clusters = min(total, resident) if cfg.persistent else total
    k_tiles = math.ceil(K / cfg.blk_k)
    if cfg.stream_k:
        clusters = min(resident, total * k_tiles)
    return Geometry(rows, cols, ctm, ctn, total, clusters, cfg.cluster_size, k_tiles)


def co_resident_clusters(size: int, num_sms: int = H100_SMS) -> int:
    """Clusters of `size` CTAs (one per SM) that run at once: a persistent grid's clusters."""
    if num_sms == H100_SMS and size in CO_RESIDENT_CLUSTERS:
        return CO_RESIDENT_CLUSTERS[size]
    return num_sms // size


def stream_k_split(g: Geometry) -> tuple[int, int]:
    """Stream-K: (tiles run whole, K tiles shared out). The whole tiles are all waves but the
    last full one, so each cluster's share is 1 to 2 tiles of work and a tile is split between
    at most 2 clusters; under one wave a share is under a tile (a tile's fix-up then reads up to
    clusters / tiles + 1 partials)."""
    whole = max(0, g.total // g.clusters - 1) * g.clusters
    return whole, (g.total - whole) * g.k_tiles


def check_shape(M: int, N: int, K: int, dtype: str) -> None:
    """Refuse what the template cannot do, with the reason."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} unsupported; the sm_90a GEMM takes {DTYPES}")
    if M < 1 or N < 1 or K < 1:
        raise ValueError(f"GEMM sizes must be positive, got M={M} N={N} K={K}")
    for name, v in (("N", N), ("K", K)):
        if v % 8:
            raise ValueError(
                f"{name}={v} is not a multiple of 8: TMA needs 16-byte aligned row strides"
            )
