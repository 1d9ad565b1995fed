"""Search space of the Blackwell attention template (kernels/fa4/sm100.py): FlashAttention-4's
forward for sm_100a (tcgen05 MMAs, S/P and O in tensor memory, warp roles joined by mbarriers,
conditional rescale, exp2 emulation), on the attention op it shares with fa4_sm90.

Knobs (the template's KNOBS; their rules, sentences and the default's reasons live beside it):
- q_stages: query tiles in flight per CTA, one softmax warpgroup each (1, or FA4's ping-pong 2);
- kv_stages: depth of the shared-memory ring K and V tiles alternate in;
- s_stages: TMEM pipeline depth, S/P tiles per query stage (2: the next block's Q K^T overlaps
  this block's softmax);
- blk_n: keys per KV block (64 or 128; the query tile is fixed at tcgen05's 128 rows);
- softmax_regs: setmaxnreg budget of each softmax warpgroup (correction gets what is left);
- exp2_emu: of every 16 score columns, how many 2^x go through the FMA polynomial, not MUFU;
- scheduler: order of the tasks over the persistent CTAs (`linear`, or `lpt`: the heaviest
  causal query blocks first);
- rescale_threshold: the conditional rescale's threshold (log2 units), a launch argument: a
  runtime knob, so its values share one binary.

Legality (kernels.fa4.sm100.config_violations, each broken rule named): TMEM columns
q_stages*(s_stages*blk_n + head_dim) <= 512; shared memory (Q and O staging, the K/V ring,
barriers) <= 232,448 B; softmax registers enough for a row of blk_n fp32 scores; the
correction warpgroup left at least 56 registers of the pool; the threshold in [0, 30], at most
15 for fp16 (P reaches 2^threshold). Problems: head_dim 64 or 128, a GQA group dividing 128.

One binary serves every batch and sequence length (`runtime_fields`). The grid is the
template's fixed B200 count of persistent CTAs (148; compile-time, because NumSim needs a
static launch): on a part with another SM count it stays correct (CTAs stride over tasks).

With no sm_100 GPU, the numsim runner validates candidates in NumSim (`validate_numsim`) at a
proxy shape: batch 1, the problem's head_dim, causality, dtype and GQA ratio on one group of
heads (two heads for MHA), sequence lengths capped at PROXY_SEQLEN (384: no multiple of the
two-stage query tile), rows with no key included.
"""

from __future__ import annotations

import dataclasses

from kernels.fa4 import sm100 as template

from ..ops.attention import ATTENTION, BENCHMARK_SHAPES, RUNTIME_FIELDS, fa4_problem
from .base import CategoricalKnobs, Config, Problem, SearchSpace

RUNTIME_KNOBS = ("rescale_threshold",)  # the kernel's scalar parameter, after Q, K, V, O, LSE
PROXY_SEQLEN = 384


def kernel_config(config: Config) -> template.Fa4Config:
    """The template's Fa4Config (its compile-time knobs) for a space config."""
    return template.Fa4Config(**{k: v for k, v in config.items() if k not in RUNTIME_KNOBS})


def proxy(problem: Problem) -> tuple[template.AttentionProblem, int, int, int]:
    """(kernel problem, batch, seqlen_q, seqlen_k) NumSim validates a candidate of `problem` at."""
    p = fa4_problem(problem)
    heads = (p.group, 1) if p.group > 1 else (2, 2)
    small = dataclasses.replace(p, heads_q=heads[0], heads_kv=heads[1])
    return (small, 1, min(problem["seqlen_q"], PROXY_SEQLEN),
            min(problem["seqlen_k"], PROXY_SEQLEN))


class Fa4Sm100Space(CategoricalKnobs, SearchSpace):
    name = "fa4_sm100"
    arch = "sm_100a"
    op = ATTENTION
    default_shapes = BENCHMARK_SHAPES  # fa4_sm90's too: the two arches compare
    runtime_knobs = RUNTIME_KNOBS
    runtime_fields = RUNTIME_FIELDS

    # -- the space ------------------------------------------------------------------------
    def knob_values(self, problem: Problem) -> dict[str, tuple]:
        return {**template.KNOBS, "rescale_threshold": template.RESCALE_THRESHOLDS}

    def violations(self, config: Config, problem: Problem) -> list[str]:
        out = self.knob_violations(config, problem)
        if out:
            return out
        return template.config_violations(kernel_config(config), fa4_problem(problem),
                                          config["rescale_threshold"])

    def default_config(self, problem: Problem) -> Config:
        """The template's default_config (its docstring gives the reasons) at FA4's threshold
        8 (the paper's tau = log2 256)."""
        cfg = template.default_config(fa4_problem(problem))
        return {**dataclasses.asdict(cfg), "rescale_threshold": template.DEFAULT_RESCALE_THRESHOLD}

    def seed_configs(self, problem: Problem) -> list[Config]:
        """The default's neighbours in one decision each: always rescaling (threshold 0: the
        same binary), the other scheduler, the deeper TMEM pipeline, one query stage with the
        softmax registers it frees, 64-key blocks, no exp2 emulation."""
        base = self.default_config(problem)
        tries = [dict(base, rescale_threshold=0),
                 dict(base, scheduler="linear" if base["scheduler"] == "lpt" else "lpt"),
                 dict(base, s_stages=2), dict(base, q_stages=1, softmax_regs=240),
                 dict(base, blk_n=64), dict(base, exp2_emu=0)]
        return self.legal_variants(problem, base, tries)

    # -- problems -------------------------------------------------------------------------
    def parse_problem(self, text: str, dtype: str = "bfloat16") -> Problem:
        """An attention shape (ops/attention.py's syntax) this template takes (its
        problem_violations) and a study can tune (ATTENTION.untunable)."""
        problem = self.op.parse(text, dtype)
        bad = template.problem_violations(fa4_problem(problem)) + self.op.untunable(problem)
        if bad:
            raise ValueError(f"fa4_sm100 cannot tune {text}: " + "; ".join(bad))
        return problem

    # -- building and checking ------------------------------------------------------------
    def build(self, config: Config, problem: Problem):
        return template.build(kernel_config(config), fa4_problem(problem))

    def validate_numsim(self, config: Config, problem: Problem, seed: int = 0):
        """Simulate a legal config in NumSim (no GPU needed) at `problem`'s proxy shape and
        compare O and LSE with the float64 reference: a tirx.numsim.Verdict, skipped with the
        reason when NumSim cannot run here. The numsim runner calls it."""
        from kernels.fa4._sm100_numsim import validate

        small, batch, seqlen_q, seqlen_k = proxy(problem)
        return validate(kernel_config(config), small, batch, seqlen_q, seqlen_k,
                        config["rescale_threshold"], seed)

    def template_files(self) -> list[str]:
        return template.template_files()
