"""The Hopper attention binaries the GPU tests run, and their prebuilt form.

GPU machines have no TVM: `python tests/fa4_sm90_kernels.py OUT_DIR` compiles every binary here
into OUT_DIR/<name>/ (cubin and launch description; the CUDA source is left out to travel
light); `load(name)` reads them there (or builds them where TVM exists). Names, problems and
configs are computed the same way on both machines (the sweep's sample is seeded).

Two sets: MATRIX, the hand-tuned default for each problem class the correctness matrix needs
(dtype, causal, head_dim, heads: MHA 16:16, GQA 32:8 and 28:4), and SWEEP, a seeded sample of
legal configs of the search space, each with a problem class of its own.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

from kernels.fa4._sm90_config import (
    KNOBS,
    AttentionSm90Config,
    compile_key,
    default_config,
    violations,
)
from kernels.fa4.problem import AttentionProblem

PREBUILT = Path(os.environ.get("AUTOTUNE_PREBUILT",
                               Path(__file__).resolve().parents[1] / ".prebuilt")) / "fa4_sm90"
ARCH = "sm_90a"


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


def _sweep(count: int = 48, seed: int = 20):
    """`count` legal configs with distinct binaries, drawn uniformly from the knob grid, each
    paired with a problem class drawn alike (head_dim 128 and 64, both dtypes, causal or not,
    MHA or GQA)."""
    rng = random.Random(seed)
    out, seen = {}, set()
    while len(out) < count:
        cfg = AttentionSm90Config(**{k: rng.choice(v) for k, v in KNOBS.items()})
        hq, hkv = rng.choice(((8, 8), (8, 2)))
        p = AttentionProblem(head_dim=rng.choice((128, 128, 64)), heads_q=hq, heads_kv=hkv,
                             causal=rng.random() < 0.5, dtype=rng.choice(("bfloat16", "float16")))
        key = (compile_key(cfg), p)
        if violations(cfg, p) or key in seen:
            continue
        seen.add(key)
        out[f"sweep{len(out):02d}"] = (p, cfg)
    return out


MATRIX = _matrix()
SWEEP = _sweep()
KERNELS = {**MATRIX, **SWEEP}


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


if __name__ == "__main__":
    dest = Path(sys.argv[1]) if len(sys.argv) > 1 else PREBUILT
    prebuild(dest, sys.argv[2:] or KERNELS)
