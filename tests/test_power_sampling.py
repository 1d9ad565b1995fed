"""scripts/power.py's nvidia-smi sampling, with a stand-in nvidia-smi for a host of two GPUs:
the busy one (GPU-busy, 690 W) and an idle one (90 W), which the stand-in reports too unless
`-i` names one, as nvidia-smi does."""

import importlib.util
import os
import time
from pathlib import Path

SPEC = importlib.util.spec_from_file_location(
    "power", Path(__file__).resolve().parents[1] / "scripts/power.py")
power = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(power)

SMI = """#!/bin/sh
gpu=all
while [ $# -gt 0 ]; do [ "$1" = -i ] && gpu=$2; shift; done
i=0
while [ $i -lt 40 ]; do
  [ "$gpu" = all ] || [ "$gpu" = GPU-busy ] && echo "1500, 690.0"
  [ "$gpu" = all ] || [ "$gpu" = GPU-idle ] && echo "345, 90.0"
  i=$((i + 1))
done
exec sleep 30
"""


def _sample(tmp_path, monkeypatch, gpu):
    smi = tmp_path / "nvidia-smi"
    smi.write_text(SMI)
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    proc = power.start_sampling(gpu)
    time.sleep(0.5)
    return power.stop_sampling(proc)


def test_only_the_named_gpu_is_sampled(tmp_path, monkeypatch):
    # unnamed, the idle GPU's lines halve the median power (session 36's held-busy tables)
    row = _sample(tmp_path, monkeypatch, "GPU-busy")
    assert (row["watts"], row["sm_mhz"]) == (690.0, 1500.0)
    assert row["samples"] == 40 - power.SETTLE_S * 1000 / power.SAMPLE_MS

