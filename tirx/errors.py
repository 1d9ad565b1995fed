"""Errors of the compile and launch layer, classified so a tuner can count failures by cause."""

from __future__ import annotations


class CompileError(RuntimeError):
    """A candidate that did not become an artifact.

    kind: "toolchain" (a CUDA compiler piece is missing: the machine's fault, not the kernel's),
    "lowering" (TIRx rejected or failed to lower the kernel), "nvrtc" (the CUDA source
    did not compile), "ptxas" (PTX did not assemble), "resources" (a hardware limit is exceeded).
    The compiler's own message is kept in `log`.
    """

    KINDS = ("toolchain", "lowering", "nvrtc", "ptxas", "resources")

    def __init__(self, kind: str, message: str, log: str = ""):
        assert kind in self.KINDS, kind
        self.kind = kind
        self.log = log or message
        super().__init__(f"{kind}: {message}")


class ResourceLimitError(CompileError):
    """A config needs more of the GPU than the target has (shared memory, threads, TMEM, ...)."""

    def __init__(self, violations: list[str], arch: str):
        self.violations = violations
        super().__init__("resources", f"exceeds {arch} limits: " + "; ".join(violations))


class LaunchError(RuntimeError):
    """A CUDA driver call failed while loading or launching an artifact."""


class LayoutError(LaunchError):
    """A tensor laid out in memory in a way its kernel cannot take, found before anything is
    launched (so the caller may retry with a contiguous copy). contiguous_only: the kernel takes
    this argument contiguous only (it reaches the buffer through a pointer, or through TMA
    descriptors that do not span it in its natural layout); else it takes strided views, but
    not these strides (a rule of TMA descriptors they break is named)."""

    def __init__(self, message: str, contiguous_only: bool):
        self.contiguous_only = contiguous_only
        super().__init__(message)
