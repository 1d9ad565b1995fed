#!/usr/bin/env python3
"""Build, outside git, what the GPU machines lack for studies: optuna and ray with their
dependencies, for CPython 3.12 manylinux x86_64, as one compressed archive that fits the 64 MiB
that travels with each call.

    python scripts/device_bundle.py            # -> .bundle/device-site.tar.xz
    # on the GPU machine (name .bundle in carry):
    S=${TMPDIR:-/tmp}/site; mkdir -p $S && tar -xJf .bundle/device-site.tar.xz -C $S && export PYTHONPATH=$S:$PWD

Studies compile candidates next to the GPUs, so a study there also needs TVM, whose compiler
library alone (259 MB, LLVM inside) compresses past one call's 64 MiB. `--with-tvm` writes the
trimmed package as two parts, .bundle/tvm-a and .bundle/tvm-b, for two calls to one warm machine:

    # call 1, carry .bundle/tvm-a:  mkdir -p ${TMPDIR:-/tmp}/stage && cp .bundle/tvm-a/part ${TMPDIR:-/tmp}/stage/tvm.part-a
    # call 2, carry .bundle/tvm-b and .bundle/device-site.tar.xz:  source scripts/gpu_env.sh
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

# apache-tvm-ffi: TVM's own package is py3-none, but tvm_ffi's core is a CPython extension, so
# the GPU machines need the build for their Python (extracted over TVM's staged copy).
REQUIREMENTS = ["optuna==5.0.0", "ray==2.60.0", "apache-tvm-ffi==0.1.14.post0"]
# Already in the GPU machines' image (device/KINDS.md): carrying them again only costs space.
IMAGE_PROVIDES = {
    "numpy", "packaging", "tqdm", "pyyaml", "typing-extensions", "markupsafe", "click",
    "filelock", "msgpack", "protobuf", "requests", "charset-normalizer", "idna", "urllib3",
    "certifi", "attrs", "aiosignal", "frozenlist",
}
# Parts of ray that actors, tasks and resources never load.
RAY_PRUNE = ["ray/jars", "ray/rllib", "ray/dashboard/client", "ray/tune/examples",
             "ray/serve", "ray/data/examples"]
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
LIMIT = 40 * 2**20  # leave the rest of the 64 MiB for the tree and artifacts
# Parts of the TVM wheel that compiling TIRx for CUDA never reads (headers, C++ sources, web).
TVM_PRUNE = ["tvm/3rdparty", "tvm/src", "tvm/include", "tvm/lib64", "tvm/web"]
TVM_PART = 32 * 2**20  # two parts; the second travels with the 25 MiB optuna+ray bundle


def project_name(wheel: Path) -> str:
    return re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()


def extract_wheel(wheel: Path, site: Path) -> None:
    """Unzip keeping permission bits: ray starts executables (gcs_server, raylet) it ships."""
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            path = Path(zf.extract(info, site))
            mode = info.external_attr >> 16
            if mode and not info.is_dir():
                path.chmod(mode & 0o777)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".bundle/device-site.tar.xz")
    ap.add_argument("--with-tvm", action="store_true", help="also write .bundle/tvm-a and tvm-b")
    args = ap.parse_args()
    if args.with_tvm:
        tvm_parts(Path(args.out).parent)
    out = Path(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        wheels, site = Path(tmp, "wheels"), Path(tmp, "site")
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
               "--python-version", "3.12", "--implementation", "cp", "-d", str(wheels)]
        for p in PLATFORMS:
            cmd += ["--platform", p]
        subprocess.run(cmd + REQUIREMENTS, check=True)
        kept = sorted(w for w in wheels.glob("*.whl") if project_name(w) not in IMAGE_PROVIDES)
        for w in kept:
            extract_wheel(w, site)
        for rel in RAY_PRUNE:
            shutil.rmtree(site / rel, ignore_errors=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(out, "w:xz", preset=9) as tar:
            for item in sorted(site.iterdir()):
                tar.add(item, arcname=item.name)
    size = out.stat().st_size
    print(f"{out}: {size / 2**20:.1f} MiB, {len(kept)} wheels: "
          + ", ".join(project_name(w) for w in kept))
    if size > LIMIT:
        print(f"error: bundle exceeds {LIMIT / 2**20:.0f} MiB", file=sys.stderr)
        return 1
    return 0


def tvm_parts(bundle: Path) -> None:
    """This environment's tvm package (a py3-none wheel: it runs on 3.12), trimmed, as one
    tar.xz stream cut into two parts that each fit a call. tvm_ffi comes in the device-site
    bundle, built for the GPU machines' Python."""
    import tvm

    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp, "tvm.tar.xz")
        with tarfile.open(archive, "w:xz", preset=6) as tar:
            for pkg in (Path(tvm.__file__).parent,):
                tar.add(pkg, arcname=pkg.name, filter=lambda ti: None if any(
                    ti.name == p or ti.name.startswith(p + "/") for p in TVM_PRUNE)
                    or "__pycache__" in ti.name else ti)
        data = archive.read_bytes()
    if len(data) > 2 * TVM_PART:
        raise SystemExit(f"error: TVM archive is {len(data) / 2**20:.1f} MiB, over two parts")
    for name, chunk in (("tvm-a", data[:TVM_PART]), ("tvm-b", data[TVM_PART:])):
        (bundle / name).mkdir(parents=True, exist_ok=True)
        (bundle / name / "part").write_bytes(chunk)
    print(f"{bundle}/tvm-a, tvm-b: TVM {len(data) / 2**20:.1f} MiB in two parts")


if __name__ == "__main__":
    sys.exit(main())
