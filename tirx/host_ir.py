"""Read a kernel's launch description off TVM's lowered host function.

After the TIRx pipeline the host function does three things we must reproduce without TVM:
encode each TMA descriptor (`tensormap_encode_tiled`) from a caller buffer's pointer, then
launch the device kernel (`call_ffi_kernel`) with its parameters and launch dimensions. Pointers
reach those calls through a chain of bindings back to the packed arguments; we follow the chain
to learn which caller argument (and byte offset) each one is.
"""

from __future__ import annotations

import inspect

from .artifact import ArgSpec, LaunchSpec, ParamSpec, TensorMapSpec
from .errors import CompileError

# CUtensorMapDataType by TVM dtype (cuda.h enum values).
CU_TENSOR_MAP_DTYPE = {
    "uint8": 0, "uint16": 1, "uint32": 2, "int32": 3, "uint64": 4, "int64": 5, "float16": 6,
    "float32": 7, "float64": 8, "bfloat16": 9, "int8": 0, "float8_e4m3fn": 0, "float8_e5m2": 0,
}
# Scalar parameter types a caller may pass at launch (tirx/launch.py packs them by value). Floats
# are not traced: the host function accepts an int or a float for them (a Select).
SCALAR_DTYPES = ("int32", "int64", "uint32", "uint64")
# Index of the packed argument's value field, and of DLTensor.data, in tvm_struct_get.
_ANY_VALUE_FIELD = 15
_DLTENSOR_DATA_FIELD = 1
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

    def caller_scalar(self, var) -> int:
        """Caller argument index of a scalar the host function unpacked from the packed args."""
        expr = var
        while type(expr).__name__ == "Var" and self.lookup(expr) is not None:
            expr = self.lookup(expr)
        if type(expr).__name__ == "Cast":  # int32 params arrive as the packed int64, narrowed
            expr = expr.value
        if _op(expr) == "tirx.tvm_struct_get" and _int(expr.args[2], "field") == _ANY_VALUE_FIELD:
            return _int(expr.args[1], "argument index")
        raise CompileError("lowering", f"kernel scalar {var} is not a caller argument ({expr}); "
                                       "pass scalar parameters to the kernel unchanged")

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
        shape = tuple(_int(s, f"{p.name} shape") for s in ty.shape)
        out.append(ArgSpec(p.name, shape, str(ty.dtype)))
    return tuple(out)


def _tensor_map(call, bindings: _Bindings) -> TensorMapSpec:
    a = call.attrs
    rank = int(a.rank)
    ints = [_int(x, "tensor map field") for x in call.args[2:]]
    if len(ints) != 4 * rank - 1:
        raise CompileError("lowering", f"unexpected tensormap_encode_tiled arity {len(call.args)}")
    arg, offset = bindings.caller_pointer(call.args[1])
    dtype = str(a.descriptor_dtype)
    cu = int(a.force_cu_dtype) if int(a.force_cu_dtype) >= 0 else CU_TENSOR_MAP_DTYPE.get(dtype)
    if cu is None:
        raise CompileError("lowering", f"no TMA data type for {dtype}")
    dims, strides = ints[:rank], ints[rank:2 * rank - 1]
    box, elem = ints[2 * rank - 1:3 * rank - 1], ints[3 * rank - 1:]
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
    values = [_int(v, "launch dimension") for v in launch.args[len(launch.args) - len(tags):]]
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

    params = []
    for p in launch.args[1:len(launch.args) - len(tags)]:
        kind = type(p).__name__
        if kind == "Var" and any(e.args[0].same_as(p) for e in encodes):
            params.append(ParamSpec("tensormap", index=next(
                i for i, e in enumerate(encodes) if e.args[0].same_as(p))))
        elif kind in ("IntImm", "FloatImm"):
            params.append(ParamSpec("scalar", dtype=str(p.dtype), value=p.value))
        elif kind == "Var" and str(p.ty) in SCALAR_DTYPES:
            params.append(ParamSpec("scalar", arg=bindings.caller_scalar(p), dtype=str(p.ty)))
        else:
            arg, offset = bindings.caller_pointer(p)
            params.append(ParamSpec("pointer", arg=arg, offset=offset))

    return LaunchSpec(
        symbol=str(launch.args[0].value),
        args=_arg_specs(prim_func),
        params=tuple(params),
        tensor_maps=tuple(maps),
        grid=tuple(dims["grid"]),
        block=tuple(dims["block"]),
        cluster=tuple(dims["cluster"]) if has_cluster else None,
        dynamic_smem=dynamic_smem,
    )
