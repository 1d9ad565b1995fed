"""Is a store file valid for the GPU and template we are running? FlashInfer's rule: a config
measured elsewhere is never silently reused - a mismatch is refused with a warning that says
why, and the caller falls back to the hand-tuned defaults.

Refused on mismatch: space, arch, device model, template hash - each changes which config is
fastest or whether it is even legal. Driver, CUDA and TVM versions are kept as provenance only:
they rarely change the ranking, and refusing on every driver update would leave users on
defaults for no reason.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import warnings
from pathlib import Path

from .format import ConfigStore, Header

IDENTITY_FIELDS = ("space", "kernel", "arch", "device", "template")


class StoreMismatchWarning(UserWarning):
    """A store file was refused: it was measured on another GPU or for another template."""


@dataclasses.dataclass(frozen=True)
class Gpu:
    """The GPU a process runs on, as a store header describes it."""

    arch: str
    device: str
    driver: str = ""
    cuda: str = ""


def arch_of_capability(major: int, minor: int) -> str:
    # Our templates use the arch-specific features (wgmma, tcgen05): always the "a" target.
    return f"sm_{major}{minor}a"


def current_gpu(index: int = 0) -> Gpu | None:
    """The GPU `index` through the driver (cuda-bindings), or None when there is none."""
    try:
        from cuda.bindings import driver as cu

        if cu.cuInit(0)[0] != cu.CUresult.CUDA_SUCCESS:
            return None
        err, dev = cu.cuDeviceGet(index)
        if err != cu.CUresult.CUDA_SUCCESS:
            return None
        _, name = cu.cuDeviceGetName(128, dev)
        attr = cu.CUdevice_attribute
        _, major = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        _, minor = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
        _, version = cu.cuDriverGetVersion()
    except Exception:  # no cuda-bindings or no libcuda: no GPU
        return None
    return Gpu(arch=arch_of_capability(major, minor), device=name.split(b"\0")[0].decode(),
               driver=f"{version // 1000}.{version % 1000 // 10}", cuda=_cuda_version())


def _cuda_version() -> str:
    try:
        from cuda.bindings import nvrtc

        _, major, minor = nvrtc.nvrtcVersion()
        return f"{major}.{minor}"
    except Exception:
        return ""


def template_hash(space) -> str:
    """Hash of the template's source files (names and contents): the template's version."""
    h = hashlib.sha256()
    for name in sorted(space.template_files()):
        h.update(os.path.basename(name).encode())
        h.update(Path(name).read_bytes())
    return h.hexdigest()[:16]


def expected_header(space, gpu: Gpu, tvm_version: str = "") -> Header:
    """The header a store for `space` measured on `gpu` carries."""
    return Header(space=space.name, kernel=space.kernel, arch=space.arch, device=gpu.device,
                  template=template_hash(space), driver=gpu.driver, cuda=gpu.cuda, tvm=tvm_version)


def mismatches(found: Header, expected: Header, fields=IDENTITY_FIELDS) -> list[str]:
    """Why `found` cannot be used where `expected` holds (judged on `fields`); [] when it can."""
    return [f"{field} is {getattr(found, field)!r}, here {getattr(expected, field)!r}"
            for field in fields if getattr(found, field) != getattr(expected, field)]


def device_slug(device: str) -> str:
    """A file name for a GPU model: "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3"."""
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")


def store_path(root: str | os.PathLike, space_name: str, device: str) -> Path:
    """Where the store of a space on a GPU model lives: <root>/<space>/<device-slug>.json."""
    return Path(root) / space_name / f"{device_slug(device)}.json"


def load_compatible(path: str | os.PathLike, expected: Header) -> ConfigStore | None:
    """The store at `path` if it matches `expected`; None (with a StoreMismatchWarning saying
    why) when it is missing or measured elsewhere. A corrupt file raises CorruptStoreError."""
    path = Path(path)
    if not path.exists():
        warnings.warn(f"no config store at {path}: using the hand-tuned defaults",
                      StoreMismatchWarning, stacklevel=2)
        return None
    store = ConfigStore.read(path)
    reasons = mismatches(store.header, expected)
    if reasons:
        warnings.warn(f"config store {path} refused ({'; '.join(reasons)}): using the "
                      f"hand-tuned defaults", StoreMismatchWarning, stacklevel=2)
        return None
    return store
