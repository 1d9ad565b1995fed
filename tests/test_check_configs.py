"""scripts/check_configs.py --variants: the GPU suites' variants files (a shape, then its configs
as shell words) built in one call, as the suites' headers build them."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_configs.py"


def _module():
    spec = importlib.util.spec_from_file_location("check_configs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_variants_file_lines_become_shape_and_configs(tmp_path):
    path = tmp_path / "variants.txt"
    path.write_text("# a comment line\n"
                    "217x3840x15360 '{}' '{\"cluster\":\"2x1\",\"raster\":\"n\"}'\n"
                    "\n"
                    "200x2048x5632 '{\"group\": 16}'  # trailing comment\n")
    assert _module().read_variants(str(path)) == [
        ("217x3840x15360", ["{}", '{"cluster":"2x1","raster":"n"}']),
        ("200x2048x5632", ['{"group": 16}']),
    ]


def test_a_committed_variants_file_parses():
    path = ROOT / "studies" / "2026-11-29-h200-gemm-s27" / "gpcorder" / "variants.txt"
    pairs = _module().read_variants(str(path))
    assert len(pairs) == 9 and all(len(configs) == 5 for _, configs in pairs)
    assert all(isinstance(json.loads(c), dict) for _, configs in pairs for c in configs)


def test_a_shape_without_configs_is_refused_with_its_line(tmp_path):
    path = tmp_path / "variants.txt"
    path.write_text("64x256x256 '{}'\n128x256x256\n")
    with pytest.raises(SystemExit, match=r"variants.txt:2: a shape and at least one config"):
        _module().read_variants(str(path))


def test_variants_and_shapes_together_are_refused(tmp_path):
    path = tmp_path / "variants.txt"
    path.write_text("64x256x256 '{}'\n")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--build-only", "--variants", str(path),
                           "--shapes", "64x256x256", "--configs", "{}"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "give --variants FILE, or --shapes and --configs" in proc.stderr


def test_build_only_from_a_variants_file_fills_the_index(tmp_path):
    """Two shapes of one file, one pool: both kernels land in $AUTOTUNE_ARTIFACTS' index."""
    pytest.importorskip("tvm")
    path = tmp_path / "variants.txt"
    path.write_text("64x256x256 '{}'\n96x256x256 '{\"stages\": 2}'\n")
    env = {**os.environ, "AUTOTUNE_ARTIFACTS": str(tmp_path / "idx"), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--build-only", "--procs", "2",
                           "--variants", str(path)], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": built") == 2
    index = json.loads((tmp_path / "idx" / "index.json").read_text())
    built = {(key.split("|")[1], entry["config"]["stages"]) for key, entry in index.items()}
    assert ("M=96,N=256,K=256,dtype=bfloat16", 2) in built
    assert any(problem.startswith("M=64,N=256,K=256") for problem, _ in built)
