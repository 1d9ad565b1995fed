"""Where the CUDA compiler pieces come from: a system toolkit named by CUDA_PATH, else the
CUDA 13.0 wheels pip installed with this project, else /usr/local/cuda.

TVM's NVRTC path finds headers only through one root: `<root>/include` and, for CCCL (whose
`cuda/std/...` its preamble includes), only `<root>/targets/<triple>/include/cccl`. The wheels
put everything under `site-packages/nvidia/cu13/` instead, so we give TVM a root of symlinks
with the layout it expects, built once per wheel installation in the artifact cache.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import shutil
import tempfile
from pathlib import Path

from .errors import CompileError

SYSTEM_ROOTS = ("/usr/local/cuda",)
# What compiling needs, the file that proves it is there, and the wheel that brings it.
PIECES = (
    ("CUDA runtime headers", "include/cuda_runtime.h", "nvidia-cuda-runtime"),
    ("fp16/bf16 headers", "include/cuda_bf16.h", "nvidia-cuda-runtime"),
    ("CUDA compiler runtime headers", "include/crt/host_defines.h", "nvidia-cuda-crt"),
    ("CCCL (cuda/std)", "include/cccl/cuda/std/cstdint", "nvidia-cuda-cccl"),
    ("ptxas", "bin/ptxas", "nvidia-cuda-nvcc"),
)
WHEELS = ("nvidia-cuda-runtime", "nvidia-cuda-crt", "nvidia-cuda-cccl", "nvidia-cuda-nvcc")
INSTALL_HINT = ("pip install 'nvidia-cuda-runtime==13.0.*' 'nvidia-cuda-crt==13.0.*' "
                "'nvidia-cuda-cccl==13.0.*' 'nvidia-cuda-nvcc==13.0.*' (or reinstall autotune), "
                "or set CUDA_PATH to a CUDA 13 toolkit")


def cuda_root() -> Path:
    """The CUDA root compiling uses; sets CUDA_PATH to it so that TVM uses it too."""
    if os.environ.get("CUDA_PATH"):  # a system toolkit the user named wins
        root = Path(os.environ["CUDA_PATH"])
        _require(root, f"CUDA_PATH={root}")
        return root
    root = _wheel_root() or next((Path(r) for r in SYSTEM_ROOTS
                                  if Path(r, "include", "cuda_runtime.h").exists()), None)
    if root is None:
        raise CompileError("toolchain", f"no CUDA compiler pieces found: {INSTALL_HINT}")
    _require(root, str(root))
    os.environ["CUDA_PATH"] = str(root)
    return root


def describe() -> dict[str, str]:
    """Where the pieces come from and which versions, for cache keys and results files."""
    root = cuda_root()
    wheels = {w: _wheel_version(w) for w in WHEELS}
    if all(wheels.values()) and _is_wheel_root(root):
        return {"cuda_source": "wheels", **{w: v for w, v in wheels.items()}}
    version = root / "version.json"
    return {"cuda_source": "toolkit",
            "cuda_toolkit": version.read_text()[:200].strip() if version.exists() else str(root)}


def ptxas() -> Path:
    return cuda_root() / "bin" / "ptxas"


def _require(root: Path, where: str) -> None:
    missing = [(what, wheel) for what, rel, wheel in PIECES if not _has(root, rel)]
    if missing:
        names = ", ".join(what for what, _ in missing)
        wheels = " ".join(sorted({f"'{w}==13.0.*'" for _, w in missing}))
        raise CompileError("toolchain", f"{where} lacks {names}: pip install {wheels}, "
                                        "or set CUDA_PATH to a complete CUDA 13 toolkit")


def _has(root: Path, rel: str) -> bool:
    # A system toolkit may keep headers (CCCL among them) only under targets/<triple>/.
    return (root / rel).exists() or (root / "targets" / _triple() / rel).exists()


def _triple() -> str:
    return f"{platform.machine()}-{platform.system().lower()}"


def _wheel_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _wheel_dir() -> Path | None:
    try:
        files = importlib.metadata.files("nvidia-cuda-runtime") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    header = next((f for f in files if str(f).endswith("include/cuda_runtime.h")), None)
    return Path(header.locate()).parents[1] if header else None


def _is_wheel_root(root: Path) -> bool:
    return (root / "include").is_symlink()


def _wheel_root() -> Path | None:
    """A root of symlinks into the wheels' folder, keyed by where it is and what is in it."""
    cu = _wheel_dir()
    if cu is None:
        return None
    ident = "|".join([str(cu), _triple()] + [f"{w}={_wheel_version(w)}" for w in WHEELS])
    base = Path(os.environ.get("AUTOTUNE_CACHE", Path.home() / ".cache" / "autotune"))
    root = base / "cuda-root" / hashlib.sha256(ident.encode()).hexdigest()[:16]
    if (root / "include").exists():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    # Build beside, then rename: parallel compile workers may race to make the same root.
    tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=".tmp-"))
    for name in ("include", "bin", "lib", "nvvm"):
        if (cu / name).exists():
            (tmp / name).symlink_to(cu / name)
    (tmp / "lib64").symlink_to(cu / "lib")
    (tmp / "targets" / _triple()).mkdir(parents=True)
    (tmp / "targets" / _triple() / "include").symlink_to(cu / "include")
    # TVM's get_cuda_version reads the last word of version.txt.
    (tmp / "version.txt").write_text(f"CUDA Version {_wheel_version('nvidia-cuda-runtime')}\n")
    try:
        tmp.rename(root)
    except OSError:  # another process got there first: use theirs
        shutil.rmtree(tmp)
    return root
