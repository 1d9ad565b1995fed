"""Launch an Artifact with cuda-bindings alone: no TVM on the GPU machine.

Per call we do what TVM's host function would: encode each TMA descriptor from the caller's
pointers (cached per pointer set, so steady-state calls re-encode nothing), then one
cuLaunchKernelEx with the cluster attribute. Parameters are passed as a void** array the driver
copies at launch, so launches are CUDA-graph capturable. A kernel with runtime sizes (buffer
dimensions named by a variable) reads them off the caller's tensors and evaluates its grid,
descriptors and size parameters from them (tirx.symbolic); a grid with no CTA launches nothing.

Layouts: a buffer the kernel reaches only through TMA descriptors over its natural layout
(ArgSpec.strided) may be a strided view, whose descriptors are encoded with its own strides
(tma_strides; refused, naming the rule, where TMA cannot take them: layout_problems). Every
other buffer must be contiguous. Layouts are checked at every launch, checked or not: a view
the kernel cannot take raises tirx.LayoutError before anything is launched.
"""

from __future__ import annotations

import ctypes
import numbers

from cuda.bindings import driver as cu

from .artifact import DTYPE_BYTES as _DTYPE_SIZE
from .artifact import Artifact
from .errors import LaunchError, LayoutError
from .symbolic import evaluate, leaves

_MAX_CACHED_MAPS = 64
# cuTensorMapEncodeTiled's rules for a global tensor: strides (all but the innermost, which is
# one element) are multiples of 16 bytes below 2^40; the address is 16-byte aligned
TMA_ALIGN = 16
TMA_MAX_STRIDE = 1 << 40
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
    """The arguments the caller passes, with their index in spec.args: all but the kernel's
    scratch buffers."""
    return [(i, a) for i, a in enumerate(spec.args) if a.kind != "scratch"]


def _dense_strides(shape, strides) -> list[int]:
    """Element strides, outermost first, with each dimension of size 1 given the stride a
    contiguous tensor gives it (any stride addresses its one index): a tensor torch calls
    contiguous gets exactly the contiguous strides."""
    out = list(strides)
    for d in reversed(range(len(shape))):
        if shape[d] == 1:
            out[d] = out[d + 1] * shape[d + 1] if d + 1 < len(shape) else 1
    return out


def tma_strides(shape, strides, itemsize: int) -> tuple[int, ...]:
    """The global strides, in bytes and innermost first, of a tensor map spanning a tensor in
    its natural layout (TensorMapSpec.global_strides: all but the innermost), for a tensor of
    `shape` with element `strides` (torch's order: outermost first)."""
    return tuple(s * itemsize for s in reversed(_dense_strides(shape, strides)[:-1]))


def layout_problems(shape, strides, itemsize: int, address: int | None = None) -> list[str]:
    """The TMA rules a tensor of `shape` with element `strides` (outermost first) breaks, as
    sentences; [] when tensor maps over its natural layout can take its own strides."""
    if not shape or 0 in shape:  # nothing to address
        return []
    dense = _dense_strides(shape, strides)
    out = []
    if dense[-1] != 1:
        out.append(f"its innermost stride is {dense[-1]} elements, and TMA reads the innermost "
                   "dimension contiguously (stride 1)")
    for d, s in enumerate(dense[:-1]):
        b = s * itemsize
        if b <= 0 or b % TMA_ALIGN or b >= TMA_MAX_STRIDE:
            out.append(f"dimension {d} has a stride of {b} bytes, and TMA takes only positive "
                       f"multiples of {TMA_ALIGN} bytes below 2^40")
    if all(s > 0 for s in dense):  # an output's elements must not share memory
        spans = sorted((s, n) for s, n in zip(dense, shape) if n > 1)
        if any(s2 < s1 * n1 for (s1, n1), (s2, _) in zip(spans, spans[1:])):
            out.append("its dimensions are not nested in memory (in stride order each must "
                       "step past the whole span of those inside it), so elements may share "
                       "an address")
    if address is not None and address % TMA_ALIGN:
        out.append(f"its address {address:#x} is not {TMA_ALIGN}-byte aligned, as TMA needs")
    return out


def _how_reached(spec, index: int) -> str:
    if any(p.kind == "pointer" and p.arg == index for p in spec.params):
        return "through a pointer"
    if any(m.arg == index for m in spec.tensor_maps):
        return "through TMA descriptors that do not span it in its natural layout"
    return "other than through TMA descriptors"


def layout_error(spec, index: int, a) -> LayoutError | None:
    """Why the kernel cannot take tensor `a` as argument `index` (of spec.args) as it is laid
    out, or None when it can: a contiguous tensor, or a strided view of an ArgSpec.strided
    argument whose strides TMA can take."""
    if isinstance(a, int) or a.is_contiguous():
        return None
    want, shape, strides = spec.args[index], tuple(a.shape), tuple(a.stride())
    if not want.strided:
        return LayoutError(f"{spec.symbol}: {want.name} must be contiguous, got shape {shape} "
                           f"with strides {strides}: the kernel reaches it "
                           f"{_how_reached(spec, index)}, so it cannot take other strides",
                           contiguous_only=True)
    problems = layout_problems(shape, strides, _DTYPE_SIZE[want.dtype], a.data_ptr())
    if problems:
        return LayoutError(f"{spec.symbol}: {want.name} has shape {shape} with strides "
                           f"{strides} (elements), which its TMA descriptors cannot take: "
                           + "; ".join(problems), contiguous_only=False)
    return None


def check_args(spec, args) -> None:
    """Refuse arguments that do not fit the launch description, naming the one that does not:
    count, scalar types and ranges, tensor shape (runtime sizes equal wherever their name
    repeats), dtype and layout (contiguous, or a view TMA can take where ArgSpec.strided)."""
    wanted = _caller_args(spec)
    if len(args) != len(wanted):
        raise LaunchError(f"{spec.symbol} takes {len(wanted)} arguments "
                          f"({', '.join(a.name for _, a in wanted)}), got {len(args)}")
    sizes: dict[str, int] = {}  # runtime size variables, as the first tensor sets them
    for a, (index, want) in zip(args, wanted):
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
        if not fits or dtype != want.dtype:
            bound = f" with {known}" if known else ""
            raise LaunchError(f"{spec.symbol}: {want.name} must be a "
                              f"{'' if want.strided else 'contiguous '}{want.dtype} "
                              f"tensor of shape {want.shape}{bound}, got {dtype} {shape}")
        error = layout_error(spec, index, a)
        if error is not None:
            raise error
    for a, (_, want) in zip(args, wanted):  # a size passed twice: as a scalar and as a dim
        if want.kind == "scalar" and sizes.get(want.name, a) != a:
            raise LaunchError(f"{spec.symbol}: {want.name}={a}, but the tensors have "
                              f"{want.name}={sizes[want.name]}")


class Kernel:
    """A loaded artifact. `kernel(*args, stream=None)` launches it.

    args, in the PrimFunc's parameter order: for a buffer, a torch tensor (shape and dtype are
    checked; contiguous, or for an ArgSpec.strided buffer any view TMA can take: its
    descriptors get its strides) or a raw device pointer (int, trusted as contiguous; not for
    a buffer with runtime sizes, which are read off the tensor); for a scalar parameter, an
    integer passed by value (type and range are checked). check=False skips those checks but
    not the layouts': a view the kernel cannot take raises tirx.LayoutError, launching nothing.
    stream: None (torch's current stream when given tensors, else the default stream), a
    CUstream handle as int, or any object with `.cuda_stream` (torch.cuda.Stream). Scratch
    buffers (ArgSpec kind "scratch") are allocated zero-filled here, once, and passed by the
    kernel object itself: one launch of a kernel object at a time (launches on one stream, or
    replays of one graph)."""

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
        self._maps: dict[tuple, list] = {}
        buffers = [i for i, a in enumerate(spec.args) if a.kind == "buffer"]
        self._strided = [i for i in buffers if spec.args[i].strided]  # their strides key the maps
        self._dense = [i for i in buffers if not spec.args[i].strided]
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

    def max_active_clusters(self, cluster_size: int | None = None) -> int:
        """Clusters of this kernel (`cluster_size` CTAs along x; default: its own clusters) the
        device runs at once (cuOccupancyMaxActiveClusters). The hardware places a cluster inside
        one GPC, so where GPCs' SM counts are not multiples of the size this is below
        SMs / size, and a persistent grid sized by SMs / size runs its last clusters late."""
        size = cluster_size or self.spec.cluster_size
        cfg = cu.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = size, 1, 1
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = self.spec.block
        cfg.sharedMemBytes = self.spec.dynamic_smem
        attr = cu.CUlaunchAttribute()
        attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = size, 1, 1
        cfg.attrs, cfg.numAttrs = [attr], 1
        return int(_check(cu.cuOccupancyMaxActiveClusters(self._func, cfg),
                          "cuOccupancyMaxActiveClusters"))

    def check_args(self, args) -> None:
        check_args(self.spec, args)

    def _layouts(self, args) -> tuple:
        """The strides of the strided arguments' views (None: contiguous, or a pointer); a view
        where the kernel takes only a contiguous tensor is refused."""
        for i in self._dense:
            a = args[i]
            if not isinstance(a, int) and not a.is_contiguous():
                raise layout_error(self.spec, i, a)
        return tuple(None if isinstance(a, int) or a.is_contiguous() else tuple(a.stride())
                     for a in (args[i] for i in self._strided))

    def _tensor_maps(self, ptrs: list[int], sizes: tuple, layouts: tuple, args) -> list:
        key = (*(ptrs[m.arg] for m in self.spec.tensor_maps), *sizes, *layouts)
        maps = self._maps.get(key)
        if maps is None:
            strides = {}  # argument -> its views' tensor-map strides
            for i, layout in zip(self._strided, layouts):
                if layout is not None:
                    error = layout_error(self.spec, i, args[i])
                    if error is not None:
                        raise error
                    strides[i] = tma_strides(tuple(args[i].shape), layout,
                                             _DTYPE_SIZE[self.spec.args[i].dtype])
            if len(self._maps) >= _MAX_CACHED_MAPS:
                self._maps.clear()
            maps = [self._encode(m, ptrs[m.arg] + m.offset, args, strides.get(m.arg))
                    for m in self.spec.tensor_maps]
            self._maps[key] = maps
        return maps

    @staticmethod
    def _encode(m, address: int, args, strides=None):
        """One descriptor; `strides` (bytes, innermost first) replace the natural ones for a
        strided view of an ArgSpec.strided argument, whose maps span it in that layout."""
        dims = [evaluate(x, args) for x in m.global_dims]
        if strides is None:
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
        layouts = self._layouts(args)
        ptrs = [_pointer(a) for a in args]
        sizes = tuple(evaluate(s, args) for s in self._sizes)
        if sizes:
            grid = [evaluate(g, args) for g in self.spec.grid]
            if 0 in grid:  # e.g. a sequence of length 0: no work
                return
            self._config.gridDimX, self._config.gridDimY, self._config.gridDimZ = grid
            for i, expr in self._size_params:
                self._scalars[i].value = evaluate(expr, args)
        maps = self._tensor_maps(ptrs, sizes, layouts, args) if self.spec.tensor_maps else ()
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
