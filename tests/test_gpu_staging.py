"""TVM and the site (optuna, ray) reach the lent GPU machines in parts, one a call
(scripts/device_bundle.py cuts them to fit beside the tree, scripts/gpu_stage.sh keeps each,
scripts/gpu_env.sh unpacks them once all are there): each call here is a fresh copy of the tree
carrying one part, sharing only $TMPDIR, as on such a machine."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bundle_module():
    spec = importlib.util.spec_from_file_location("device_bundle",
                                                  ROOT / "scripts" / "device_bundle.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def parts(tmp_path, monkeypatch):
    """A stand-in tvm package and site cut by device_bundle.py into parts of 4 KiB; returns
    .bundle."""
    pkg = tmp_path / "fake" / "tvm"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("VERSION = 'staged'\n")
    (pkg / "blob.bin").write_bytes(os.urandom(10_000))  # incompressible: three 4 KiB parts
    site = tmp_path / "fake-site"
    (site / "optuna").mkdir(parents=True)
    (site / "optuna" / "__init__.py").write_text("SITE = 'staged'\n")
    monkeypatch.syspath_prepend(str(pkg.parent))
    monkeypatch.delitem(sys.modules, "tvm", raising=False)
    bundle = _bundle_module()
    monkeypatch.setattr(bundle, "PART_MAX", 4096)
    out = tmp_path / "bundle"
    (out / "stage-z").mkdir(parents=True)  # left by an earlier, longer cut: must go
    (out / "tvm-a").mkdir(parents=True)  # the older cut of TVM alone: must go too
    bundle.stage_parts(out, site)
    return out


def _call(tmp_path: Path, carried: list[str], bundle: Path, script: str,
          site_unpacked: bool = True) -> subprocess.CompletedProcess:
    """One call on the GPU machine: a fresh tree with scripts/ and the carried parts."""
    tree = tmp_path / f"tree{len(list(tmp_path.glob('tree*')))}"
    shutil.copytree(ROOT / "scripts", tree / "scripts")
    for name in carried:
        shutil.copytree(bundle / name, tree / ".bundle" / name)
    fake_bin = tmp_path / "bin"  # gpu_env.sh's offline install of the project: not tested here
    fake_bin.mkdir(exist_ok=True)
    (fake_bin / "python3").write_text("#!/bin/sh\nexit 0\n")
    (fake_bin / "python3").chmod(0o755)
    if site_unpacked:  # the optuna/ray site, as if unpacked by an earlier call
        (tmp_path / "scratch" / "site" / "optuna").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp_path / "scratch"),
           "PATH": f"{fake_bin}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", script], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=60)


def test_the_parts_fit_a_call_and_none_is_left_from_an_earlier_cut(parts):
    names = sorted(p.name for p in parts.iterdir())
    assert names == ["stage-a", "stage-b", "stage-c"]
    assert all((parts / n / "part").stat().st_size <= 4096 for n in names)
    assert {(parts / n / "count").read_text() for n in names} == {"3\n"}


def test_parts_staged_one_a_call_unpack_to_tvm_and_the_site(parts, tmp_path):
    for name in ("stage-b", "stage-a"):  # any order
        assert _call(tmp_path, [name], parts, "bash scripts/gpu_stage.sh",
                     site_unpacked=False).returncode == 0
    env = _call(tmp_path, ["stage-c"], parts,  # no device-site.tar.xz carried: none is needed
                "source scripts/gpu_env.sh && cat $SITE/tvm/__init__.py $SITE/optuna/__init__.py",
                site_unpacked=False)
    assert env.returncode == 0, env.stderr
    assert "VERSION = 'staged'" in env.stdout and "SITE = 'staged'" in env.stdout
    blob = tmp_path / "scratch" / "site" / "tvm" / "blob.bin"
    assert blob.stat().st_size == 10_000


def test_a_missing_part_is_named_not_unpacked_half(parts, tmp_path):
    assert _call(tmp_path, ["stage-a"], parts, "bash scripts/gpu_stage.sh").returncode == 0
    env = _call(tmp_path, ["stage-c"], parts, "source scripts/gpu_env.sh")
    assert env.returncode == 3
    assert "2 of the 3 parts of TVM and the site staged" in env.stderr
    assert not (tmp_path / "scratch" / "site" / "tvm").exists()


def test_without_parts_the_environment_has_no_tvm_and_no_error(tmp_path):
    env = _call(tmp_path, [], tmp_path, "source scripts/gpu_env.sh && echo ready")
    assert env.returncode == 0, env.stderr
    assert "ready" in env.stdout
    assert not (tmp_path / "scratch" / "site" / "tvm").exists()


def test_parts_leave_room_for_the_tree_a_call_carries(monkeypatch):
    bundle = _bundle_module()
    tree = bundle.tree_bytes()
    assert tree > 1 << 20  # the checkout's tracked files, studies/ among them
    monkeypatch.setattr(bundle, "tree_bytes", lambda: bundle.CALL - bundle.PART_MARGIN - 2**20)
    with pytest.raises(SystemExit, match="leaves 1.0 MiB of a call"):
        bundle.stage_parts(Path("unused"), Path("unused"))
