"""The Hopper attention binaries the GPU tests run, and their prebuilt form.

GPU machines have no TVM: `python tests/fa4_sm90_kernels.py OUT_DIR` compiles every binary here
into OUT_DIR/<name>/ (cubin and launch description; the CUDA source is left out to travel
light); `load(name)` reads them there (or builds them where TVM exists). Names, problems and
configs are computed the same way on both machines (the sweep's sample is seeded).

Three sets: MATRIX, the hand-tuned default for each problem class the correctness matrix needs
(dtype, causal, head_dim, heads: MHA 16:16, GQA 32:8 and 28:4); PREFETCH, the bfloat16 head_dim
128 defaults of MHA 16:16 and causal GQA 32:8 with a second Q stage; and SWEEP, a seeded sample of
legal configs of the search space (40 binaries, 6 of them two CTAs per SM), each with a problem
class of its own.

The compile sweep of the whole legal space (every binary, i.e. every legal config up to its
launch-time knobs, at SWEEP_PROBLEM) is an hour of CPU, so CI checks its committed record,
made by scripts/sweep_fa4_sm90_compile.py (RECORD).
"""

from __future__ import annotations

import dataclasses
import os
import random
import sys
from pathlib import Path

from kernels.fa4._sm90_config import (
    KNOBS,
    AttentionSm90Config,
    compile_key,
    default_config,
    legal_configs,
    template_files,
    violations,
)
from kernels.fa4.problem import AttentionProblem

PREBUILT = Path(os.environ.get("AUTOTUNE_PREBUILT",
                               Path(__file__).resolve().parents[1] / ".prebuilt")) / "fa4_sm90"
ARCH = "sm_90a"
ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "studies" / "2026-11-23-fa4-sm90-compile-sweep" / "fa4_sm90_compile_sweep.jsonl"
# the CI problem: GQA, causal (the masked path holds the most registers), bfloat16
SWEEP_PROBLEM = AttentionProblem(head_dim=128, heads_q=32, heads_kv=8, causal=True)


def _matrix():
    out = {}
    for dtype in ("bfloat16", "float16"):
        for causal in (False, True):
            for hq, hkv in ((16, 16), (32, 8), (28, 4)):
                p = AttentionProblem(head_dim=128, heads_q=hq, heads_kv=hkv, causal=causal,
                                     dtype=dtype)
                out[f"hd128_{dtype}_{'causal' if causal else 'full'}_{hq}x{hkv}"] = p
    for causal in (False, True):
        p = AttentionProblem(head_dim=64, heads_q=16, heads_kv=16, causal=causal)
        out[f"hd64_bfloat16_{'causal' if causal else 'full'}_16x16"] = p
    return {name: (p, default_config(p)) for name, p in out.items()}


def _sweep(count: int, seed: int, prefix: str, **fixed):
    """`count` legal configs with distinct binaries, drawn uniformly from the knob grid (knobs
    in `fixed` held at their value), each paired with a problem class drawn alike (head_dim
    128 and 64, both dtypes, causal or not, MHA or GQA)."""
    rng = random.Random(seed)
    out, seen = {}, set()
    while len(out) < count:
        cfg = AttentionSm90Config(**{k: fixed.get(k, rng.choice(v)) for k, v in KNOBS.items()})
        hq, hkv = rng.choice(((8, 8), (8, 2)))
        p = AttentionProblem(head_dim=rng.choice((128, 128, 64)), heads_q=hq, heads_kv=hkv,
                             causal=rng.random() < 0.5, dtype=rng.choice(("bfloat16", "float16")))
        key = (compile_key(cfg), p)
        if violations(cfg, p) or key in seen:
            continue
        seen.add(key)
        out[f"{prefix}{len(out):02d}"] = (p, cfg)
    return out


MATRIX = _matrix()
# the default with a second Q stage (block_n at most 128, so that it fits), for classes the
# benchmark runs it on (the same binaries as the benchmark's: same problem, same config)
PREFETCH = {f"{name}_q2": (p, dataclasses.replace(c, q_stages=2, block_n=min(c.block_n, 128)))
            for name, (p, c) in MATRIX.items()
            if p.dtype == "bfloat16" and p.head_dim == 128 and (p.heads_q, p.heads_kv) in
            ((16, 16), (32, 8)) and (p.causal or p.heads_q == 16)}
# the whole grid, and the few configs that run two CTAs per SM (a uniform draw meets ~1 in 20)
SWEEP = {**_sweep(34, 20, "sweep"), **_sweep(6, 21, "sweep2cta", ctas_per_sm=2)}
KERNELS = {**MATRIX, **PREFETCH, **SWEEP}


def build(name: str):
    import tirx
    from kernels.fa4.sm90 import build_attention

    problem, cfg = KERNELS[name]
    return tirx.build(build_attention(problem, cfg), ARCH)


def load(name: str):
    """(artifact, problem, config): prebuilt where it exists, else compiled here."""
    import tirx

    problem, cfg = KERNELS[name]
    if (PREBUILT / name / "artifact.json").exists():
        return tirx.Artifact.load(PREBUILT / name), problem, cfg
    return build(name), problem, cfg


def prebuild(out: Path, names) -> None:
    for name in names:
        art = build(name)
        art.save(out / name, source=False)
        print(f"{name}: {art.resources.registers} regs, {art.resources.spill_bytes} B spilled")


def identity() -> dict:
    """What the compile sweep's record is of (tirx/sweep.py checks it when resuming)."""
    from types import SimpleNamespace

    from autotune.store import template_hash
    from tirx.compile import toolchain_versions

    return {"space": "fa4_sm90", "arch": ARCH, "problem": dataclasses.asdict(SWEEP_PROBLEM),
            "template": template_hash(SimpleNamespace(template_files=template_files)),
            "versions": toolchain_versions()}


def sweep_configs() -> list[dict]:
    """One config per binary of the legal space at SWEEP_PROBLEM (launch knobs at defaults)."""
    seen = {}
    for c in legal_configs(SWEEP_PROBLEM):
        seen.setdefault(compile_key(c), c.as_dict())
    return list(seen.values())


def build_config(config: dict):
    from kernels.fa4.sm90 import build_attention

    return build_attention(SWEEP_PROBLEM, AttentionSm90Config.from_dict(config))


if __name__ == "__main__":
    dest = Path(sys.argv[1]) if len(sys.argv) > 1 else PREBUILT
    prebuild(dest, sys.argv[2:] or KERNELS)
