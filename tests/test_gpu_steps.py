"""scripts/gpu_steps.sh, the one-call GPU harness, on this machine: `nvidia-smi` and `ncu` are
stand-ins that record their arguments, so what is checked is the harness (steps, folders, the
order ncu profiles kernels in, what comes back), not Nsight Compute."""

import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NCU = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/ncu.calls"
prev=
for a; do [ "$prev" = -o ] && touch "$a.ncu-rep"; prev=$a; done
case "$*" in *"--page details"*) echo '"Duration","us","1"';; *"--page raw"*) echo raw;;
  *"--page source"*) echo '"HGMMA.64x64x16.F32.BF16",1376,3';; esac
"""


def _run(tmp_path, *steps):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "nvidia-smi").write_text("#!/bin/sh\necho 'name, driver_version'\necho 'Stand-in, 1'\n")
    (bin_ / "ncu").write_text(NCU)
    for tool in bin_.iterdir():
        tool.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "OUT": str(out),
           "TMPDIR": str(tmp_path)}
    run = subprocess.run(["bash", "scripts/gpu_steps.sh", "call", *steps], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    with tarfile.open(out / "call.tgz") as tgz:
        names = {n.removeprefix("./") for n in tgz.getnames()}
        log = tgz.extractfile("./run.log").read().decode()
    return run, names, log, (bin_ / "ncu.calls").read_text().splitlines()


def test_ncu_and_sass_steps_profile_each_config_then_cublas(tmp_path):
    index = tmp_path / "idx"
    for tag in ("default", "Four", "alone"):  # launched in Python's sorted order
        (index / "185x2048x5504" / tag).mkdir(parents=True)
    run, names, log, calls = _run(tmp_path, "ncu", str(index), "185x2048x5504",
                                  "sass", str(index), "185x2048x5504")
    assert run.returncode == 0, run.stderr
    assert {"1-ncu/ncu-185x2048x5504.csv", "1-ncu/ncu-185x2048x5504-raw.csv"} <= names
    sass = sorted(n for n in names if n.startswith("2-sass/sass_") and n.endswith(".csv"))
    assert sass == [f"2-sass/sass_185x2048x5504_{t}.csv"
                    for t in ("Four", "alone", "cublas", "default")]
    # each pass skips the kernels `ncu_gemm.py run` launches before its own (sorted tags)
    skips = {c.split(" -o ")[1].split()[0].rsplit("_", 1)[1]:
             int(c.split("--launch-skip ")[1].split()[0]) for c in calls if "--launch-skip" in c}
    assert skips == {"Four": 0, "alone": 1, "default": 2, "cublas": 3}
    assert "1-ncu done" in log and "2-sass done" in log


def test_an_unknown_step_is_named_and_what_ran_still_comes_back(tmp_path):
    index = tmp_path / "idx"
    (index / "64x64x64" / "default").mkdir(parents=True)
    run, names, log, _ = _run(tmp_path, "ncu", str(index), "bogus", "ncu", str(index))
    assert "unknown step 'bogus' (held, ncu, sass, tests, stage, study, after, stale)" in log
    assert "1-ncu/ncu-64x64x64.csv" in names and not any(n.startswith("3-") for n in names)


def test_each_clock_sampler_stops_when_its_step_ends(tmp_path):
    # Two steps in one call each start and stop a sampler. `kill %1` missed the second one (job
    # %2 while the first was unreaped), which held the call's output open until its time limit.
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    smi = bin_ / "nvidia-smi"
    smi.write_text('#!/bin/sh\ncase "$*" in *-lms*) echo $$ >> "$(dirname "$0")/samplers"; '
                   'exec sleep 30;; esac\necho "name, driver_version"\n')
    smi.chmod(0o755)
    script = ("source scripts/gpu_suite_common.sh clocks; sample_clocks $R/a.csv; sleep 0.3; "
              "stop_clocks; sample_clocks $R/b.csv; sleep 0.3; stop_clocks")
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "TMPDIR": str(tmp_path)}
    pids = []
    try:
        run = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=20)
        assert run.returncode == 0, run.stderr
        pids = [int(p) for p in (bin_ / "samplers").read_text().split()]
        assert len(pids) == 2
        alive = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                alive.append(pid)
            except ProcessLookupError:
                pass
        assert not alive
    finally:
        started = bin_ / "samplers"
        for pid in pids or (started.read_text().split() if started.exists() else []):
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass


def test_an_archived_index_is_unpacked_where_a_step_reads_it(tmp_path):
    index = tmp_path / "idx"
    (index / "k1").mkdir(parents=True)
    (index / "k1" / "artifact.json").write_text("{}")
    (index / "index.json").write_text('{"gemm|M=1|c": {"artifact": "k1", "config": {}}}')
    # index_dir runs `python3`: this interpreter's, as on the GPU machines (their only one)
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    env = {**os.environ, "AUTOTUNE_CACHE": str(tmp_path / "cache"), "TMPDIR": str(tmp_path),
           "PATH": path}
    pack = subprocess.run([sys.executable, "-m", "autotune.dispatch", "pack", str(index),
                           str(tmp_path / "idx.tar.xz")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert pack.returncode == 0, pack.stderr
    script = ('source <(sed -n "/^index_dir/,/^}/p" scripts/gpu_suite_common.sh); '
              f'index_dir {tmp_path}/idx.tar.xz; index_dir {index}')
    run = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=60)
    unpacked, plain = run.stdout.split()
    assert Path(unpacked).parent == tmp_path / "cache" / "artifacts"
    assert (Path(unpacked) / "k1" / "artifact.json").exists() and plain == str(index)
