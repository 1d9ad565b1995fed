"""Launch an Artifact with cuda-bindings alone: no TVM on the GPU machine.

Per call we do what TVM's host function would: encode each TMA descriptor from the caller's
pointers (cached per pointer set, so steady-state calls re-encode nothing), then one
cuLaunchKernelEx with the cluster attribute. Parameters are passed as a void** array the driver
copies at launch, so launches are CUDA-graph capturable. A kernel with runtime sizes (buffer
dimensions named by a variable) reads them off the caller's tensors and evaluates its grid,
descriptors and size parameters from them (tirx.symbolic); a grid with no CTA launches nothing.
"""

from __future__ import annotations

import ctypes
import numbers

from cuda.bindings import driver as cu

from .artifact import Artifact
from .errors import LaunchError
from .symbolic import evaluate, leaves

_MAX_CACHED_MAPS = 64
_DTYPE_SIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1,
               "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "float8_e4m3fn": 1, "float8_e5m2": 1}
_SCALAR_CTYPE = {"int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint32": ctypes.c_uint32,
                 "uint64": ctypes.c_uint64, "float32": ctypes.c_float, "float64": ctypes.c_double}


def _check(result, what: str):
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        raise LaunchError(f"{what} failed: {name.decode() if name else err}")
    return rest[0] if len(rest) == 1 else rest


def ensure_context(device: int = 0):
    """Make a context current on this thread: torch's, if it made one; else the primary one."""
    _check(cu.cuInit(0), "cuInit")
    ctx = _check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(ctx) == 0:
        dev = _check(cu.cuDeviceGet(device), "cuDeviceGet")
        ctx = _check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        _check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx


def _check_scalar(symbol: str, want, value) -> None:
    """Scalar parameters are integers (tirx.host_ir.SCALAR_DTYPES): refuse what would wrap."""
    bits = int(want.dtype.removeprefix("u").removeprefix("int"))
    lo, hi = (0, 2**bits) if want.dtype.startswith("u") else (-(2**(bits - 1)), 2**(bits - 1))
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and lo <= value < hi
    if not ok:
        raise LaunchError(f"{symbol}: {want.name} must be an integer of type {want.dtype}, "
                          f"got {value!r}")


def _pointer(x) -> int:
    """A buffer's device address (a scalar argument passes through unchanged)."""
    return x.data_ptr() if hasattr(x, "data_ptr") else x


def _stream_handle(stream, args) -> int:
    if stream is None:
        if args and hasattr(args[0], "data_ptr"):
            import torch

            return torch.cuda.current_stream().cuda_stream
        return 0
    return stream if isinstance(stream, int) else stream.cuda_stream


def _caller_args(spec) -> list:
    """The arguments the caller passes: all but the kernel's scratch buffers."""
    return [a for a in spec.args if a.kind != "scratch"]


def check_args(spec, args) -> None:
    """Refuse arguments that do not fit the launch description, naming the one that does not:
    count, scalar types and ranges, tensor shape (runtime sizes equal wherever their name
    repeats), dtype and contiguity."""
    wanted = _caller_args(spec)
    if len(args) != len(wanted):
        raise LaunchError(f"{spec.symbol} takes {len(wanted)} arguments "
                          f"({', '.join(a.name for a in wanted)}), got {len(args)}")
    sizes: dict[str, int] = {}  # runtime size variables, as the first tensor sets them
    for a, want in zip(args, wanted):
        if want.kind == "scalar":
            _check_scalar(spec.symbol, want, a)
            continue
        runtime = [d for d in want.shape if isinstance(d, str)]
        if isinstance(a, int):
            if runtime:
                raise LaunchError(f"{spec.symbol}: {want.name} has runtime sizes "
                                  f"{', '.join(runtime)}: pass a tensor, not a pointer")
            continue
        shape, dtype = tuple(a.shape), str(a.dtype).removeprefix("torch.")
        known = {n: sizes[n] for n in runtime if n in sizes}
        fits = len(shape) == len(want.shape) and all(
            s == (sizes.setdefault(w, s) if isinstance(w, str) else w)
            for w, s in zip(want.shape, shape))
        if not fits or dtype != want.dtype or not a.is_contiguous():
            bound = f" with {known}" if known else ""
            raise LaunchError(f"{spec.symbol}: {want.name} must be a contiguous {want.dtype} "
                              f"tensor of shape {want.shape}{bound}, got {dtype} {shape}"
                              f"{'' if a.is_contiguous() else ' (non-contiguous)'}")
    for a, want in zip(args, wanted):  # a size passed twice: as a scalar and as a dim
        if want.kind == "scalar" and sizes.get(want.name, a) != a:
            raise LaunchError(f"{spec.symbol}: {want.name}={a}, but the tensors have "
                              f"{want.name}={sizes[want.name]}")


class Kernel:
    """A loaded artifact. `kernel(*args, stream=None)` launches it.

    args, in the PrimFunc's parameter order: for a buffer, a torch tensor (shape, dtype and
    contiguity are checked) or a raw device pointer (int, trusted; not for a buffer with
    runtime sizes, which are read off the tensor); for a scalar parameter, an
    integer passed by value (type and range are checked). stream: None (torch's current
    stream when given tensors, else the default stream), a CUstream handle as int, or any
    object with `.cuda_stream` (torch.cuda.Stream). Scratch buffers (ArgSpec kind "scratch")
    are allocated zero-filled here, once, and passed by the kernel object itself: one launch
    of a kernel object at a time (launches on one stream, or replays of one graph)."""

    def __init__(self, artifact: Artifact, device: int = 0):
        self.artifact = artifact
        spec = artifact.launch
        self.spec = spec
        ensure_context(device)
        self._module = _check(cu.cuModuleLoadData(artifact.cubin), "cuModuleLoadData")
        self._func = _check(cu.cuModuleGetFunction(self._module, spec.symbol.encode()),
                            f"cuModuleGetFunction({spec.symbol})")
        if spec.dynamic_smem > 48 * 1024:  # the default cap; above it the kernel must opt in
            _check(cu.cuFuncSetAttribute(
                self._func, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                spec.dynamic_smem), "raising the dynamic shared memory limit")
        if spec.cluster_size > 8:
            _check(cu.cuFuncSetAttribute(
                self._func, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                1), "allowing a non-portable cluster size")
        self._config = self._launch_config()
        self._scratch = {i: self._zeroed(a) for i, a in enumerate(spec.args)
                         if a.kind == "scratch"}
        self._maps: dict[tuple[int, ...], list] = {}
        n = len(spec.params)
        self._values = (ctypes.c_uint64 * max(n, 1))()  # pointer parameters live here
        self._scalars = {}
        self._param_ptrs = (ctypes.c_void_p * max(n, 1))()
        for i, p in enumerate(spec.params):
            if p.kind == "pointer":
                self._param_ptrs[i] = ctypes.addressof(self._values) + 8 * i
            elif p.kind == "scalar":  # caller scalars are written here at each launch
                self._scalars[i] = _SCALAR_CTYPE[p.dtype](p.value)
                self._param_ptrs[i] = ctypes.addressof(self._scalars[i])
        self._caller_scalars = [(i, p.arg) for i, p in enumerate(spec.params)
                                if p.kind == "scalar" and p.arg >= 0]
        self._size_params = [(i, p.expr) for i, p in enumerate(spec.params)
                             if p.kind == "scalar" and p.arg < 0 and p.expr is not None]
        runtime = [*spec.grid, *(e for i, e in self._size_params)]
        for m in spec.tensor_maps:
            runtime += [*m.global_dims, *m.global_strides]
        # the runtime sizes everything depends on: the key of the descriptor cache
        self._sizes = sorted(set().union(*(leaves(e) for e in runtime)))

    @staticmethod
    def _zeroed(arg) -> int:
        size = _DTYPE_SIZE[arg.dtype]
        for d in arg.shape:
            size *= d
        ptr = _check(cu.cuMemAlloc(size), f"allocating scratch buffer {arg.name}")
        _check(cu.cuMemsetD8(ptr, 0, size), f"zeroing scratch buffer {arg.name}")
        return int(ptr)

    def _with_scratch(self, args) -> tuple:
        """The caller's arguments with the scratch buffers' pointers in their places."""
        if not self._scratch:
            return args
        rest = iter(args)
        return tuple(self._scratch[i] if i in self._scratch else next(rest)
                     for i in range(len(self.spec.args)))

    def _launch_config(self):
        spec, cfg = self.spec, cu.CUlaunchConfig()
        if all(isinstance(g, int) for g in spec.grid):  # else set at each launch
            cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = spec.grid
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = spec.block
        cfg.sharedMemBytes = spec.dynamic_smem
        if spec.cluster is not None:
            attr = cu.CUlaunchAttribute()
            attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = spec.cluster
            cfg.attrs = [attr]
            cfg.numAttrs = 1
        else:
            cfg.numAttrs = 0
        return cfg

    def check_args(self, args) -> None:
        check_args(self.spec, args)

    def _tensor_maps(self, ptrs: list[int], sizes: tuple, args) -> list:
        key = (*(ptrs[m.arg] for m in self.spec.tensor_maps), *sizes)
        maps = self._maps.get(key)
        if maps is None:
            if len(self._maps) >= _MAX_CACHED_MAPS:
                self._maps.clear()
            maps = [self._encode(m, ptrs[m.arg] + m.offset, args) for m in self.spec.tensor_maps]
            self._maps[key] = maps
        return maps

    @staticmethod
    def _encode(m, address: int, args):
        dims = [evaluate(x, args) for x in m.global_dims]
        strides = [evaluate(x, args) for x in m.global_strides]
        return _check(cu.cuTensorMapEncodeTiled(
            cu.CUtensorMapDataType(m.cu_dtype), m.rank, address,
            [cu.cuuint64_t(x) for x in dims], [cu.cuuint64_t(x) for x in strides],
            [cu.cuuint32_t(x) for x in m.box_dims], [cu.cuuint32_t(x) for x in m.element_strides],
            cu.CUtensorMapInterleave(m.interleave), cu.CUtensorMapSwizzle(m.swizzle),
            cu.CUtensorMapL2promotion(m.l2_promotion), cu.CUtensorMapFloatOOBfill(m.oob_fill),
        ), f"cuTensorMapEncodeTiled (argument {m.arg})")

    def __call__(self, *args, stream=None, check: bool = True) -> None:
        if check:
            self.check_args(args)
        args = self._with_scratch(args)
        ptrs = [_pointer(a) for a in args]
        sizes = tuple(evaluate(s, args) for s in self._sizes)
        if sizes:
            grid = [evaluate(g, args) for g in self.spec.grid]
            if 0 in grid:  # e.g. a sequence of length 0: no work
                return
            self._config.gridDimX, self._config.gridDimY, self._config.gridDimZ = grid
            for i, expr in self._size_params:
                self._scalars[i].value = evaluate(expr, args)
        maps = self._tensor_maps(ptrs, sizes, args) if self.spec.tensor_maps else ()
        for i, p in enumerate(self.spec.params):
            if p.kind == "pointer":
                self._values[i] = ptrs[p.arg] + p.offset
            elif p.kind == "tensormap":
                self._param_ptrs[i] = maps[p.index].getPtr()
        for i, arg in self._caller_scalars:
            self._scalars[i].value = args[arg]
        self._config.hStream = cu.CUstream(_stream_handle(stream, args))
        _check(cu.cuLaunchKernelEx(self._config, self._func, ctypes.addressof(self._param_ptrs), 0),
               f"launching {self.spec.symbol}")

    def __del__(self, _unload=cu.cuModuleUnload, _free=cu.cuMemFree):  # bound now: at exit
        module = getattr(self, "_module", None)  # the driver module is torn down
        if module is not None:
            _unload(module)
        for ptr in getattr(self, "_scratch", {}).values():
            _free(ptr)
