"""The dispatcher as a torch custom op (torch.library), so torch.compile traces through a model
that calls it (the op is opaque to the compiler; its fake implementation gives output shapes)
and CUDA graphs capture it. Imported only on demand: CPU machines have no torch.

    op = autotune.load("gemm")
    gemm = register_torch_op(op)   # torch.ops.autotune.gemm
    y = gemm(x, weight)
"""

from __future__ import annotations

from .dispatcher import Dispatcher

_DISPATCHERS: dict[str, Dispatcher] = {}  # kernel -> the dispatcher the op calls
_OPS: dict = {}


def register_torch_op(dispatcher: Dispatcher):
    """torch.ops.autotune.<kernel>, routed to `dispatcher` (the latest registered one wins)."""
    kernel = dispatcher.space.kernel
    _DISPATCHERS[kernel] = dispatcher
    if kernel not in _OPS:
        _OPS[kernel] = _DEFINE[kernel]()
    return _OPS[kernel]


def _define_gemm():
    import torch

    # The schema is spelled out: this module's postponed annotations are strings, which
    # torch's schema inference does not read.
    @torch.library.custom_op("autotune::gemm", mutates_args=(), schema="(Tensor a, Tensor b) -> Tensor")
    def gemm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _DISPATCHERS["gemm"](a, b)

    @gemm.register_fake
    def _(a, b):
        return a.new_empty((*a.shape[:-1], b.shape[0]))

    return gemm


_DEFINE = {"gemm": _define_gemm}
