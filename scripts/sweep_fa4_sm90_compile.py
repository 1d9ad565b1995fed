"""Compile every binary of the Hopper attention template's legal space (kernels/fa4/sm90.py) for
the sweep problem and record registers, spills, stack and shared memory per binary.
tests/test_fa4_sm90_sweep.py checks the record (every binary compiles with zero spills); the
sweep itself takes about a CPU-hour, too much for CI.

    .venv/bin/python scripts/sweep_fa4_sm90_compile.py --jobs 2      # the full sweep
    .venv/bin/python scripts/sweep_fa4_sm90_compile.py --limit 4     # a quick look

One row per binary: configs that differ only in the launch-time knobs (persistent, order) share
one, so each is recorded once with those knobs at their defaults. The record (JSON lines: a
header, then one row per binary) is written and resumed as tirx/sweep.py describes.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fa4_sm90_kernels import ARCH, RECORD, build_config, identity, sweep_configs  # noqa: E402
from tirx import sweep  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(sweep.main(__doc__, sweep_configs(), build_config, ARCH, RECORD, identity))
