"""Blackwell (sm_100a) FlashAttention-4 forward in TIRx: O = softmax(scale * Q K^T) V and the
log-sum-exp of each row (scale 1/sqrt(head_dim) unless the problem sets one), for fp16/bf16
inputs with fp32 statistics.

Layout as FlashAttention's (kernels/fa4/problem.py has the conventions): Q and O
(batch, seqlen_q, heads_q, head_dim), K and V (batch, seqlen_k, heads_kv, head_dim), LSE
(batch, heads_q, seqlen_q) float32; GQA by grouping query heads; causal masks aligned
bottom-right. A binary is compiled for an AttentionProblem (head dim, head counts, causality,
dtype, softmax scale); batch and both sequence lengths are runtime sizes, read off the tensors.
The kernel's parameters are (Q, K, V, O, LSE, rescale_threshold): the last one an int32 launch
argument, so configs that differ only in it share one binary too.

The design follows FA4 ("Modern GPU Programming for MLSys", chapter_flash_attention):

- A CTA owns a task: `q_stages` query tiles of 128 rows (with GQA, 128 // group sequence
  positions times the group's query heads, packed) against one KV head. A fixed grid of
  persistent CTAs (one per SM) strides over the tasks in `scheduler` order: `linear` (batch,
  head, query block) or `lpt` (longest processing time first: the last query blocks, which
  see the most keys under a causal mask, of every head first). The grid is fixed because the
  task count depends on runtime sizes (and NumSim needs a static launch).
- Warp roles: warpgroup q < q_stages runs the softmax of query stage q and, after a task's
  last block, its epilogue (O / row sum from TMEM into shared memory, the LSE to global);
  warpgroup q_stages corrects (rescales O in TMEM); in the last warpgroup warp 0 issues the
  MMAs, warp 1 the TMA loads, warp 2 the TMA stores of O. mbarriers join them; setmaxnreg moves
  registers to the softmax warpgroups.
- TMEM holds, per query stage, `s_stages` score tiles S (128 x blk_n fp32) and the output
  accumulator O (128 x head_dim fp32); P (16-bit) overwrites the upper half of its S tile, and
  the P V MMA reads it from TMEM.
- The MMA warp interleaves the two MMA phases across query stages: P V of block t - s_stages,
  then Q K^T of block t, stage by stage, so the tensor core works on one stage while the other's
  softmax runs; with s_stages = 2 the Q K^T of the next block also overlaps the softmax of this
  one. K and V tiles go through one `kv_stages`-deep shared-memory ring in that order.
- Online softmax in base 2 with FA4's conditional rescale: the running reference (row max)
  is only moved when a block's max exceeds it by more than `rescale_threshold` (log2 units);
  then the correction warpgroup rescales O in TMEM, warp by warp, only where a row needs it.
- `exp2_emu` of every 16 columns of an unmasked block evaluate 2^x with a cubic polynomial on
  the FMA units instead of the MUFU ex2 unit, sharing the exponential load.
- Blocks are visited from the last one down: the blocks that need masking (the causal diagonal,
  the seqlen_k tail) come first. Rows past seqlen_q are computed on zero-filled Q and clipped by
  the TMA store; key columns past seqlen_k are masked.

Legality of a config against the hardware and the problem is `config_violations`, checked before
anything compiles; `build` assumes a legal config.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

from .. import registers
from .problem import AttentionProblem

BLK_M = 128  # query rows per tile: the tcgen05 M, one row per softmax thread
TMEM_COLUMNS = 512  # fp32 columns of tensor memory per SM (all allocated)
SMEM_LIMIT = 232448  # max dynamic shared memory per block on sm_100 (227 KiB)
BARRIER_BYTES = 1024  # mbarriers and the TMEM address slot live below the first tile
HEAD_DIMS = (64, 128)
SCHEDULERS = ("linear", "lpt")
B200_SMS = 148
# setmaxnreg budgets of the two lean warpgroups. The issue warpgroup's MMA warp keeps its
# loop-invariant descriptors (a Q K^T and a P V of 8 K steps each per query stage) in registers:
# below 88 ptxas spilled there with two query stages at head_dim 128 (the book's FA4 gives it
# 48; its descriptor handling differs). Correction needs 16 fp32 columns of O, its scale and
# indices, and gets what the softmax warpgroups leave, at least CORRECTION_MIN_REGS.
ISSUE_REGS = 88
CORRECTION_MIN_REGS = 56
# A softmax thread holds its row of blk_n fp32 scores, a 32-column chunk of 16-bit P and the
# row's statistics; with 128-column rows ptxas spilled at 176 registers (measured: two configs).
SOFTMAX_MIN_REGS = {64: 176, 128: 184}
CORRECTION_MAX_REGS = 128
# Largest rescale threshold fp16 P can take: P reaches 2^threshold, fp16 stops at 65504 < 2^16.
FP16_MAX_THRESHOLD = 15

# The knobs and the values a search may give them (kernel-level: the plugin reads them).
KNOBS: dict[str, tuple] = {
    "q_stages": (1, 2),
    "kv_stages": (2, 3, 4),
    "s_stages": (1, 2),
    "blk_n": (64, 128),
    "softmax_regs": (176, 184, 208, 240),
    "exp2_emu": (0, 2, 4),
    "scheduler": SCHEDULERS,
}
RESCALE_THRESHOLDS = (0, 4, 8, 12)  # the launch argument's values (log2 units)
DEFAULT_RESCALE_THRESHOLD = 8  # the FA4 paper's tau = log2(256)


@dataclasses.dataclass(frozen=True)
class Fa4Config:
    """The template's compile-time knobs; the rescale threshold is passed at launch."""

    q_stages: int = 2  # query tiles in flight per CTA, one softmax warpgroup each
    kv_stages: int = 3  # depth of the shared-memory ring K and V tiles alternate in
    s_stages: int = 1  # TMEM pipeline depth: S/P tiles per query stage
    blk_n: int = 128  # keys per KV block: the width of S
    softmax_regs: int = 184  # setmaxnreg budget of each softmax warpgroup
    exp2_emu: int = 2  # of every 16 columns of an unmasked block, how many the polynomial does
    scheduler: str = "linear"

    # Template constants the kernel body reads off its config (it imports nothing from here);
    # unannotated, so they are class attributes, not fields.
    blk_m = BLK_M
    tmem_alloc_columns = TMEM_COLUMNS
    issue_regs = ISSUE_REGS

    @property
    def warpgroups(self) -> int:
        return self.q_stages + 2  # softmax..., correction, load/MMA/store

    @property
    def threads(self) -> int:
        return 128 * self.warpgroups

    def tmem_columns(self, head_dim: int) -> int:
        """fp32 TMEM columns used: per query stage, s_stages S tiles and one O accumulator."""
        return self.q_stages * (self.s_stages * self.blk_n + head_dim)

    def smem_bytes(self, head_dim: int) -> int:
        """Q and O staging per query stage, the K/V ring, the scale mailbox, barriers."""
        tile = head_dim * 2  # bytes of one 16-bit row
        q_and_o = 2 * self.q_stages * BLK_M * tile
        kv = self.kv_stages * self.blk_n * tile
        mailbox = self.q_stages * BLK_M * 4
        return BARRIER_BYTES + q_and_o + kv + mailbox

    @property
    def correction_regs(self) -> int:
        """What the softmax and issue warpgroups leave in the register pool, capped."""
        left = registers.pool(self.warpgroups) - self.q_stages * self.softmax_regs - ISSUE_REGS
        return min(CORRECTION_MAX_REGS, left // 8 * 8)


def problem_violations(problem: AttentionProblem) -> list[str]:
    """Every rule the problem breaks for this template, one sentence each."""
    out = problem.errors()
    if out:
        return out
    if problem.head_dim not in HEAD_DIMS:
        out.append(f"head_dim={problem.head_dim} must be 64 or 128 (the O accumulator's TMEM "
                   "columns and the 128-byte swizzled shared-memory rows are laid out for those)")
    if BLK_M % problem.group:
        out.append(f"the GQA group heads_q/heads_kv={problem.group} must divide {BLK_M}: a query "
                   "tile packs 128/group positions of every head of the group")
    return out


def config_violations(cfg: Fa4Config, problem: AttentionProblem,
                      rescale_threshold: int = DEFAULT_RESCALE_THRESHOLD) -> list[str]:
    """Every hardware or template rule `cfg` (launched with `rescale_threshold`) breaks for
    this problem, one sentence each."""
    out = problem_violations(problem)
    if out:
        return out
    for name, values in KNOBS.items():
        if getattr(cfg, name) not in values:
            out.append(f"{name}={getattr(cfg, name)!r} must be one of {values}")
    if out:
        return out
    d = problem.head_dim
    if cfg.tmem_columns(d) > TMEM_COLUMNS:
        out.append(f"TMEM: q_stages*(s_stages*blk_n + head_dim) = {cfg.tmem_columns(d)} fp32 "
                   f"columns exceeds {TMEM_COLUMNS}")
    if cfg.smem_bytes(d) > SMEM_LIMIT:
        out.append(f"shared memory {cfg.smem_bytes(d)} B (1024 + 2*q_stages*128*head_dim*2 + "
                   f"kv_stages*blk_n*head_dim*2 + q_stages*512) exceeds the {SMEM_LIMIT} B "
                   "per-block limit")
    if cfg.softmax_regs < SOFTMAX_MIN_REGS[cfg.blk_n]:
        out.append(f"registers: a softmax thread holds {cfg.blk_n} fp32 scores of its row; "
                   f"softmax_regs={cfg.softmax_regs} is below the {SOFTMAX_MIN_REGS[cfg.blk_n]} "
                   f"that holds without spilling at blk_n={cfg.blk_n}")
    if cfg.correction_regs < CORRECTION_MIN_REGS:
        out.append(f"registers: {cfg.q_stages} softmax warpgroups at {cfg.softmax_regs} and the "
                   f"issue warpgroup at {ISSUE_REGS} leave the correction warpgroup "
                   f"{cfg.correction_regs} of the {registers.pool(cfg.warpgroups)} per-thread "
                   f"pool, fewer than {CORRECTION_MIN_REGS}")
    if not 0 <= rescale_threshold <= 30:
        out.append(f"rescale_threshold={rescale_threshold} must be in [0, 30] (log2 units)")
    elif problem.dtype == "float16" and rescale_threshold > FP16_MAX_THRESHOLD:
        out.append(f"rescale_threshold={rescale_threshold} overflows fp16 P (it reaches "
                   f"2^threshold; fp16 stops at 65504): at most {FP16_MAX_THRESHOLD}")
    return out


def legal_configs(problem: AttentionProblem,
                  rescale_threshold: int = DEFAULT_RESCALE_THRESHOLD) -> list[Fa4Config]:
    """Every config of the KNOBS values that breaks no rule for `problem`, in KNOBS order."""
    configs = (Fa4Config(**dict(zip(KNOBS, values))) for values in itertools.product(*KNOBS.values()))
    return [c for c in configs if not config_violations(c, problem, rescale_threshold)]


def template_files() -> list[str]:
    """The sources a compiled FA4 kernel depends on (its template's version is their hash)."""
    here = Path(__file__).resolve().parent
    return [str(here / name) for name in ("sm100.py", "_sm100_kernel.py", "problem.py")] + [
        str(here.parent / "registers.py")]


def default_config(problem: AttentionProblem) -> Fa4Config:
    """The hand-picked config, with reasons:

    - two query stages (FA4's ping-pong: the tensor core runs one stage's MMAs while the other
      stage's softmax runs), 128-key blocks (half the MMA issues and barrier round trips of
      64), one S tile per stage (at head_dim 128 two stages of S and O fill the 512 columns);
    - three K/V stages, the most shared memory holds next to two Q and two O tiles at
      head_dim 128 (231,424 of 232,448 B), as the book's kernel;
    - softmax warpgroups at 184 registers (each thread holds a row of 128 fp32 scores and a
      32-column chunk of its 16-bit P), the most two of them can take next to the issue
      warpgroup's 88 and correction's 56 (the book splits 200/200/64/48; our MMA warp needs
      more, see ISSUE_REGS);
    - 2 of 16 columns through the polynomial exp2 (about the book's share);
    - causal attention visits the heaviest query blocks first (LPT), so the persistent CTAs
      finish together; non-causal tasks are equal and go in linear order.
    """
    return Fa4Config(scheduler="lpt" if problem.causal else "linear")


def build(cfg: Fa4Config, problem: AttentionProblem, sm_count: int = B200_SMS,
          fixed_threshold: int | None = None):
    """The TIRx PrimFunc for one legal config: fa4(Q, K, V, O, LSE, rescale_threshold), for any
    batch and sequence lengths; a grid of `sm_count` persistent CTAs.

    `fixed_threshold` compiles the rescale threshold in and leaves the parameter unused, for an
    executor that binds buffers only (NumSim; specialize the parameter away)."""
    from ._sm100_kernel import make_kernel

    return make_kernel(cfg, problem, sm_count, fixed_threshold)
