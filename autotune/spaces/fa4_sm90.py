"""Search space of the Hopper attention template (kernels/fa4/sm90.py): FlashAttention's forward
with FA3's warp specialization and FA4's conditional rescale, on the attention op.

The knobs, their legality rules and the hand-tuned defaults (with their reasons) live beside
the template in kernels/fa4/_sm90_config.py (plain Python, no TVM); this plugin presents them
to the tuner: `violations` are that module's sentences, `default_config` its DEFAULTS.

One binary serves every batch and sequence length (`runtime_fields`): the kernel reads them off
its tensors. `persistent` and `order` are launch-time scalars (`runtime_knobs`): configs that
differ only in them share a binary; at launch they become (max_ctas, order), max_ctas being the
GPU's SM count for a persistent kernel.
"""

from __future__ import annotations

import functools

from kernels.fa4 import _sm90_config as cfg_rules
from kernels.fa4._sm90_config import AttentionSm90Config

from ..ops.attention import ATTENTION, BENCHMARK_SHAPES, RUNTIME_FIELDS, fa4_problem
from .base import CategoricalKnobs, Config, Problem, SearchSpace

H100_SMS = 132  # max_ctas where no GPU is visible (compiling, CPU tests): H100 SXM's SM count


@functools.lru_cache(maxsize=1)
def sm_count() -> int:
    """SMs of the GPU launches go to (device 0, as the runner's workers and dispatch see it)."""
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_properties(0).multi_processor_count
    except ImportError:
        pass
    return H100_SMS


class Fa4Sm90Space(CategoricalKnobs, SearchSpace):
    name = "fa4_sm90"
    arch = "sm_90a"
    op = ATTENTION
    default_shapes = BENCHMARK_SHAPES
    runtime_knobs = cfg_rules.RUNTIME_KNOBS
    runtime_fields = RUNTIME_FIELDS

    def knob_values(self, problem: Problem) -> dict[str, tuple]:
        return dict(cfg_rules.KNOBS)

    def violations(self, config: Config, problem: Problem) -> list[str]:
        out = self.knob_violations(config, problem)
        if out:
            return out
        return cfg_rules.violations(AttentionSm90Config.from_dict(config), fa4_problem(problem))

    def default_config(self, problem: Problem) -> Config:
        """kernels/fa4/_sm90_config.py's DEFAULTS per (head_dim, causal), which say why. A head
        dim the template lacks gets head_dim 128's, which `violations` then refuses by name
        (dispatch serves such calls with the vendor op and says so)."""
        key = (problem["head_dim"], problem["causal"])
        default = cfg_rules.DEFAULTS.get(key) or cfg_rules.DEFAULTS[(128, problem["causal"])]
        return default.as_dict()

    def seed_configs(self, problem: Problem) -> list[Config]:
        """The default's neighbours in one decision each: the launch-time scheduling (free: the
        same binary), the K/V tile a step either way, a deeper ring, and the rescale and overlap
        choices the defaults argue for, and a second Q stage where it fits (it pays with
        persistent CTAs, a launch-time step away: the next tile's Q loads during this one)."""
        base = self.default_config(problem)
        widths = cfg_rules.KNOBS["block_n"]
        i = widths.index(base["block_n"])
        tries = [dict(base, persistent=not base["persistent"]),
                 *(dict(base, order=o) for o in cfg_rules.ORDERS if o != base["order"]),
                 *(dict(base, block_n=widths[j]) for j in (i - 1, i + 1) if 0 <= j < len(widths)),
                 dict(base, stages=3), dict(base, rescale_threshold=0.0),
                 dict(base, overlap=not base["overlap"]),
                 dict(base, q_stages=2)]
        return self.legal_variants(problem, base, tries)

    def parse_problem(self, text: str, dtype: str = "bfloat16") -> Problem:
        """An attention shape (ops/attention.py's syntax) that can be tuned (ATTENTION.untunable)
        and that this template takes (head_dim 64 or 128)."""
        problem = self.op.parse(text, dtype)
        bad = self.op.untunable(problem)
        if problem["head_dim"] not in cfg_rules.HEAD_DIMS:
            bad.append(f"head_dim={problem['head_dim']} is not one of {cfg_rules.HEAD_DIMS}")
        if bad:
            raise ValueError(f"fa4_sm90 cannot tune {text}: " + "; ".join(bad))
        return problem

    def launch_scalars(self, config: Config) -> list:
        """(max_ctas, order) as the kernel takes them (kernels/fa4/sm90.py)."""
        return list(cfg_rules.launch_scalars(AttentionSm90Config.from_dict(config), sm_count()))

    def build(self, config: Config, problem: Problem):
        from kernels.fa4.sm90 import build_attention

        return build_attention(fa4_problem(problem), AttentionSm90Config.from_dict(config))

    def template_files(self) -> list[str]:
        return cfg_rules.template_files()
