"""Read a kernel's launch description off TVM's lowered host function.

After the TIRx pipeline the host function does three things we must reproduce without TVM:
encode each TMA descriptor (`tensormap_encode_tiled`) from a caller buffer's pointer, then
launch the device kernel (`call_ffi_kernel`) with its parameters and launch dimensions. Pointers
reach those calls through a chain of bindings back to the packed arguments; we follow the chain
to learn which caller argument (and byte offset) each one is. Sizes the kernel takes at launch
(variable buffer dimensions, scalar parameters) reach the grid, the descriptors and the kernel's
parameters as expressions, which we record over the caller's arguments (tirx.symbolic).

A buffer the kernel reaches only through TMA descriptors, each over the whole buffer in its
natural layout (dims its shape, strides those of a contiguous tensor), can be passed as a strided
view: the launcher encodes the descriptors with the tensor's own strides (ArgSpec.strided,
set by tirx.artifact.strided_args).
"""

from __future__ import annotations

import inspect

from .artifact import SCRATCH_PREFIX, ArgSpec, LaunchSpec, ParamSpec, TensorMapSpec, mark_strided
from .errors import CompileError

# CUtensorMapDataType by TVM dtype (cuda.h enum values).
CU_TENSOR_MAP_DTYPE = {
    "uint8": 0, "uint16": 1, "uint32": 2, "int32": 3, "uint64": 4, "int64": 5, "float16": 6,
    "float32": 7, "float64": 8, "bfloat16": 9, "int8": 0, "float8_e4m3fn": 0, "float8_e5m2": 0,
}
# Scalar parameter types a caller may pass at launch (tirx/launch.py packs them by value). Floats
# are not traced: the host function accepts an int or a float for them (a Select).
SCALAR_DTYPES = ("int32", "int64", "uint32", "uint64")
# tvm_struct_get fields: the packed argument's value, DLTensor.data, DLTensor.shape, and an
# element of an int64 array (a shape's entries).
_ANY_VALUE_FIELD = 15
_DLTENSOR_DATA_FIELD = 1
_DLTENSOR_SHAPE_FIELD = 2
_INT64_ARRAY_ELEM = 17
# TIR integer arithmetic -> tirx.symbolic's operators
_BINOPS = {"Add": "add", "Sub": "sub", "Mul": "mul", "FloorDiv": "floordiv", "FloorMod": "floormod",
           "Div": "truncdiv", "Mod": "truncmod", "Min": "min", "Max": "max"}
_CHILD_FIELDS = ("seq", "body", "then_case", "else_case", "value", "condition", "args", "a", "b",
                 "data", "true_value", "false_value")


def _nodes(root):
    """Statements and expressions below `root`, pre-order; Vars are leaves."""
    import tvm

    stack = [root]
    while stack:
        n = stack.pop()
        if type(n).__name__ == "Array":
            stack.extend(reversed(list(n)))
            continue
        if not isinstance(n, (tvm.tirx.Stmt, tvm.ir.expr.Expr)):
            continue
        yield n
        if type(n).__name__ == "Var":  # Var.data builds a new expression: never descend
            continue
        for f in reversed(_CHILD_FIELDS):
            v = getattr(n, f, None)
            if v is not None and not inspect.ismethod(v):
                stack.append(v)


def _op(n) -> str:
    return n.op.name if type(n).__name__ == "Call" and hasattr(n.op, "name") else ""


def _int(e, what: str) -> int:
    if type(e).__name__ != "IntImm":
        raise CompileError("lowering", f"{what} is not a compile-time constant ({e}); "
                                       "symbolic shapes are not supported: specialize the kernel")
    return int(e.value)


class _Bindings:
    """Var -> the expression it stands for, from Bind and DeclBuffer statements."""

    def __init__(self, body):
        self.pairs = []
        for n in _nodes(body):
            kind = type(n).__name__
            if kind == "Bind":
                self.pairs.append((n.var, n.value))
            elif kind == "DeclBuffer" and n.data is not None:
                self.pairs.append((n.buffer, n.data))

    def lookup(self, var):
        for v, e in self.pairs:
            if v.same_as(var) and not e.same_as(var):
                return e
        return None

    def caller_pointer(self, expr) -> tuple[int, int]:
        """(caller argument index, byte offset) that a device-pointer expression denotes."""
        offset = 0
        for _ in range(64):
            op = _op(expr)
            if op == "tirx.handle_add_byte_offset":
                offset += _int(expr.args[1], "pointer offset")
                expr = expr.args[0]
            elif op in ("tirx.reinterpret", "tirx.buffer_data"):
                expr = expr.args[-1]
            elif op == "tirx.tvm_struct_get" and _int(expr.args[2], "field") == _DLTENSOR_DATA_FIELD:
                return self._packed_arg(expr.args[0]), offset
            elif type(expr).__name__ == "Var" and self.lookup(expr) is not None:
                expr = self.lookup(expr)
            else:
                break
        raise CompileError("lowering", f"cannot trace kernel pointer {expr} to a caller argument")

    def value(self, expr, what: str):
        """An integer expression of the host function as a tirx.symbolic expression over the
        caller's arguments: constants, scalar arguments, tensor dimensions and arithmetic."""
        kind = type(expr).__name__
        if kind == "IntImm":
            return int(expr.value)
        if kind == "Cast":  # int32 sizes arrive as the packed int64, narrowed
            return self.value(expr.value, what)
        if kind in _BINOPS:
            return (_BINOPS[kind], self.value(expr.a, what), self.value(expr.b, what))
        if kind == "Var" and self.lookup(expr) is not None:
            return self.value(self.lookup(expr), what)
        if _op(expr) == "tirx.tvm_struct_get":
            field = _int(expr.args[2], "field")
            if field == _ANY_VALUE_FIELD:
                return ("arg", _int(expr.args[1], "argument index"))
            if field == _INT64_ARRAY_ELEM:
                return ("dim", self._shape_owner(expr.args[0]), _int(expr.args[1], "dimension"))
        raise CompileError("lowering", f"{what} ({expr}) is not a function of the caller's "
                                       "arguments: pass sizes as scalar parameters or buffer dims")

    def _shape_owner(self, shape) -> int:
        """Caller argument index of the tensor whose DLTensor.shape `shape` is."""
        while type(shape).__name__ == "Var" and self.lookup(shape) is not None:
            shape = self.lookup(shape)
        if _op(shape) == "tirx.tvm_struct_get" and \
                _int(shape.args[2], "field") == _DLTENSOR_SHAPE_FIELD:
            return self._packed_arg(shape.args[0])
        raise CompileError("lowering", f"cannot trace shape {shape} to a caller argument")

    def _packed_arg(self, handle) -> int:
        while type(handle).__name__ == "Var" and self.lookup(handle) is not None:
            handle = self.lookup(handle)
        for n in _nodes(handle):
            if _op(n) == "tirx.tvm_struct_get" and _int(n.args[2], "field") == _ANY_VALUE_FIELD:
                return _int(n.args[1], "argument index")
        raise CompileError("lowering", f"cannot trace tensor handle {handle} to a caller argument")


def _arg_specs(prim_func) -> tuple[ArgSpec, ...]:
    out = []
    for p in prim_func.params:
        ty = p.ty
        if not hasattr(ty, "shape"):  # a PrimType: a scalar passed by value at launch
            if str(ty) not in SCALAR_DTYPES:
                raise CompileError("lowering", f"parameter {p.name} has type {ty}; scalar "
                                               f"parameters must be one of {SCALAR_DTYPES}")
            out.append(ArgSpec(p.name, (), str(ty), kind="scalar"))
            continue
        kind = "scratch" if p.name.startswith(SCRATCH_PREFIX) else "buffer"
        out.append(ArgSpec(p.name, tuple(_dim(s, p.name) for s in ty.shape), str(ty.dtype), kind))
        if kind == "scratch" and not all(isinstance(d, int) for d in out[-1].shape):
            raise CompileError("lowering", f"scratch buffer {p.name} must have a constant shape")
    return tuple(out)


def _dim(size, buffer: str) -> int | str:
    """A buffer dimension: a constant, or the name of the variable the caller's tensor sets."""
    if type(size).__name__ == "Var":
        return size.name
    return _int(size, f"{buffer} shape")


def _tensor_map(call, bindings: _Bindings) -> TensorMapSpec:
    a = call.attrs
    rank = int(a.rank)
    fields = [bindings.value(x, "tensor map field") for x in call.args[2:]]
    if len(fields) != 4 * rank - 1:
        raise CompileError("lowering", f"unexpected tensormap_encode_tiled arity {len(call.args)}")
    arg, offset = bindings.caller_pointer(call.args[1])
    dtype = str(a.descriptor_dtype)
    cu = int(a.force_cu_dtype) if int(a.force_cu_dtype) >= 0 else CU_TENSOR_MAP_DTYPE.get(dtype)
    if cu is None:
        raise CompileError("lowering", f"no TMA data type for {dtype}")
    dims, strides = fields[:rank], fields[rank:2 * rank - 1]  # may depend on runtime sizes
    box = [_int(b, "tensor map box") for b in call.args[2 + 2 * rank - 1:2 + 3 * rank - 1]]
    elem = [_int(e, "tensor map element stride") for e in call.args[2 + 3 * rank - 1:]]
    return TensorMapSpec(arg=arg, offset=offset, dtype=dtype, cu_dtype=cu,
                         global_dims=tuple(dims), global_strides=tuple(strides),
                         box_dims=tuple(box), element_strides=tuple(elem),
                         interleave=int(a.interleave), swizzle=int(a.swizzle),
                         l2_promotion=int(a.l2_promotion), oob_fill=int(a.oob_fill))


_GRID, _BLOCK, _CLUSTER = "blockIdx.", "threadIdx.", "clusterCtaIdx."
_DYN_SMEM = "tirx.use_dyn_shared_memory"


def launch_spec(prim_func, host_func) -> LaunchSpec:
    bindings = _Bindings(host_func.body)
    encodes, launches = [], []
    for n in _nodes(host_func.body):
        if _op(n) == "tirx.tensormap_encode_tiled":
            encodes.append(n)
        elif _op(n) == "tirx.call_ffi_kernel":
            launches.append(n)
    if len(launches) != 1:
        raise CompileError("lowering", f"expected one device kernel launch, found {len(launches)}")
    launch = launches[0]
    maps = [_tensor_map(c, bindings) for c in encodes]

    tags = [str(t) for t in launch.attrs.launch_params]
    values = [bindings.value(v, "launch dimension")
              for v in launch.args[len(launch.args) - len(tags):]]
    dims = {"grid": [1, 1, 1], "block": [1, 1, 1], "cluster": [1, 1, 1]}
    dynamic_smem, has_cluster = 0, False
    for tag, value in zip(tags, values):
        for prefix, key in ((_GRID, "grid"), (_BLOCK, "block"), (_CLUSTER, "cluster")):
            if tag.startswith(prefix):
                dims[key]["xyz".index(tag[len(prefix)])] = value
                has_cluster |= key == "cluster"
                break
        else:
            if tag != _DYN_SMEM:
                raise CompileError("lowering", f"launch attribute {tag} is not supported")
            dynamic_smem = value
    for key in ("block", "cluster"):
        if not all(isinstance(v, int) for v in dims[key]):
            raise CompileError("lowering", f"the {key} shape depends on runtime sizes: {dims[key]}")
    if not isinstance(dynamic_smem, int):
        raise CompileError("lowering", "dynamic shared memory depends on runtime sizes")

    params = []
    for p in launch.args[1:len(launch.args) - len(tags)]:
        kind = type(p).__name__
        if kind == "Var" and any(e.args[0].same_as(p) for e in encodes):
            params.append(ParamSpec("tensormap", index=next(
                i for i, e in enumerate(encodes) if e.args[0].same_as(p))))
        elif kind in ("IntImm", "FloatImm"):
            params.append(ParamSpec("scalar", dtype=str(p.dtype), value=p.value))
        elif str(p.ty) in SCALAR_DTYPES:  # a caller scalar, or a size computed from them
            v = bindings.value(p, f"kernel parameter {p}")
            if isinstance(v, int):
                params.append(ParamSpec("scalar", dtype=str(p.ty), value=v))
            elif v[0] == "arg":
                params.append(ParamSpec("scalar", arg=v[1], dtype=str(p.ty)))
            else:
                params.append(ParamSpec("scalar", dtype=str(p.ty), expr=v))
        else:
            arg, offset = bindings.caller_pointer(p)
            params.append(ParamSpec("pointer", arg=arg, offset=offset))

    return mark_strided(LaunchSpec(
        symbol=str(launch.args[0].value),
        args=_arg_specs(prim_func),
        params=tuple(params),
        tensor_maps=tuple(maps),
        grid=tuple(dims["grid"]),
        block=tuple(dims["block"]),
        cluster=tuple(dims["cluster"]) if has_cluster else None,
        dynamic_smem=dynamic_smem,
    ))
