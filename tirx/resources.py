"""Resource checks that run before anything is compiled (and again on the ptxas report)."""

from __future__ import annotations

from .arch import limits
from .errors import ResourceLimitError


def resource_violations(
    arch: str,
    *,
    smem_bytes: int = 0,
    threads: int = 0,
    tmem_columns: int = 0,
    cluster_size: int = 1,
    registers_per_thread: int = 0,
) -> list[str]:
    """Every limit of `arch` the given usage exceeds, one sentence each naming the limit."""
    lim = limits(arch)
    out = []
    if smem_bytes > lim.smem_per_block:
        out.append(f"shared memory {smem_bytes} B > {lim.smem_per_block} B per block")
    if threads > lim.threads_per_block:
        out.append(f"threads {threads} > {lim.threads_per_block} per block")
    if tmem_columns > lim.tmem_columns:
        what = f"{lim.tmem_columns} available" if lim.tmem_columns else f"{arch} has no tensor memory"
        out.append(f"TMEM columns {tmem_columns} > {lim.tmem_columns} ({what})")
    if cluster_size > lim.max_cluster_size:
        out.append(f"cluster size {cluster_size} > {lim.max_cluster_size} CTAs")
    if registers_per_thread > lim.registers_per_thread:
        out.append(f"registers {registers_per_thread} > {lim.registers_per_thread} per thread")
    if registers_per_thread and threads and registers_per_thread * threads > lim.registers_per_block:
        out.append(
            f"registers {registers_per_thread} x {threads} threads = {registers_per_thread * threads}"
            f" > {lim.registers_per_block} per block"
        )
    return out


def check_resources(arch: str, **usage: int) -> None:
    """Raise ResourceLimitError naming every exceeded limit; see resource_violations."""
    violations = resource_violations(arch, **usage)
    if violations:
        raise ResourceLimitError(violations, arch)
