"""Per-architecture hardware limits that TIRx itself does not check."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ArchLimits:
    arch: str  # the compile target, e.g. "sm_90a"
    compute_capability: tuple[int, int]
    smem_per_block: int = 232448  # opt-in maximum of dynamic + static shared memory
    threads_per_block: int = 1024
    registers_per_block: int = 65536
    registers_per_thread: int = 255
    tmem_columns: int = 0  # tensor memory columns per SM (Blackwell only)
    portable_cluster_size: int = 8  # larger clusters need the non-portable opt-in
    max_cluster_size: int = 16


ARCHS: dict[str, ArchLimits] = {
    "sm_90a": ArchLimits("sm_90a", (9, 0)),
    "sm_100a": ArchLimits("sm_100a", (10, 0), tmem_columns=512),
}


def limits(arch: str) -> ArchLimits:
    try:
        return ARCHS[arch]
    except KeyError:
        raise ValueError(f"unknown arch {arch!r}; supported: {', '.join(ARCHS)}") from None
