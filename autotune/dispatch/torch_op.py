"""The dispatcher as a torch custom op (torch.library), so torch.compile traces through a model
that calls it (the op is opaque to the compiler; the op's `fake` gives output shapes) and CUDA
graphs capture it. The op's name and schema come from the plugin's Op. Imported only on demand:
the dispatcher itself needs no torch.

    op = autotune.load("gemm")
    gemm = register_torch_op(op)   # torch.ops.autotune.gemm
    y = gemm(x, weight)
"""

from __future__ import annotations

from .dispatcher import Dispatcher

_DISPATCHERS: dict[str, Dispatcher] = {}  # op name -> the dispatcher its custom op calls
_OPS: dict = {}


def register_torch_op(dispatcher: Dispatcher):
    """torch.ops.autotune.<op name>, routed to `dispatcher` (the latest registered one wins)."""
    op = dispatcher.op
    if not op.schema:
        raise ValueError(f"op {op.name!r} declares no custom-op schema")
    _DISPATCHERS[op.name] = dispatcher
    if op.name not in _OPS:
        _OPS[op.name] = _define(op)
    return _OPS[op.name]


def _define(op):
    import torch

    def call(*args):
        return _DISPATCHERS[op.name](*args)

    custom = torch.library.custom_op(f"autotune::{op.name}", call, mutates_args=(),
                                     schema=op.schema)
    custom.register_fake(op.fake)
    return custom
