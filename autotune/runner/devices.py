"""Which GPUs this machine has, through the CUDA driver (cuda-bindings; no torch, no CUDA
context kept). No driver or no device means no GPUs, never an error."""

from __future__ import annotations

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    capability: tuple[int, int]


def visible_gpus() -> list[Gpu]:
    try:
        from cuda.bindings import driver as cu

        (err,) = cu.cuInit(0)
        if err != cu.CUresult.CUDA_SUCCESS:
            return []
        err, count = cu.cuDeviceGetCount()
        gpus = []
        for i in range(count if err == cu.CUresult.CUDA_SUCCESS else 0):
            _, dev = cu.cuDeviceGet(i)
            _, name = cu.cuDeviceGetName(128, dev)
            attr = cu.CUdevice_attribute
            major, minor = (cu.cuDeviceGetAttribute(which, dev)[1] for which in (
                attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
            gpus.append(Gpu(i, name.split(b"\0")[0].decode(), (major, minor)))
        return gpus
    except Exception:  # no cuda-bindings, no libcuda, no device: all mean "no GPU here"
        return []


def arch_capability(arch: str) -> tuple[int, int]:
    """"sm_90a" -> (9, 0); "sm_100a" -> (10, 0)."""
    match = re.fullmatch(r"sm_(\d+)(\d)a?", arch)
    if not match:
        raise ValueError(f"not a CUDA arch: {arch!r}")
    return int(match.group(1)), int(match.group(2))


def gpus_for_arch(arch: str, gpus: list[Gpu] | None = None) -> list[Gpu]:
    """The GPUs that can run code built for `arch` (arch-specific 'a' targets need an exact
    match)."""
    want = arch_capability(arch)
    return [g for g in (visible_gpus() if gpus is None else gpus) if g.capability == want]
