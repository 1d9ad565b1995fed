"""Compile every legal config of the sm_100a FA4 template (kernels/fa4/sm100.py) for the sweep
problem and record registers, spills, stack and shared memory per config.
tests/test_fa4_sm100_sweep_record.py checks the record (every legal config compiles with zero
spills); the sweep itself takes about a CPU-hour, too much for CI.

    .venv/bin/python scripts/sweep_fa4_sm100_compile.py --jobs 2      # the full sweep
    .venv/bin/python scripts/sweep_fa4_sm100_compile.py --limit 4     # a quick look

The sweep problem is causal GQA 4:1 at head_dim 128 in bf16, the code paths every other problem
of that head_dim uses plus the causal mask and packed query rows; batch and sequence lengths are
runtime sizes, so they are no part of it. The rescale threshold is a launch argument: every
threshold shares one binary. The record (JSON lines: a header, then one row per config) is
written and resumed as tirx/sweep.py describes.
"""

from __future__ import annotations

import dataclasses
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autotune.store import template_hash  # noqa: E402
from kernels.fa4 import sm100  # noqa: E402
from kernels.fa4.problem import AttentionProblem  # noqa: E402
from tirx import sweep  # noqa: E402

PROBLEM = AttentionProblem(head_dim=128, heads_q=4, heads_kv=1, causal=True, dtype="bfloat16")
RECORD = ROOT / "studies" / "2026-11-23-fa4-sm100-compile-sweep" / "fa4_sm100_compile_sweep.jsonl"
ARCH = "sm_100a"


def identity() -> dict:
    from tirx.compile import toolchain_versions

    return {"space": "fa4_sm100", "arch": ARCH, "problem": dataclasses.asdict(PROBLEM),
            "template": template_hash(types.SimpleNamespace(template_files=sm100.template_files)),
            "versions": toolchain_versions()}


def configs() -> list[dict]:
    return [dataclasses.asdict(c) for c in sm100.legal_configs(PROBLEM)]


def build_config(config: dict):
    return sm100.build(sm100.Fa4Config(**config), PROBLEM)


if __name__ == "__main__":
    raise SystemExit(sweep.main(__doc__, configs(), build_config, ARCH, RECORD, identity))
