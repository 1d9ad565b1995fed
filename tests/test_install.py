"""`pip install .` into a fresh environment, without the test extra, gives a working `autotune`
in another directory: a simulated study and a compile-only one (the GEMM template found as an
installed package), each writing its storage where it runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_an_installed_package_tunes_elsewhere(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python, autotune = venv / "bin" / "python", venv / "bin" / "autotune"
    subprocess.run([python, "-m", "pip", "install", "-q", str(ROOT)], check=True, timeout=1800)
    assert subprocess.run([python, "-c", "import pytest"], capture_output=True).returncode != 0
    work = tmp_path / "elsewhere"
    work.mkdir()
    subprocess.run([python, "-c", (
        "from autotune.testing.synthetic import SyntheticSpace as S; s = S(); "
        "s.recorded_frame(s.parse_problem('128x48x32')).to_csv('t.csv', index=False)")],
        cwd=work, check=True)
    simulated = subprocess.run(
        [autotune, "tune", "autotune.testing.synthetic:SyntheticSpace", "--shapes", "128x48x32",
         "--simulate", "t.csv", "--trials", "5", "--no-progress"],
        cwd=work, capture_output=True, text=True, timeout=600)
    assert simulated.returncode == 0, simulated.stderr
    assert "5 trials" in simulated.stdout and (work / "studies" / "synthetic.db").exists()
    compiled = subprocess.run(
        [autotune, "tune", "gemm_sm90", "--compile-only", "--shapes", "2048x2048x2048",
         "--trials", "1", "--compile-workers", "1", "--no-progress"],
        cwd=work, capture_output=True, text=True, timeout=900)
    assert compiled.returncode == 0, compiled.stderr
    assert "1 trials (1 compiled now" in compiled.stdout, compiled.stdout
    assert (work / "studies" / "gemm_sm90.db").exists()
