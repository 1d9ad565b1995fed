"""Compile a TIRx PrimFunc into an Artifact on a machine with no GPU driver.

TVM lowers the kernel and splits it into a host function (which encodes TMA descriptors and
launches) and device code. We read the launch description off the host function, take the
CUDA source from the device code, and turn it into a cubin ourselves: NVRTC -> PTX (through
TVM's own NVRTC wrapper, so its preamble and flags stay authoritative), then nvJitLink -> cubin,
whose info log carries the ptxas report (registers, spills) that TVM's wrapper discards.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from .arch import limits
from .artifact import Artifact, Resources
from .errors import CompileError, ResourceLimitError
from .host_ir import launch_spec
from .resources import resource_violations
from . import toolchain

# Bump when this layer changes what it produces for the same kernel source.
LAYER_REVISION = "2"  # 2: kernels with setmaxnreg are assembled by the ptxas CLI


def default_cache_dir() -> Path:
    return Path(os.environ.get("AUTOTUNE_CACHE", Path.home() / ".cache" / "autotune")) / "artifacts"


def toolchain_versions() -> dict[str, str]:
    import tvm
    import tvm_ffi
    from cuda.bindings import nvjitlink, nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    return {
        "tvm": tvm.__version__,
        "tvm_ffi": tvm_ffi.__version__,
        "nvrtc": f"{major}.{minor}",
        "nvjitlink": "{}.{}".format(*nvjitlink.version()),
        "layer": LAYER_REVISION,
        **toolchain.describe(),  # the headers compiled against
    }


def cache_key(prim_func, arch: str, versions: dict[str, str]) -> str:
    """The kernel's TVMScript text is its source: equal text, arch and toolchain, equal binary."""
    h = hashlib.sha256()
    h.update(prim_func.script().encode())
    h.update(arch.encode())
    h.update(json.dumps(versions, sort_keys=True).encode())
    return h.hexdigest()[:32]


def build(prim_func, arch: str = "sm_90a", *, cache_dir: str | os.PathLike | None = None,
          use_cache: bool = True) -> Artifact:
    """Compile `prim_func` for `arch` into an Artifact, or return the cached one.

    Raises CompileError(kind=lowering|nvrtc|ptxas|resources) with the compiler's message."""
    lim = limits(arch)
    versions = toolchain_versions()
    key = cache_key(prim_func, arch, versions)
    path = Path(cache_dir or default_cache_dir()) / arch / key
    if use_cache and (path / "artifact.json").exists():
        return Artifact.load(path)

    host_func, device_mod, device_target = _lower(prim_func, arch)
    launch = launch_spec(prim_func, host_func)
    pre = resource_violations(arch, smem_bytes=launch.dynamic_smem, threads=launch.threads,
                              cluster_size=launch.cluster_size)
    if pre:  # before NVRTC: the launch description alone proves the config can't run
        raise ResourceLimitError(pre, arch)
    source = _cuda_source(device_mod, device_target)
    ptx = _nvrtc_ptx(source, arch)
    if b"setmaxnreg" in ptx:
        # Warpgroups that trade registers with setmaxnreg: nvJitLink ignores it (ptxas C7504:
        # it assembles PTX as one of several compilation units); the ptxas CLI honors it when
        # the entry's register count is known (the kernel's launch bounds name a minimum of
        # blocks per SM; else ptxas C7508 ignores it too).
        cubin, log = _assemble_with_ptxas(ptx, arch)
    else:
        cubin, log = _assemble(ptx, arch)
        if f"Function properties for {launch.symbol}" not in log:
            # Seen on the GPU machines' nvJitLink: a kernel linked before comes back without
            # the ptxas report. Assemble with the toolkit's ptxas instead.
            cubin, log = _assemble_with_ptxas(ptx, arch)
    resources = parse_ptxas_log(log, launch.symbol, launch.dynamic_smem, launch.threads)
    post = resource_violations(arch, smem_bytes=resources.smem_bytes, threads=resources.threads,
                               registers_per_thread=resources.registers)
    if post:
        raise ResourceLimitError(post, lim.arch)
    art = Artifact(key=key, arch=arch, launch=launch, resources=resources, versions=versions,
                   cubin=cubin, source=source, ptxas_log=log)
    return art.save(path) if use_cache else art


def _lower(prim_func, arch: str):
    import tvm
    from tvm.tirx.build import split_host_device_mods

    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    try:
        with target:
            mod = tvm.IRModule({"main": prim_func})
            mod = tvm.tirx.transform.BindTarget(target.with_host(tvm.target.Target("llvm")))(mod)
            pipeline, _, finalize_device = tvm.tirx.get_tir_pipeline("tirx")
            mod = pipeline(mod)
            host_mod, device_mods = split_host_device_mods(mod)
            (device_target, device_mod), = device_mods.items()
            device_mod = finalize_device()(device_mod)
    except Exception as e:  # TVM raises many types; all mean the template did not lower
        raise CompileError("lowering", _tvm_summary(str(e)), str(e)) from e
    hosts = [f for f in host_mod.functions.values() if f.attrs.get("tirx.is_entry_func", False)]
    return hosts[0], device_mod, device_target


def _cuda_source(device_mod, device_target) -> str:
    from tvm.tirx.build import codegen_build

    try:
        with device_target:
            return codegen_build(device_mod, device_target).inspect_source()
    except Exception as e:
        raise CompileError("lowering", f"CUDA codegen failed: {str(e).strip()[:500]}", str(e)) from e


def _nvrtc_ptx(source: str, arch: str) -> bytes:
    import tvm
    from tvm.support import nvcc

    try:
        with tvm.target.Target({"kind": "cuda", "arch": arch}):
            return bytes(nvcc.compile_cuda(source, target_format="ptx", arch=arch, compiler="nvrtc"))
    except Exception as e:
        raise CompileError("nvrtc", _first_error(str(e)), str(e)) from e


def _assemble(ptx: bytes, arch: str) -> tuple[bytes, str]:
    from cuda.bindings import nvjitlink

    opts = [f"-arch={arch}", "-O3", "-Xptxas=-v", "-Xptxas=--register-usage-level=10"]
    handle = nvjitlink.create(len(opts), opts)
    try:
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, ptx, len(ptx), "kernel.ptx")
        try:
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as e:
            log = _jitlink_log(handle, nvjitlink.get_error_log_size, nvjitlink.get_error_log)
            raise CompileError("ptxas", _first_error(log) or str(e), log) from e
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
        log = _jitlink_log(handle, nvjitlink.get_info_log_size, nvjitlink.get_info_log)
        return bytes(cubin), log
    finally:
        nvjitlink.destroy(handle)


def _assemble_with_ptxas(ptx: bytes, arch: str) -> tuple[bytes, str]:
    import subprocess
    import tempfile

    ptxas = toolchain.ptxas()
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp, "kernel.ptx"), Path(tmp, "kernel.cubin")
        src.write_bytes(ptx.rstrip(b"\x00"))  # NVRTC counts the C string terminator
        proc = subprocess.run([str(ptxas), f"-arch={arch}", "-v", "--register-usage-level=10",
                               "-o", str(out), str(src)], capture_output=True, text=True)
        if proc.returncode:
            raise CompileError("ptxas", _first_error(proc.stderr), proc.stderr)
        return out.read_bytes(), proc.stdout + proc.stderr


def _jitlink_log(handle, size_fn, get_fn) -> str:
    buf = bytearray(size_fn(handle))
    if buf:
        get_fn(handle, buf)
    return buf.decode(errors="replace").rstrip("\x00")


def _tvm_summary(message: str) -> str:
    """TVM errors lead with the reason, then dump the whole module: keep the reason."""
    reason = []
    for line in message.strip().splitlines():
        if line.startswith(("Error in pass", "Location (TVMScript)", "Traceback")):
            break
        if line.strip():
            reason.append(line.strip())
    return " / ".join(reason)[:500] or message.strip()[:500]


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if "error" in line.lower():
            return line.strip()[:500]
    return log.strip()[:500]


_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(log: str, symbol: str, dynamic_smem: int, threads: int) -> Resources:
    """Read the entry function's section of a `ptxas -v` report."""
    section = log.split(f"Function properties for {symbol}", 1)
    if len(section) != 2:
        raise CompileError("ptxas", f"ptxas report has no entry for {symbol}", log)
    body = section[1].split("Function properties for", 1)[0]
    props, regs = _PROPS.search(body), _REGS.search(body)
    if not (props and regs):
        raise CompileError("ptxas", f"unreadable ptxas report for {symbol}", log)
    smem = _SMEM.search(body)
    return Resources(
        registers=int(regs.group(1)),
        stack_frame_bytes=int(props.group(1)),
        spill_store_bytes=int(props.group(2)),
        spill_load_bytes=int(props.group(3)),
        static_smem_bytes=int(smem.group(1)) if smem else 0,
        dynamic_smem_bytes=dynamic_smem,
        threads=threads,
    )
