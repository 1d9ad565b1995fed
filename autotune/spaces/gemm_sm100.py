"""Search space of the Blackwell GEMM template (kernels/gemm/sm100.py): D = A @ B^T, sm_100a.

Knobs (GemmConfig fields, and group_m): blk_n (B rows per CTA per stage; MMA N = blk_n *
cta_group), blk_k, stages (A/B ring depth), epi_n (epilogue chunk = TMA store width), epi_ld
(tcgen05.ld width), epi_stages (store buffers per epilogue warpgroup), cta_group (1, or 2 for the
paired 2-CTA MMA), consumers (MMA consumers sharing the staged B tile), multicast (cta_group 1:
2-CTA cluster sharing B through TMA multicast), group_m (raster group of the persistent
scheduler: a runtime knob, passed at launch, so its 5 values share one compiled kernel).

Legality rules (kernels.gemm.sm100.config_violations; each broken rule is named):
- shape: fp16/bf16; N and K multiples of 8 (TMA's 16-byte strides); any M >= 1;
- TMEM: consumers * blk_n * cta_group <= 512 fp32 columns;
- shared memory: 1024 + stages*(consumers*128 + blk_n)*blk_k*2 + consumers*epi_stages*128*epi_n*2
  <= 232448 B (TIRx does not check this itself);
- tcgen05.mma kind::f16: N = blk_n*cta_group a multiple of 16 in [16, 256] (M=128) or
  [32, 256] (M=256, cta_group 2);
- epilogue: epi_n in {16,32,64,128} dividing MMA N, epi_stages dividing the chunk count;
  tcgen05.ld width epi_ld in {16,32,64} <= epi_n (128-column loads spilled), and 128-column
  chunks with two consumers only through 16-column loads (wider spill at the 168-register start);
- TMA slabs: blk_k=128 needs K % 64 == 0 (B's 3-D tensor map);
- multicast only with cta_group 1, on halves of blk_n that are multiples of 8.

Not in the space (not implemented): a double-buffered accumulator (the TIRx-kernels GEMM's
"overlap_epilogue"), CLC work stealing, split-K, fp8/fp4.
"""

from __future__ import annotations

from pathlib import Path

from ..ops.gemm import GEMM
from .base import CategoricalKnobs, Config, Problem, SearchSpace

KNOBS: dict[str, tuple] = {
    "blk_n": (32, 64, 128, 192, 256),
    "blk_k": (64, 128),
    "stages": (2, 3, 4, 5, 6, 7, 8),
    "epi_n": (32, 64, 128),
    "epi_ld": (16, 32, 64),
    "epi_stages": (1, 2),
    "cta_group": (1, 2),
    "consumers": (1, 2),
    "multicast": (False, True),
    "group_m": (1, 2, 4, 8, 16),
}

# Hand-tuned defaults, keyed by N as the source keys them: the per-shape table GEMM_CONFIGS of
# mlc-ai/TIRx-kernels tirx_kernels/basic/fp16_bf16_gemm.py (commit 8ad56aa, 2026-08-17; the
# B200 bench-suite baseline of that repository records 92.5 us for bf16 4096^3 vs cuBLAS 90.3 us
# and 5.70 ms vs 5.61 ms for fp16 16384^3). Translation: cta_n is the MMA N with cta_group=2
# (blk_n = cta_n/2), cta_k = blk_k, pipe_depth = stages, wb_pipe_depth = MMA N / epi_n chunks with
# two store buffers, l2_group_size = group_m; overlap_epilogue=False is their two-consumer
# schedule, which loads TMEM 16 columns at a time (epi_ld=16); overlap_epilogue=True is one
# consumer with a double-buffered accumulator, whose nearest equivalent here is one consumer
# loading a whole chunk per tcgen05.ld.
_TIRX_KERNELS = "TIRx-kernels fp16_bf16_gemm.py GEMM_CONFIGS"
_PAIR = dict(cta_group=2, multicast=False)
DEFAULTS_BY_N: dict[int, tuple[str, Config]] = {
    1024: (f"{_TIRX_KERNELS}[1024]", dict(blk_n=32, blk_k=128, stages=5, epi_n=32, epi_ld=32,
                                          epi_stages=2, consumers=1, group_m=4, **_PAIR)),
    2048: (f"{_TIRX_KERNELS}[2048]", dict(blk_n=128, blk_k=64, stages=5, epi_n=64, epi_ld=64,
                                          epi_stages=2, consumers=1, group_m=8, **_PAIR)),
    4096: (f"{_TIRX_KERNELS}[4096]", dict(blk_n=128, blk_k=64, stages=4, epi_n=32, epi_ld=16,
                                          epi_stages=2, consumers=2, group_m=4, **_PAIR)),
}
# Everything else: their _DEFAULT_CONFIG (also their 8192 and 16384 entries).
FALLBACK = (f"{_TIRX_KERNELS} _DEFAULT_CONFIG", dict(
    blk_n=128, blk_k=64, stages=4, epi_n=32, epi_ld=16, epi_stages=2, consumers=2, group_m=8,
    **_PAIR))
# The book's final kernel (modern-gpu-programming-for-mlsys, chapter_gemm_advanced, step 9:
# "matches cuBLAS" at fp16 4096^3 on B200) is the same geometry with epi_n=64 and one store
# buffer; it is the repair target when a table entry breaks a shape rule (e.g. K % 64 != 0).
BOOK_STEP9 = dict(blk_n=128, blk_k=64, stages=4, epi_n=64, epi_ld=64, epi_stages=1,
                  consumers=2, group_m=8, **_PAIR)

SUITE = ("1024x1024x1024", "2048x2048x2048", "4096x4096x4096", "8192x8192x8192")


RUNTIME_KNOBS = ("group_m",)  # the kernel's scalar parameter, after A, B, D


def kernel_config(config: Config):
    """The template's GemmConfig (its compile-time knobs) for a space config."""
    from kernels.gemm.sm100 import GemmConfig

    return GemmConfig(**{k: v for k, v in config.items() if k not in RUNTIME_KNOBS})


class GemmSm100Space(CategoricalKnobs, SearchSpace):
    name = "gemm_sm100"
    arch = "sm_100a"
    op = GEMM
    default_shapes = SUITE
    runtime_knobs = RUNTIME_KNOBS

    # -- the space ------------------------------------------------------------------------
    def knob_values(self, problem: Problem) -> dict[str, tuple]:
        return dict(KNOBS)

    def violations(self, config: Config, problem: Problem) -> list[str]:
        out = self.knob_violations(config, problem)
        if out:
            return out
        from kernels.gemm.sm100 import config_violations

        return config_violations(kernel_config(config), problem["M"], problem["N"],
                                 problem["K"], problem.dtype)

    def compile_classes(self, problem: Problem) -> list[Config]:
        """One compile config per distinct binary among the legal configs, in their order."""
        classes = {self.compile_key(c): self.compile_config(c) for c in self.legal_configs(problem)}
        return list(classes.values())

    def default_source(self, problem: Problem) -> str:
        """Where default_config's values come from, for reports."""
        return self._default(problem)[0]

    def default_config(self, problem: Problem) -> Config:
        return dict(self._default(problem)[1])

    def _default(self, problem: Problem) -> tuple[str, Config]:
        source, config = DEFAULTS_BY_N.get(problem["N"], FALLBACK)
        if self.violations(config, problem):
            source, config = "book chapter_gemm_advanced step 9", BOOK_STEP9
        return source, config

    # -- problems -------------------------------------------------------------------------
    def parse_problem(self, text: str, dtype: str = "bfloat16") -> Problem:
        problem = GEMM.parse(text, dtype)
        from kernels.gemm.sm100 import DTYPES

        if dtype not in DTYPES:
            raise ValueError(f"GEMM {text}: dtype {dtype} is not supported (float16, bfloat16)")
        for name in ("N", "K"):
            if problem[name] < 8 or problem[name] % 8:
                raise ValueError(f"GEMM {text}: {name}={problem[name]} must be a positive "
                                 "multiple of 8 (TMA needs 16-byte row strides)")
        return problem

    # -- building and checking ------------------------------------------------------------
    def build(self, config: Config, problem: Problem):
        from kernels.gemm.sm100 import build

        return build(kernel_config(config), problem["M"], problem["N"], problem["K"],
                     problem.dtype)

    def resources(self, config: Config) -> dict[str, int]:
        """Shared memory, threads, TMEM columns and cluster size of a config: what
        tirx.check_resources takes, known before compiling."""
        cfg = kernel_config(config)
        return {"smem_bytes": cfg.smem_bytes, "threads": cfg.threads,
                "tmem_columns": cfg.tmem_columns, "cluster_size": cfg.cluster}

    def validate_numsim(self, config: Config, problem: Problem, seed: int = 0):
        """Simulate a legal config in NumSim (no GPU needed) at the proxy shape of `problem`'s
        dtype: two clusters of two tiles each, an M tail, three K stages
        (kernels/gemm/_sm100_numsim.py, shape "tiles"); a tirx.numsim.Verdict, skipped with
        the reason when NumSim cannot run here. The numsim runner calls it."""
        from kernels.gemm._sm100_numsim import validate

        return validate(kernel_config(config), config["group_m"], problem.dtype, seed)

    # -- identity -------------------------------------------------------------------------
    def template_files(self) -> list[str]:
        import kernels.gemm

        root = Path(kernels.gemm.__file__).parent
        return [str(root / "sm100.py"), str(root / "_sm100_kernel.py")]

