"""Launch values that depend on sizes known only at launch (runtime batch or sequence length).

A kernel whose buffers have variable dimensions (`B = T.int32()` in a `T.match_buffer` shape)
gets one binary for every size: TVM's host function reads the sizes off the tensors it is given
and computes the grid, the TMA descriptors' dims and strides and the kernel's size parameters
from them. We record those computations as expressions over the caller's arguments and
evaluate them at each launch.

An expression is an int; ("arg", i): the caller's scalar argument i; ("dim", i, d): dimension
d of the caller's tensor i; or (op, a, b) with op one of OPS, integer arithmetic as TIR does it.
"""

from __future__ import annotations

import operator


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


OPS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "floordiv": operator.floordiv,
    "floormod": operator.mod,
    "truncdiv": _truncdiv,
    "truncmod": lambda a, b: a - b * _truncdiv(a, b),
    "min": min,
    "max": max,
}


def evaluate(expr, args) -> int:
    """The value of `expr` for the caller's arguments (tensors with `.shape`, scalars)."""
    if isinstance(expr, int):
        return expr
    head = expr[0]
    if head == "arg":
        return int(args[expr[1]])
    if head == "dim":
        return int(args[expr[1]].shape[expr[2]])
    return OPS[head](evaluate(expr[1], args), evaluate(expr[2], args))


def leaves(expr) -> set[tuple]:
    """The ("arg", i) and ("dim", i, d) an expression reads."""
    if isinstance(expr, int):
        return set()
    if expr[0] in ("arg", "dim"):
        return {tuple(expr)}
    return leaves(expr[1]) | leaves(expr[2])


def freeze(value):
    """JSON lists back to the tuples expressions are made of."""
    return tuple(freeze(v) for v in value) if isinstance(value, (list, tuple)) else value
