#!/usr/bin/env python3
"""Build, outside git, what the GPU machines lack for studies: optuna and ray with their
dependencies, for CPython 3.12 manylinux x86_64, as one compressed archive that fits the 64 MiB
that travels with each call.

    python scripts/device_bundle.py            # -> .bundle/device-site.tar.xz
    python scripts/device_bundle.py --optuna-only  # optuna alone: a few MiB
    # on the GPU machine (name .bundle in carry):
    S=${TMPDIR:-/tmp}/site; mkdir -p $S && tar -xJf .bundle/device-site.tar.xz -C $S && export PYTHONPATH=$S:$PWD

Studies compile candidates next to the GPUs, so a study there also needs TVM, whose compiler
library alone (259 MB, LLVM inside) compresses past one call's 64 MiB. `--with-tvm` writes the
trimmed package and the site above as one stream cut into parts .bundle/stage-a, stage-b, ...,
each small enough to travel beside today's tree (which grows with studies/), one a call to one
warm machine, then the work, which carries nothing more:

    # a call for each part, carrying .bundle/stage-X:  bash scripts/gpu_stage.sh
    # then:                                             source scripts/gpu_env.sh; ...
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
CALL = 64 * 2**20  # what travels with one call: the tree and what it carries
# Parts of the TVM wheel that compiling TIRx for CUDA never reads (headers, C++ sources, web).
TVM_PRUNE = ["tvm/3rdparty", "tvm/src", "tvm/include", "tvm/lib64", "tvm/web"]
# A part travels beside the tree (31 MiB in session 20, 38 in session 30, 43 in session 37:
# studies/ grows), with room left for files a session adds before its calls and for what the
# device tool counts beyond the files' bytes (session 37: 43.2 + 18.9 MiB was refused, 43.2 +
# 16.6 went). TVM (61 MiB) and the site (27) make seven.
PART_MAX = 24 * 2**20
PART_MARGIN = 6 * 2**20


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
    ap.add_argument("--with-tvm", action="store_true",
                    help="also write TVM and the site as parts, .bundle/stage-a, stage-b, ...")
    ap.add_argument("--optuna-only", action="store_true",
                    help="optuna and its dependencies alone (a few MiB: travels beside the tree "
                         "in any call), for a study on one machine's GPUs from prebuilt kernels "
                         "(tune --artifacts)")
    args = ap.parse_args()
    if args.optuna_only and args.with_tvm:
        ap.error("--with-tvm stages the whole site, ray included")
    wanted = [r for r in REQUIREMENTS if r.startswith("optuna==") or not args.optuna_only]
    out = Path(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        wheels, site = Path(tmp, "wheels"), Path(tmp, "site")
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
               "--python-version", "3.12", "--implementation", "cp", "-d", str(wheels)]
        for p in PLATFORMS:
            cmd += ["--platform", p]
        subprocess.run(cmd + wanted, check=True)
        kept = sorted(w for w in wheels.glob("*.whl") if project_name(w) not in IMAGE_PROVIDES)
        for w in kept:
            extract_wheel(w, site)
        for rel in RAY_PRUNE:
            shutil.rmtree(site / rel, ignore_errors=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(out, "w:xz", preset=9) as tar:
            for item in sorted(site.iterdir()):
                tar.add(item, arcname=item.name)
        if args.with_tvm:
            stage_parts(out.parent, site)
    size, tree = out.stat().st_size, tree_bytes()
    print(f"{out}: {size / 2**20:.1f} MiB, {len(kept)} wheels: "
          + ", ".join(project_name(w) for w in kept))
    if size + tree > CALL:
        print(f"note: {out} does not travel beside the tree ({tree / 2**20:.1f} MiB): calls "
              "that need the site stage it (--with-tvm)", file=sys.stderr)
    return 0


def tree_bytes(root: Path = Path(__file__).resolve().parents[1]) -> int:
    """What a call sends of this checkout: tracked files and untracked ones git does not ignore."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=root, check=True, capture_output=True).stdout.split(b"\0")
    return sum(path.stat().st_size for name in names if name
               for path in [root / name.decode()] if path.is_file())


def stage_parts(bundle: Path, site: Path) -> None:
    """This environment's tvm package (a py3-none wheel: it runs on 3.12), trimmed, and the site
    (optuna, ray, tvm_ffi built for the GPU machines' Python), as one tar.xz stream cut into even
    parts that each travel beside the tree."""
    import tvm

    free = CALL - tree_bytes() - PART_MARGIN
    if free < 4 * 2**20:  # more calls than a warm machine's patience, or none at all
        raise SystemExit(f"error: the tree leaves {free / 2**20:.1f} MiB of a call for a part")
    room = min(PART_MAX, free)
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp, "stage.tar.xz")
        with tarfile.open(archive, "w:xz", preset=6) as tar:
            for item in sorted(site.iterdir()):
                tar.add(item, arcname=item.name)
            pkg = Path(tvm.__file__).parent
            tar.add(pkg, arcname=pkg.name, filter=lambda ti: None if any(
                ti.name == p or ti.name.startswith(p + "/") for p in TVM_PRUNE)
                or "__pycache__" in ti.name else ti)
        data = archive.read_bytes()
    count = -(-len(data) // room)
    size = -(-len(data) // count)  # even parts
    for old in [*bundle.glob("stage-*"), *bundle.glob("tvm-*")]:
        shutil.rmtree(old)  # a part of an earlier, longer cut would be staged with these
    for i in range(count):
        part = bundle / f"stage-{chr(ord('a') + i)}"
        part.mkdir(parents=True)
        (part / "part").write_bytes(data[i * size:(i + 1) * size])
        (part / "count").write_text(f"{count}\n")
    print(f"{bundle}/stage-a..{part.name}: TVM and the site, {len(data) / 2**20:.1f} MiB in "
          f"{count} parts of {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    sys.exit(main())
