"""The contract every search-space plugin implements.

A plugin ties one kernel template to the tuner: which knobs exist (as Optuna distributions),
which combinations are legal (checked before anything is compiled), how to build the TIRx kernel
for a config, what a correct answer looks like, and the hand-tuned fallback config.
"""

from __future__ import annotations

import abc
import itertools
import json
from typing import Any, ClassVar, Mapping

from ..ops.base import Op
from ..ops.problem import Problem, Value, dtype_tolerance  # noqa: F401  (the plugin API's names)

Config = dict[str, Any]


class IllegalConfig(ValueError):
    """A config that breaks one or more of the space's legality rules."""

    def __init__(self, reasons: list[str]):
        self.reasons = reasons
        super().__init__("; ".join(reasons))


class SearchSpace(abc.ABC):
    """Base class of a search-space plugin: one kernel template on one arch, registered under
    `name`. What the operation is (its problem's fields, inputs, reference, vendor baseline,
    torch binding) comes from the `op` it names (autotune.ops.Op), shared by every template of
    that operation; a plugin with no op defines those methods itself and cannot be dispatched."""

    name: ClassVar[str]  # registry name, e.g. "gemm_sm90"
    arch: ClassVar[str]  # "sm_90a" or "sm_100a"
    op: ClassVar[Op | None] = None  # the operation this template computes
    kernel: ClassVar[str]  # the operation's name ("gemm", "attention"): op.name when op is set
    # Shapes tuned when the command line names none, in parse_problem's syntax.
    default_shapes: ClassVar[tuple[str, ...]] = ()
    # Knobs the kernel takes at launch, as scalar parameters after make_inputs' tensors (in this
    # order), instead of compiled in: configs that differ only in them share one binary.
    runtime_knobs: ClassVar[tuple[str, ...]] = ()
    # Problem fields the binary does not depend on (dims the kernel reads off its tensors at
    # launch, e.g. attention's batch and sequence lengths): problems that differ only in them
    # share one binary. Store entries and bucket rules still key on the whole problem.
    runtime_fields: ClassVar[tuple[str, ...]] = ()
    # Knobs added after trials or recordings were made, each with the value every earlier
    # config had: readers of old trials.csv files and recordings fill it in where a row lacks it.
    added_knobs: ClassVar[Mapping[str, Any]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("op") is not None and "kernel" not in cls.__dict__:
            cls.kernel = cls.op.name

    def with_added_knobs(self, config: Config) -> Config:
        """`config` as this space reads it: a knob added after it was stored (`added_knobs`)
        and missing from it takes the value it then had."""
        return {**config, **{k: v for k, v in self.added_knobs.items() if k not in config}}

    # -- the space ------------------------------------------------------------------------
    @abc.abstractmethod
    def parameters(self, problem: Problem) -> Mapping[str, Any]:
        """Knob name -> optuna.distributions.BaseDistribution (categorical/int)."""

    @abc.abstractmethod
    def violations(self, config: Config, problem: Problem) -> list[str]:
        """Every legality rule the config breaks, each as a sentence; [] when legal.

        Must be cheap and must not compile: it runs for every suggestion."""

    def is_legal(self, config: Config, problem: Problem) -> bool | None:
        """None where the rules need TVM and it is absent (GPU machines): a kernel's presence in
        the artifact index then stands for legality, as only legal configs are built."""
        try:
            return not self.violations(config, problem)
        except ImportError:
            return None

    @abc.abstractmethod
    def default_config(self, problem: Problem) -> Config:
        """The hand-tuned fallback for this problem. Always legal."""

    def seed_configs(self, problem: Problem) -> list[Config]:
        """Legal configs worth measuring early, after the default (e.g. its neighbours that
        change one decision): a study enqueues them before its sampler proposes. Optional."""
        return []

    def ranked_seed_configs(self, problem: Problem) -> list[Config]:
        """seed_configs, best bets first: by estimate_ms where the space estimates every one
        (a stable sort: ties keep the plugin's order), else in the plugin's order. What a
        study enqueues and first use times: at 151x4544x4544 (H100) the plugin's order put the
        1.6x faster config 10th of 14 seeds, past an 8-trial study; the cost model put it first
        (studies/2026-11-24-h100-gemm-s10/)."""
        seeds = self.seed_configs(problem)
        estimates = [self.estimate_ms(c, problem) for c in seeds]
        if seeds and None not in estimates:
            seeds = [c for _, c in sorted(zip(estimates, seeds), key=lambda pair: pair[0])]
        return seeds

    def legal_variants(self, problem: Problem, base: Config,
                       variants: list[Config]) -> list[Config]:
        """`variants` that are legal and differ from `base` and from each other, in order: what
        seed_configs returns after trying its neighbours."""
        out = []
        for config in variants:
            if config != base and config not in out and not self.violations(config, problem):
                out.append(config)
        return out

    # -- problems (from the op unless overridden) -----------------------------------------
    def _op(self, method: str) -> Op:
        if self.op is None:
            raise NotImplementedError(f"{type(self).__name__} names no op: define {method}")
        return self.op

    def parse_problem(self, text: str, dtype: str = "bfloat16") -> Problem:
        """Parse a shape from the command line (e.g. "4096x4096x4096"); ValueError if malformed
        or unsupported, with a message that names the problem."""
        return self._op("parse_problem").parse(text, dtype)

    def default_problems(self, dtype: str = "bfloat16") -> list[Problem]:
        """The problems tuned by default (from `default_shapes`)."""
        return [self.parse_problem(text, dtype) for text in self.default_shapes]

    def flops(self, problem: Problem) -> float:
        """Floating-point operations of one call, for TFLOP/s reporting."""
        return self.op.flops(problem) if self.op else 0.0

    def bytes_moved(self, problem: Problem) -> float:
        """Fewest bytes one call must move through device memory."""
        return self.op.bytes_moved(problem) if self.op else 0.0

    def estimate_ms(self, config: Config, problem: Problem) -> float | None:
        """A cost model's predicted time of a legal config, for samplers that rank candidates
        before measuring them (the `guided` sampler); None: the plugin has none. Optional."""
        return None

    # -- building and checking ------------------------------------------------------------
    @abc.abstractmethod
    def build(self, config: Config, problem: Problem):
        """Return the TIRx PrimFunc for (config, problem). Called only for legal configs.

        Its parameters are make_inputs' tensors, then one scalar per runtime knob; it must not
        depend on the runtime knobs' values (callers may pass the compile_config)."""

    # -- runtime knobs --------------------------------------------------------------------
    def compile_config(self, config: Config) -> Config:
        """The config minus its runtime knobs: all that the compiled kernel depends on."""
        return {k: v for k, v in config.items() if k not in self.runtime_knobs}

    def compile_key(self, config: Config) -> str:
        """Identity of a config's binary (for one problem): equal keys, one compile."""
        return json.dumps(self.compile_config(config), sort_keys=True)

    def binary_problem(self, problem: Problem) -> Problem:
        """The problem minus its runtime fields: with compile_config, all a binary depends on."""
        if not self.runtime_fields:
            return problem
        return Problem(tuple((n, v) for n, v in problem.fields if n not in self.runtime_fields),
                       problem.dtype)

    def launch_scalars(self, config: Config) -> list:
        """What a launch passes after make_inputs' tensors: the runtime knobs' values."""
        return [config[k] for k in self.runtime_knobs]

    def make_inputs(self, problem: Problem, seed: int, device: str = "cuda") -> list:
        """Fresh random torch tensors in the kernel's parameter order, outputs included."""
        return self._op("make_inputs").make_inputs(problem, seed, device)

    def output_indices(self, problem: Problem) -> list[int]:
        """Which of make_inputs' tensors the kernel writes (poisoned before each check)."""
        return self._op("output_indices").output_indices(problem)

    def reference(self, problem: Problem, inputs: list) -> list:
        """The expected outputs (torch), computed by a trusted implementation."""
        return self._op("reference").reference(problem, inputs)

    def tolerance(self, problem: Problem) -> float:
        """Max allowed ||out - ref|| / ||ref|| per output."""
        return self.op.tolerance(problem) if self.op else dtype_tolerance(problem.dtype)

    def vendor(self, problem: Problem, inputs: list):
        """A zero-argument callable running the vendor baseline (cuBLAS/cuDNN via torch)."""
        return self._op("vendor").vendor(problem, inputs)

    # -- identity -------------------------------------------------------------------------
    def template_files(self) -> list[str]:
        """Source files whose hash identifies the template version (for cache headers)."""
        return []

    def check(self, config: Config, problem: Problem) -> None:
        """Raise IllegalConfig naming every broken rule."""
        reasons = self.violations(config, problem)
        if reasons:
            raise IllegalConfig(reasons)


class CategoricalKnobs:
    """Mixin for spaces whose knobs are each a finite list of values (`knob_values`): the Optuna
    distributions and the check that a config names every knob with an offered value."""

    def knob_values(self, problem: Problem) -> dict[str, tuple]:
        raise NotImplementedError

    def parameters(self, problem: Problem) -> Mapping[str, Any]:
        from optuna.distributions import CategoricalDistribution

        return {k: CategoricalDistribution(list(v)) for k, v in self.knob_values(problem).items()}

    def knob_violations(self, config: Config, problem: Problem) -> list[str]:
        values = self.knob_values(problem)
        out = [f"knob {knob} is missing" if knob not in config
               else f"{knob}={config[knob]!r} is not one of {allowed}"
               for knob, allowed in values.items()
               if knob not in config or config[knob] not in allowed]
        unknown = sorted(set(config) - set(values))
        if unknown:
            out.append(f"unknown knobs {unknown}")
        return out

    def legal_configs(self, problem: Problem):
        """Every legal config, in a fixed order (the space is a finite product)."""
        values = self.knob_values(problem)
        for combo in itertools.product(*values.values()):
            config = dict(zip(values, combo))
            if not self.violations(config, problem):
                yield config
