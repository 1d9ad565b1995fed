"""Knobs, legality and hand-tuned defaults of the Hopper attention template, in plain Python
(no TVM): a search space can use them where TVM is not installed.

A CTA owns BLOCK_M = 64 x consumers query rows of one (batch, query head): each consumer
warpgroup owns one m64 wgmma row block (a second one would need another head_dim/2 + block_n/2
accumulator registers per thread, more than a thread has). Keys and values stream through a
`stages`-deep ring of BLOCK_N-row tiles.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

from .problem import AttentionProblem

SMEM_LIMIT = 232448  # bytes of shared memory a block may use on sm_90
SM_SMEM = 233472  # bytes of shared memory an SM has, of which each resident block reserves 1 KiB
BLOCK_RESERVED_SMEM = 1024
REGS_PER_SM = 65536
WG_THREADS = 128
WG_ROWS = 64  # query rows per consumer warpgroup: the M of one wgmma
HEAD_DIMS = (64, 128)
BARRIER_BYTES = 1024  # the mbarriers, below the 1024-byte aligned tiles
ORDERS = ("head", "lpt", "group")  # launch-time tile orders (see AttentionSm90Config.order)
# K/V bytes the heads of one "group" order's group may share: half of an H100's 50 MB L2,
# leaving room for the Q and O streams
L2_GROUP_BYTES = 24 << 20
# Registers a consumer thread needs besides its S, P and O fragments (descriptors, softmax
# statistics, indices, addresses): calibrated on the compile sweep (studies/
# 2026-11-23-fa4-sm90-compile-sweep/), where every config within this margin compiled spill-free.
CONSUMER_OVERHEAD_REGS = 32
# A second Q stage takes 8 more (its barrier phases and tile addresses): with q_stages=2, the
# session-4 sweep's 4 binaries at exactly the 32-register margin spilled 24 B (block_n 80, three
# consumers at 160), every one with 12 or more registers to spare compiled clean.
Q_STAGE_OVERHEAD_REGS = 8


@dataclasses.dataclass(frozen=True)
class AttentionSm90Config:
    block_n: int = 128  # keys per K/V tile: the N of Q K^T, the K of P V
    consumers: int = 2  # consumer warpgroups, 64 query rows each
    stages: int = 2  # K/V ring depth
    # Q tiles in flight: with 2, a persistent CTA loads its next tile's Q (and first K/V tiles)
    # while it finishes this one, and an O store's read-out overlaps the next first Q K^T
    q_stages: int = 1
    # consumers take turns issuing their wgmmas (named barriers), so one's softmax runs while
    # the other's matrix multiplies do (FA3's ping-pong)
    pingpong: bool = True
    # within a consumer, Q K^T of tile j+1 is issued before P V of tile j, and the softmax of
    # tile j+1 runs while P V of tile j is on the tensor cores
    overlap: bool = True
    consumer_regs: int = 240  # setmaxnreg of the consumers; the producer gets what is left
    # CTAs resident per SM (the kernel's launch bounds): with 2, one CTA's serial per-tile work
    # (Q load, first Q K^T, masked diagonal, epilogue) overlaps the other's matrix multiplies;
    # each CTA then has half the registers and shared memory (one consumer, narrow K/V tiles)
    ctas_per_sm: int = 1
    # FA4's conditional rescale, in log2 units: the running row max moves (and O is rescaled)
    # only when a new score exceeds it by more than this; 0 moves it whenever it grows. O is
    # rescaled only when some row of the warp moved.
    rescale_threshold: float = 0.0
    # launch-time knobs (kernel parameters: configs that differ only in them share a binary)
    persistent: bool = False  # one CTA per SM walking the tiles, instead of one CTA per tile
    # "head": a head's query tiles back to back (its K/V stay in L2); "lpt": the longest
    # (causal: last) query tiles of every head first, which balances causal work across SMs;
    # "group": lpt within groups of heads whose K/V fit in L2 together (balance with locality)
    order: str = "head"

    @property
    def block_m(self) -> int:
        return WG_ROWS * self.consumers

    @property
    def producer_regs(self) -> int:
        """What the consumers leave of the block's registers for the producer warpgroup (a
        multiple of 8, at most 56: the producer only issues TMA)."""
        left = (block_registers(self.consumers, self.ctas_per_sm)
                - self.consumers * self.consumer_regs)
        return min(56, left - left % 8)

    @classmethod
    def from_dict(cls, d: dict) -> "AttentionSm90Config":
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


RUNTIME_KNOBS = ("persistent", "order")
KNOBS = {  # the search space: every value of every knob
    "block_n": (64, 80, 96, 112, 128, 144, 160, 176, 192),
    "consumers": (1, 2, 3),
    "stages": (2, 3),
    "q_stages": (1, 2),
    "pingpong": (False, True),
    "overlap": (False, True),
    "consumer_regs": (160, 232, 240, 256),
    "ctas_per_sm": (1, 2),
    "rescale_threshold": (0.0, 8.0),
    "persistent": (False, True),
    "order": ORDERS,
}


def entry_registers(threads: int, ctas_per_sm: int = 1) -> int:
    """Registers each thread starts with: the kernel declares `ctas_per_sm` blocks per SM in
    its launch bounds, so ptxas gives every thread the most that many blocks of `threads` can
    have (allocated in eights, at most 255)."""
    return min(255, REGS_PER_SM // (threads * ctas_per_sm) // 8 * 8)


def block_registers(consumers: int, ctas_per_sm: int = 1) -> int:
    """Registers per thread-slot the warpgroups share: setmaxnreg only moves them between
    warpgroups, and a setmaxnreg.inc past what the others gave back waits forever."""
    return (consumers + 1) * entry_registers((consumers + 1) * WG_THREADS, ctas_per_sm)


def max_consumer_regs(consumers: int, ctas_per_sm: int = 1) -> int:
    """The largest setmaxnreg value `consumers` warpgroups can take beside a 24-register
    producer (a multiple of 8, at most 256)."""
    per = (block_registers(consumers, ctas_per_sm) - 24) // max(consumers, 1)
    return min(256, per - per % 8)


def smem_limit(ctas_per_sm: int) -> int:
    """Shared memory one block may use when `ctas_per_sm` blocks share an SM."""
    return min(SMEM_LIMIT, SM_SMEM // max(ctas_per_sm, 1) - BLOCK_RESERVED_SMEM)


def smem_bytes(cfg: AttentionSm90Config, head_dim: int, elem_bytes: int = 2) -> int:
    """Dynamic shared memory: barriers, the Q ring (also the O staging tiles), the K and V rings."""
    rows = cfg.q_stages * cfg.block_m + 2 * cfg.stages * cfg.block_n
    return BARRIER_BYTES + rows * head_dim * elem_bytes


def fragment_regs(cfg: AttentionSm90Config, head_dim: int) -> int:
    """Registers per consumer thread for S (block_n/2 f32), P (block_n/4 packed 16-bit pairs)
    and O (head_dim/2 f32): with overlap, S of the next tile and P of this one are live at once;
    without, P replaces S before the next S exists, but the compiler keeps both as often."""
    return cfg.block_n // 2 + cfg.block_n // 4 + head_dim // 2


def violations(cfg: AttentionSm90Config, problem: AttentionProblem) -> list[str]:
    """Every rule `cfg` breaks for `problem`, each a sentence; [] when it is legal."""
    out = list(problem.errors())
    d = problem.head_dim
    if d not in HEAD_DIMS:
        out.append(f"head_dim={d} is not one of {HEAD_DIMS}: the template tiles head_dim in "
                   "64-element (128-byte) swizzle blocks and holds head_dim/2 O registers")
    if cfg.block_n % 16 or not 16 <= cfg.block_n <= 256:
        out.append(f"block_n={cfg.block_n} must be a multiple of 16 in [16, 256]: it is the N of "
                   "the Q K^T wgmma (at most 256) and the K of P V, consumed 16 keys at a time")
    if cfg.consumers not in (1, 2, 3):
        out.append(f"consumers={cfg.consumers} must be 1, 2 or 3: four consumer warpgroups and "
                   "the producer leave each thread fewer registers than one S fragment needs")
    if cfg.pingpong and cfg.consumers < 2:
        out.append("pingpong needs at least two consumer warpgroups to take turns")
    if cfg.stages < 2:
        out.append(f"stages={cfg.stages} must be at least 2: a consumer holds one tile's V "
                   "while it waits for the next tile's K")
    if cfg.q_stages not in (1, 2):
        out.append(f"q_stages={cfg.q_stages} must be 1 or 2: a tile's Q and the next one's is "
                   "all a CTA's consumers can use at once")
    if cfg.consumer_regs % 8 or not 24 <= cfg.consumer_regs <= 256:
        out.append(f"consumer_regs={cfg.consumer_regs} must be a multiple of 8 in [24, 256] "
                   "(setmaxnreg)")
    if cfg.ctas_per_sm not in (1, 2):
        out.append(f"ctas_per_sm={cfg.ctas_per_sm} must be 1 or 2: three blocks of two "
                   "warpgroups leave a consumer fewer registers than one S fragment needs")
        return out
    most = max_consumer_regs(cfg.consumers, cfg.ctas_per_sm)
    if cfg.consumers in (1, 2, 3) and not most - 8 <= cfg.consumer_regs <= most:
        out.append(f"consumer_regs={cfg.consumer_regs} must be {most} or {most - 8} for "
                   f"{cfg.consumers} consumer warpgroups and {cfg.ctas_per_sm} CTA(s) per SM: the "
                   "most setmaxnreg can give them "
                   "beside a 24-register producer, or 8 fewer for a roomier producer; less only "
                   "idles registers")
    if cfg.consumers >= 1 and cfg.producer_regs < 24:
        out.append(f"{cfg.consumers} consumer warpgroups x {cfg.consumer_regs} registers leave "
                   f"the producer {cfg.producer_regs} of the "
                   f"{block_registers(cfg.consumers, cfg.ctas_per_sm)} "
                   "the block's warpgroups share per thread-slot; setmaxnreg needs at least 24")
    overhead = CONSUMER_OVERHEAD_REGS + (Q_STAGE_OVERHEAD_REGS if cfg.q_stages > 1 else 0)
    need = fragment_regs(cfg, d) + overhead
    if cfg.consumer_regs < need:
        out.append(f"consumer_regs={cfg.consumer_regs} cannot hold S, P and O fragments "
                   f"({fragment_regs(cfg, d)} registers at block_n={cfg.block_n}, "
                   f"head_dim={d}) plus {overhead} for the rest (q_stages={cfg.q_stages}): "
                   f"need {need}")
    smem, limit = smem_bytes(cfg, d), smem_limit(cfg.ctas_per_sm)
    if smem > limit:
        out.append(f"shared memory {smem} B ({cfg.q_stages} Q tile(s) + {cfg.stages} stages of "
                   "K and V tiles of "
                   f"{cfg.block_n} x {d}) exceeds the {limit} B a block may use with "
                   f"{cfg.ctas_per_sm} CTA(s) per SM")
    if cfg.rescale_threshold < 0:
        out.append(f"rescale_threshold={cfg.rescale_threshold} must be >= 0")
    if problem.dtype == "float16" and cfg.rescale_threshold > 15:
        out.append(f"rescale_threshold={cfg.rescale_threshold} lets P reach "
                   f"2^{cfg.rescale_threshold}, past float16's largest value (65504 < 2^16)")
    if cfg.order not in ORDERS:
        out.append(f"order={cfg.order!r} is not one of {ORDERS}")
    return out


def legal_configs(problem: AttentionProblem):
    """Every legal config of the search space for `problem`, in KNOBS order."""
    names = list(KNOBS)
    for values in itertools.product(*(KNOBS[n] for n in names)):
        cfg = AttentionSm90Config(**dict(zip(names, values)))
        if not violations(cfg, problem):
            yield cfg


ORDER_CODES = {"head": 0, "lpt": 1, "group": 2}
NO_CTA_LIMIT = 2**31 - 1  # max_ctas of a non-persistent launch: one CTA per tile


def launch_scalars(cfg: AttentionSm90Config, num_sms: int) -> tuple[int, int]:
    """The kernel's launch-time parameters (max_ctas, order) for `cfg` on a GPU with `num_sms`
    SMs (kernels/fa4/sm90.py says what they do)."""
    return (num_sms * cfg.ctas_per_sm if cfg.persistent else NO_CTA_LIMIT), ORDER_CODES[cfg.order]


def template_files() -> list[str]:
    """The sources a compiled Hopper attention kernel depends on (its version is their hash)."""
    fa4 = Path(__file__).resolve().parent
    return [str(fa4 / f) for f in ("sm90.py", "_sm90_config.py", "_sm90_mma.py", "problem.py")
            ] + [str(fa4.parent / "gemm" / "_sm90_wgmma.py")]


def compile_key(cfg: AttentionSm90Config) -> tuple:
    """Configs with equal keys share one binary (they differ only in launch-time knobs)."""
    return tuple(v for k, v in sorted(cfg.as_dict().items()) if k not in RUNTIME_KNOBS)


# Hand-tuned defaults per (head_dim, causal), and why:
# - two consumers (BLOCK_M = 128) with ping-pong and intra-warpgroup overlap, FA3's design: the
#   softmax of one consumer (exp2 on the MUFU, max/sum on the FMA pipe) hides behind the other's
#   wgmmas, and within a consumer behind its own P V; 240/32 registers for consumers/producer.
# - block_n: the widest K/V tile whose S, P and O fragments stay in 240 registers cuts the
#   per-tile fixed cost (barrier waits, row max/sum reductions, O rescale) per FLOP.
# - head_dim 64: O needs half the registers, so three consumers (BLOCK_M = 192) with 160 each
#   fit (with block_n = 128: S, P and O take 128), and the wider M amortizes every K/V tile over
#   more queries.
# - two stages: a stage holds a K and a V tile; more stages cost shared memory the wide tiles
#   need, and two already cover the TMA latency at these tile sizes.
# - conditional rescale with threshold 8 (FA4): after the first tiles the row max rarely grows
#   by more than 2^8, so most tiles skip the 64 multiplies per thread of the O rescale.
# - one CTA per tile in "head" order, causal too: a head's query tiles run side by side and
#   share its K/V in L2. Measured on an H100 (studies/2026-11-23-h100-fa4-sm90-bench/), "lpt"
#   (longest first across heads, for balance) spreads the running CTAs over 132 heads whose
#   K/V do not fit in L2 (causal 4k: DRAM 59% busy, 445 vs 485 TFLOP/s; 1k non-causal 334 vs
#   536); persistent CTAs beat one CTA per tile only once (non-causal 16k, block_n 160, +2%).
# - causal block_n = block_m (128): only the diagonal tile needs the mask; wider or narrower
#   key tiles mask up to two tiles per query tile and lost 27-61% at 1k-4k.
# - one Q stage: a second pays only with persistent CTAs (their next tile's loads overlap this
#   one's end), and their static walk is unbalanced under a causal mask: at causal 16k persistent
#   + q_stages 2 ran 448 TFLOP/s against the default's 608 (studies/2026-11-23-h100-fa4-sm90-s4/).
#   Non-causal it gained 4% (geomean of 1k-16k, 612 vs 588), measured on the four shapes it would
#   be chosen from only: not adopted until judged on others.
DEFAULTS = {
    (128, False): AttentionSm90Config(block_n=176, rescale_threshold=8.0),
    (128, True): AttentionSm90Config(block_n=128, rescale_threshold=8.0),
    (64, False): AttentionSm90Config(block_n=128, consumers=3, consumer_regs=160,
                                     rescale_threshold=8.0),
    (64, True): AttentionSm90Config(block_n=128, consumers=3, consumer_regs=160,
                                    rescale_threshold=8.0),
}


def default_config(problem: AttentionProblem) -> AttentionSm90Config:
    return DEFAULTS[(problem.head_dim, problem.causal)]
