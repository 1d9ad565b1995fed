"""Our layer over TIRx: compile a PrimFunc on a CPU-only machine into a self-contained artifact
(cubin + launch description + resource report), and launch that artifact on a GPU machine with
cuda-bindings alone (no TVM there).

    art = tirx.build(prim_func, arch="sm_90a")     # needs TVM; cached on disk
    kernel = tirx.Kernel(art)                        # needs only cuda-bindings and a GPU
    kernel(a, b, d, stream=torch.cuda.current_stream().cuda_stream)
"""

from .arch import ARCHS, ArchLimits, limits
from .artifact import Artifact, LaunchSpec, Resources, TensorMapSpec
from .errors import CompileError, LaunchError, LayoutError, ResourceLimitError
from .resources import check_resources


def build(*args, **kwargs) -> Artifact:
    """Compile a TIRx PrimFunc for `arch`; see tirx.compile.build. Imports TVM lazily."""
    from .compile import build as _build

    return _build(*args, **kwargs)


def __getattr__(name):
    # The launcher pulls in cuda-bindings' driver API: load it only when asked for.
    if name == "Kernel":
        from .launch import Kernel

        return Kernel
    raise AttributeError(name)


__all__ = [
    "ARCHS", "ArchLimits", "Artifact", "CompileError", "Kernel", "LaunchError", "LaunchSpec",
    "LayoutError", "ResourceLimitError", "Resources", "TensorMapSpec", "build", "check_resources",
    "limits",
]
