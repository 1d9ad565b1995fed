"""Search space of the Hopper GEMM template (kernels/gemm/sm90.py): D = A @ B^T.

Legality rules (checked before anything compiles; `violations` names each broken one):
- shape: dtype bf16/fp16, N and K multiples of 8 (TMA needs 16-byte aligned row strides);
- shared memory: 1024 + stages*(BLK_M + BLK_N)*BLK_K*2 (+ the TMA-store epilogue's staging:
  consumers x 2 buffers x wg_m x one swizzle row of 64/32/16 columns x 2 B) <= 232448 B;
- registers: f32 accumulators per consumer thread (wg_m/64 * BLK_N/2) must fit the entry
  register cap 65536/threads next to ~40 registers of addressing: <= 128 with two consumers
  (384 threads, 168 registers), <= 192 with one (256 threads, 255 registers); <= 64 for two
  consumers of wg_m=128 with the register epilogue (measured: more spills);
- wgmma: N = BLK_N in [16, 256], a multiple of 16 (wgmma takes 8; the accumulator fences,
  epilogue chunks and 2x1 multicast halves take 16-column groups);
  BLK_K a multiple of 64 (one 128-byte swizzle row per 64 elements);
- swap-AB writes D^T through registers: it needs the register epilogue.
- split-K (a cluster of split_k CTAs per tile, reduced through DSMEM): one tile per cluster
  (not persistent), no multicast cluster, the register epilogue; each rank gets >= 1 K tile
  (and stores an even share of the accumulators: every offered BLK_N allows it); at most 96
  accumulators per thread (160 for one consumer at split 2: measured spills); the f32 partials
  (consumers x accumulators x 128 x 4 B) overlay the ring, so they count in shared memory.

Not in the space: stream-K, fp8, and a ping-pong consumer schedule. Ping-pong was tried,
ran correctly and was 4-19% slower on the H100 suite's large shapes:
studies/2026-11-22-h100-gemm-sm90/README.md.
"""

from __future__ import annotations

from pathlib import Path

from kernels.gemm._sm90_config import (
    H100_SMS,
    GemmConfig,
    accumulator_regs,
    check_shape,
    smem_bytes,
)

from ..ops.gemm import GEMM
from .base import CategoricalKnobs, Config, Problem, SearchSpace

SMEM_LIMIT = 232448
MAX_ACC_REGS = {1: 192, 2: 128}
# Measured (ptxas, sm_90a): wg_m=128 x2 consumers with the register epilogue spills from 96
# accumulators on (the TMA-store epilogue and wg_m=64 do not, up to 128).
MAX_ACC_REGS_TWO_ATOM_REG_EPILOGUE = 64
# Measured (ptxas, sm_90a): split-K's reduction needs registers beside the accumulators; above
# these (by consumers, then split_k) it spills (e.g. 2 consumers x 112 at split 2: 152 B).
MAX_ACC_REGS_SPLIT_K = {1: {2: 160, 4: 96}, 2: {2: 96, 4: 96}}
CLUSTERS = {"1x1": (1, 1), "2x1": (2, 1), "1x2": (1, 2)}

# The knobs and their values; `swap_ab` is offered for skinny problems only.
KNOBS: dict[str, tuple] = {
    "wg_m": (64, 128),
    "consumers": (1, 2),
    "blk_n": tuple(range(16, 257, 16)),
    "blk_k": (64, 128),
    "stages": (2, 3, 4, 5, 6, 7, 8),
    "cluster": tuple(CLUSTERS),
    "persistent": (True, False),
    "raster": ("m", "n"),
    "group": (1, 2, 4, 8, 16),
    "epilogue": ("tma", "reg"),
    "swap_ab": (False, True),
    "split_k": (1, 2, 4),
    "l2_evict": ("first", "normal"),
}
SKINNY_M = 128

# Shapes of the suite: squares and Llama-3-8B projections (N x K) at several M.
LLAMA3_8B_NK = ((6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336))
SUITE = tuple(f"{s}x{s}x{s}" for s in (2048, 4096, 8192)) + tuple(
    f"{m}x{n}x{k}" for m in (16, 128, 512, 2048, 8192) for n, k in LLAMA3_8B_NK
)


def kernel_config(config: Config):
    """The template's GemmConfig for a space config."""
    cm, cn = CLUSTERS[config["cluster"]]
    fields = {k: v for k, v in config.items() if k != "cluster"}
    return GemmConfig(cluster_m=cm, cluster_n=cn, **fields)


def _one_wave_blk_n(n: int, row_tiles: int, sms: int = H100_SMS) -> int:
    """The narrowest BLK_N (a multiple of 16, at most 256) whose row_tiles x N/BLK_N tiles fit
    one wave of `sms` CTAs."""
    per_row = max(1, sms // row_tiles)
    return min(256, 16 * -(-n // (16 * per_row)))


def _last_wave_fill(tiles: int, sms: int = H100_SMS) -> float:
    """Fraction of the SM slots the tiles occupy over their waves (1.0: no idle SMs)."""
    return tiles / (-(-tiles // sms) * sms)


class GemmSm90Space(CategoricalKnobs, SearchSpace):
    name = "gemm_sm90"
    arch = "sm_90a"
    op = GEMM
    default_shapes = SUITE

    # -- the space ------------------------------------------------------------------------
    def knob_values(self, problem: Problem) -> dict[str, tuple]:
        values = dict(KNOBS)
        if problem["M"] > SKINNY_M:
            values["swap_ab"] = (False,)
        return values

    def violations(self, config: Config, problem: Problem) -> list[str]:
        out = self._shape_violations(problem) + self.knob_violations(config, problem)
        if out:
            return out

        cfg = kernel_config(config)
        smem = smem_bytes(cfg)
        if smem > SMEM_LIMIT:
            out.append(f"shared memory {smem} B > {SMEM_LIMIT} B "
                       f"({cfg.stages} stages of ({cfg.blk_m}+{cfg.blk_n})x{cfg.blk_k}"
                       f"{' + the epilogue staging' if cfg.epilogue == 'tma' else ''})")
        acc, cap = accumulator_regs(cfg), MAX_ACC_REGS[cfg.consumers]
        if acc > cap:
            out.append(f"{acc} accumulator registers per thread > {cap} with "
                       f"{cfg.consumers} consumer warpgroup(s): would spill")
        elif (cfg.consumers == 2 and cfg.wg_m == 128 and cfg.epilogue == "reg"
              and acc > MAX_ACC_REGS_TWO_ATOM_REG_EPILOGUE):
            out.append(f"{acc} accumulators in two m64 atoms per thread with the register "
                       f"epilogue > {MAX_ACC_REGS_TWO_ATOM_REG_EPILOGUE} under the 168-register "
                       "cap of 384 threads: would spill (its per-atom store addressing)")
        if not (16 <= cfg.blk_n <= 256 and cfg.blk_n % 16 == 0):
            # wgmma takes multiples of 8; the template's accumulator fences and epilogue
            # chunks (and a 2x1 cluster's multicast halves) take whole 16-column groups
            out.append(f"BLK_N={cfg.blk_n} outside [16, 256] or not a multiple of 16")
        if cfg.swap_ab and cfg.epilogue != "reg":
            out.append("swap_ab writes D^T through registers: it needs epilogue='reg'")
        if cfg.split_k > 1:
            out += self._split_k_violations(cfg, problem)
        return out

    @staticmethod
    def _split_k_violations(cfg, problem: Problem) -> list[str]:
        sk, out = cfg.split_k, []
        if cfg.persistent:
            out.append(f"split_k={sk} runs one tile per cluster: it needs persistent=False")
        if cfg.cluster_size != sk:
            out.append(f"split_k={sk} occupies the cluster: it needs cluster='1x1'")
        if cfg.epilogue != "reg":
            out.append(f"split_k={sk} reduces and stores from registers: it needs epilogue='reg'")
        acc, cap = accumulator_regs(cfg), MAX_ACC_REGS_SPLIT_K[cfg.consumers][sk]
        if acc > cap:
            out.append(f"{acc} accumulators per thread > {cap} with split_k={sk} and "
                       f"{cfg.consumers} consumer(s): the reduction would spill")
        k_tiles = -(-problem["K"] // cfg.blk_k)
        if k_tiles < sk:
            out.append(f"split_k={sk} > {k_tiles} K tiles of BLK_K={cfg.blk_k}")
        return out

    def _shape_violations(self, problem: Problem) -> list[str]:
        try:
            check_shape(problem["M"], problem["N"], problem["K"], problem.dtype)
        except ValueError as exc:
            return [str(exc)]
        return []

    def default_config(self, problem: Problem) -> Config:
        """Hand-tuned per shape class; the reasoning:

        - decode, M <= 64: bandwidth-bound on B (the weights). Swap A and B so N fills the
          64-row wgmma side and M becomes the narrow wgmma N (the smallest offered BLK_N >= M):
          N/64 CTAs stream B with the deepest BLK_K=128 ring that fits (8 stages up to M=48,
          7 at M=64), one consumer each.
        - 64 < M <= 128: still skinny. When N/64 tiles fill at most half the SMs: swapped
          (BLK_N=128 covers M) and K split in two (8 stages), so twice the CTAs stream B
          (H100, 128x4096x4096: 173 vs 141 TFLOP/s; 128x4096x14336: 250 vs 207). Otherwise
          not swapped: one 128-row tile of M (two consumers) and the narrowest BLK_N whose
          tiles fit one wave of 132 SMs, deepest ring, TMA-store epilogue (128x6144x4096:
          209 vs 183 TFLOP/s swapped; 128x28672x4096 with BLK_N=224: 300 vs 265).
        - medium, M <= 1024: 128-row tiles (two 64-row consumers), BLK_N 128 or 192, whichever
          leaves the last wave of 132 SMs fuller (512x6144: 128 tiles of 128x192 in one wave,
          573 vs 452 TFLOP/s with 192 tiles of 128x128); persistent with grouped raster,
          TMA-store epilogue, the deepest ring that fits (6 or 4 stages).
        - large: 128x256 tiles (two 64-row consumers, 128 accumulators each, the widest that
          fits the register budget), 2x1 cluster multicasting B, persistent, group 8 for L2
          reuse, TMA-store epilogue; 4 stages fit beside its two 64-column staging buffers
          (4096^3: 744 vs 721 TFLOP/s with 3 stages).
        - operand loads evict-first in L2 up to M=1024, where each operand tile is read by few
          CTAs and streamed once: they no longer evict, and first write back, the dirty lines
          a previous kernel left (after a 256 MB memset, H100: 512x6144x4096 675 vs 578
          TFLOP/s, 128x4096x4096 212 vs 178; unchanged with a clean L2,
          scripts/ncu_gemm.py flushes). Large shapes reread tiles through L2: normal.
        """
        M = problem["M"]
        if M <= 64:
            blk_n = min(n for n in self.knob_values(problem)["blk_n"] if n >= M)
            return self._deepest(problem, self._complete(
                wg_m=64, consumers=1, blk_n=blk_n, blk_k=128, persistent=False,
                epilogue="reg", swap_ab=True))
        if M <= SKINNY_M:
            if 2 * -(-problem["N"] // 64) <= H100_SMS and problem["K"] >= 4 * 64:
                return self._complete(wg_m=64, consumers=1, blk_n=128, blk_k=64, stages=8,
                                      persistent=False, epilogue="reg", swap_ab=True, split_k=2)
            return self._deepest(problem, self._complete(
                blk_n=_one_wave_blk_n(problem["N"], 1), persistent=False, stages=2))
        if M <= 1024:
            rows = -(-M // 128)
            blk_n = max((128, 192), key=lambda n: _last_wave_fill(rows * -(-problem["N"] // n)))
            return self._complete(wg_m=64, consumers=2, blk_n=blk_n, blk_k=64,
                                  stages=6 if blk_n == 128 else 4)
        return self._complete(wg_m=64, consumers=2, blk_n=256, blk_k=64, stages=4, cluster="2x1",
                              l2_evict="normal")

    def seed_configs(self, problem: Problem) -> list[Config]:
        """Neighbours of the default that change one or two decisions of it: the alternatives
        that won somewhere in the H100 benchmarks of this shape class."""
        base = self.default_config(problem)
        M, N = problem["M"], problem["N"]

        def v(**kw):
            return self._deepest(problem, {**base, **kw})

        if M <= SKINNY_M:
            wide = dict(swap_ab=False, wg_m=64, consumers=2 if M > 64 else 1, blk_k=64,
                        persistent=False, split_k=1, blk_n=_one_wave_blk_n(N, 1))
            # cuBLAS's choice at 128x4096 and 128x6144 (H100, scripts/cublas_kernels.py): one
            # 64-row consumer per tile, so twice the CTAs fill the wave with wider BLK_N, and a
            # cluster pair multicasting the shared operand.
            half = dict(wide, consumers=1, blk_n=_one_wave_blk_n(N, -(-M // 64)), epilogue="tma")
            tries = [v(**half), v(**half, cluster="1x2"), v(**half, cluster="2x1"),
                     v(**{**half, "blk_k": 128}, cluster="1x2"),
                     v(blk_k=64), v(blk_n=max(base["blk_n"], 32)), v(persistent=True),
                     v(consumers=2), v(split_k=2), v(split_k=2, blk_k=64),
                     v(**wide, epilogue="tma"), v(**wide, epilogue="reg"),
                     v(**wide, epilogue="tma", cluster="1x2"),
                     v(**{**wide, "blk_n": min(256, 2 * wide["blk_n"])}, epilogue="tma"),
                     v(**{**wide, "blk_n": min(256, 2 * wide["blk_n"]), "split_k": 2},
                       epilogue="reg"),
                     v(swap_ab=True, wg_m=64, consumers=2, blk_n=max(64, base["blk_n"]),
                       epilogue="reg", split_k=1)]
        elif M <= 1024:
            rows = -(-M // 128)
            # the widest BLK_N whose tiles leave the last wave of SMs fullest (cuBLAS takes
            # 176 at 512x28672: 652 tiles in 5 waves of 132)
            fill = max(range(256, 127, -16), key=lambda n: _last_wave_fill(rows * -(-N // n)))
            tries = [v(blk_n=128), v(blk_n=192), v(blk_n=_one_wave_blk_n(N, rows)),
                     v(blk_n=fill), v(blk_n=fill, cluster="2x1"), v(cluster="1x2"),
                     v(cluster="2x1"), v(wg_m=128, consumers=1), v(persistent=False),
                     v(epilogue="reg"), v(blk_n=256, cluster="2x1"),
                     v(split_k=2, persistent=False, epilogue="reg")]
        else:
            tries = [v(stages=3), v(cluster="1x1"), v(cluster="1x2"), v(persistent=False),
                     v(raster="n"), v(group=16), v(blk_n=192), v(wg_m=128, blk_n=128),
                     v(epilogue="reg")]
        tries.append(v(l2_evict="normal" if base["l2_evict"] == "first" else "first"))
        out = []
        for c in tries:
            if c != base and c not in out and not self.violations(c, problem):
                out.append(c)
        return out

    def _deepest(self, problem: Problem, config: Config) -> Config:
        """`config` with the most stages that keep it legal (unchanged if none does)."""
        return next(({**config, "stages": s} for s in sorted(KNOBS["stages"], reverse=True)
                     if not self.violations({**config, "stages": s}, problem)), config)

    @staticmethod
    def _complete(**overrides) -> Config:
        base = dict(wg_m=64, consumers=2, blk_n=128, blk_k=64, stages=4, cluster="1x1",
                    persistent=True, raster="m", group=8, epilogue="tma", swap_ab=False,
                    split_k=1, l2_evict="first")
        base.update(overrides)
        return base

    # -- problems -------------------------------------------------------------------------
    def parse_problem(self, text: str, dtype: str = "bfloat16") -> Problem:
        problem = GEMM.parse(text, dtype)
        check_shape(problem["M"], problem["N"], problem["K"], dtype)
        return problem

    # -- building and checking ------------------------------------------------------------
    def build(self, config: Config, problem: Problem):
        from kernels.gemm.sm90 import build_gemm

        return build_gemm(problem["M"], problem["N"], problem["K"], problem.dtype,
                          kernel_config(config))

    def template_files(self) -> list[str]:
        import kernels.gemm

        root = Path(kernels.gemm.__file__).parent
        return [str(root / f) for f in ("sm90.py", "_sm90_wgmma.py", "_sm90_config.py")]
