"""An operation (GEMM, attention, ...), whatever template or arch computes it: the fields of its
problem, its inputs, reference and vendor baseline, and how it meets torch at run time (the call
-> problem binding, the launcher, the bucket rule, the custom-op schema). Every search space of
the operation names one Op (`SearchSpace.op`), so dispatch, `autotune compare` and the torch
custom op read all of this from the registered plugins, and a new operation is one module."""

from __future__ import annotations

import re
from typing import Callable, ClassVar, Hashable

from .problem import Problem, Value, dtype_tolerance
from .bucket import BucketRule

Launcher = Callable[[tuple, object], object]  # (call args, out or None) -> the result


def dtype_name(dtype) -> str:
    """A torch dtype's name as Problem.dtype spells it (torch.bfloat16 -> "bfloat16")."""
    return str(dtype).removeprefix("torch.")


def _tensor_like(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


class Op:
    """Base class of an operation. Subclasses set the class attributes and implement the
    problem and binding methods; one instance is shared by the operation's search spaces."""

    name: ClassVar[str]  # autotune.load(name), torch.ops.autotune.<name>, SearchSpace.kernel
    # The problem's fields in key order: int for a size, bool for a flag (e.g. causal).
    fields: ClassVar[dict[str, type]]
    bucket: ClassVar[BucketRule] = BucketRule()  # none: exact, then default
    # torch custom-op schema of a call, e.g. "(Tensor a, Tensor b) -> Tensor"; None: no op.
    schema: ClassVar[str | None] = None

    # -- problems -------------------------------------------------------------------------
    def problem(self, dtype: str = "bfloat16", **values: Value) -> Problem:
        """The problem with these field values; ValueError naming a missing, unknown or
        mistyped field, or a negative size."""
        missing = [f for f in self.fields if f not in values]
        unknown = sorted(set(values) - set(self.fields))
        if missing or unknown:
            raise ValueError(f"{self.name} problem: " + "; ".join(
                ([f"missing {', '.join(missing)}"] if missing else [])
                + ([f"unknown {', '.join(unknown)}"] if unknown else [])))
        out = []
        for name, kind in self.fields.items():
            value = values[name]
            if kind is bool and value in (0, 1) and not isinstance(value, float):
                value = bool(value)
            elif kind is int and isinstance(value, int) and not isinstance(value, bool):
                if value < 0:
                    raise ValueError(f"{self.name} problem: {name}={value} is negative")
            else:
                raise ValueError(f"{self.name} problem: {name}={value!r} is not "
                                 f"{'a flag' if kind is bool else 'an integer'}")
            out.append((name, value))
        return Problem(tuple(out), dtype)

    def parse(self, text: str, dtype: str = "bfloat16") -> Problem:
        """A problem from the command line. This default reads the key syntax
        ("M=64,N=128,K=256"; flags true/false; a store's key, its dtype named, too: what
        `python -m autotune.store stale` prints); operations add a shorter one."""
        if not re.fullmatch(r"\s*\w+=\w+(\s*,\s*\w+=\w+)*\s*", text or ""):
            raise ValueError(f"{self.name} shape {text!r} is not of the form "
                             + ",".join(f"{f}=..." for f in self.fields))
        key = ",".join(text.replace(" ", "").split(","))
        return self.from_key(key if "dtype=" in key else f"{key},dtype={dtype}")

    def from_key(self, key: str) -> Problem:
        """A stored problem key, checked against the fields (ValueError naming what is wrong)."""
        parsed = Problem.from_key(key)
        return self.problem(parsed.dtype, **parsed.values)

    def flops(self, problem: Problem) -> float:
        return 0.0

    def bytes_moved(self, problem: Problem) -> float:
        return 0.0

    # -- checking -------------------------------------------------------------------------
    def make_inputs(self, problem: Problem, seed: int, device: str = "cuda") -> list:
        """Fresh random torch tensors in the kernels' parameter order, outputs included."""
        raise NotImplementedError

    def output_indices(self, problem: Problem) -> list[int]:
        """Which of make_inputs' tensors the kernels write."""
        raise NotImplementedError

    def reference(self, problem: Problem, inputs: list) -> list:
        """The expected outputs, by a trusted implementation."""
        raise NotImplementedError

    def tolerance(self, problem: Problem) -> float:
        return dtype_tolerance(problem.dtype)

    def vendor(self, problem: Problem, inputs: list):
        """A zero-argument callable running the vendor baseline on make_inputs' tensors."""
        raise NotImplementedError

    def other_vendors(self, problem: Problem, inputs: list) -> dict[str, Callable]:
        """More baselines `autotune compare` times beside `vendor` (name -> zero-argument
        callable on make_inputs' tensors), e.g. attention's FlashAttention-2; none by default."""
        return {}

    # -- the torch binding ----------------------------------------------------------------
    def call_key(self, args: tuple) -> Hashable:
        """What a call's route is cached by: its tensors' shapes and dtypes, its other values."""
        return tuple((tuple(a.shape), a.dtype) if _tensor_like(a) else a for a in args)

    def call_problem(self, args: tuple) -> Problem:
        """The problem a call describes; ValueError for a call no kernel of the op can serve."""
        raise NotImplementedError

    def launcher(self, args: tuple, problem: Problem, kernel: Callable) -> Launcher:
        """Run `kernel` (a compiled kernel taking make_inputs' tensors) for calls of this key.
        Built once per call key: do here what the key fixes, in the launcher only the rest."""
        raise NotImplementedError

    def vendor_launcher(self, args: tuple, problem: Problem) -> Launcher:
        """The vendor op for calls of this key: the last resort when no kernel exists."""
        raise NotImplementedError

    def fake(self, *args):
        """The custom op's output for torch.compile's tracing: right shape and dtype, no data."""
        raise NotImplementedError
