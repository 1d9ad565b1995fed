"""Conformance kit for search-space plugins. A plugin author subclasses `SpaceConformance` in a
pytest module and sets `space`:

    from autotune.testing import SpaceConformance

    class TestMySpace(SpaceConformance):
        space = MySpace()

Every test_* method then checks one part of the contract in autotune/spaces/base.py. Compiling
the default config needs TVM (skipped without it); validating it needs a GPU of the space's arch
(skipped without one) unless `evaluator` is set."""

from __future__ import annotations

import importlib.util
import math
import pickle
import random
import re
import statistics
import time

import optuna
import pytest

from ..runner.base import Candidate, Compiled, Evaluator, Job
from ..runner.compile import compile_candidate, compile_with_tirx
from ..runner.devices import gpus_for_arch
from ..spaces.base import IllegalConfig, Problem, SearchSpace
from ..spaces.registry import discover
from ..spaces.sampling import random_config


def _contains(dist: optuna.distributions.BaseDistribution, value) -> bool:
    if isinstance(dist, optuna.distributions.CategoricalDistribution):
        return value in dist.choices
    try:
        return dist._contains(dist.to_internal_repr(value))
    except (TypeError, ValueError):
        return False


class SpaceConformance:
    space: SearchSpace  # the plugin under test (an instance)
    shapes: tuple[str, ...] | None = None  # shapes to check; default: the space's default_shapes
    # (shape, words): shapes the space must refuse with a ValueError whose message matches words
    bad_shapes: tuple[tuple[str, str], ...] = ()
    registered: bool = True  # must be registered in the `autotune.spaces` entry-point group
    samples: int = 200  # random configs checked against the legality rules
    max_violations_ms: float = 5.0  # median cost of one legality check
    compiler = staticmethod(compile_with_tirx)
    evaluator: Evaluator | None = None  # None: CudaEvaluator, on a GPU of the space's arch

    def problems(self) -> list[Problem]:
        shapes = self.shapes or self.space.default_shapes
        return [self.space.parse_problem(s) for s in shapes]

    def sampled_configs(self, problem: Problem) -> list[dict]:
        rng = random.Random(0)
        params = dict(self.space.parameters(problem))
        return [random_config(params, rng) for _ in range(self.samples)]

    # -- identity ----------------------------------------------------------------------------
    def test_identity(self):
        space = self.space
        assert isinstance(space, SearchSpace)
        assert re.fullmatch(r"[a-z][a-z0-9_]*", space.name), f"name {space.name!r}"
        assert isinstance(space.kernel, str) and space.kernel
        assert re.fullmatch(r"sm_\d+a?", space.arch), f"arch {space.arch!r}"

    def test_registered(self):
        if not self.registered:
            pytest.skip("registered = False")
        plugins = discover()
        assert self.space.name in plugins, (
            f"{self.space.name!r} is not in the 'autotune.spaces' entry-point group")
        info = plugins[self.space.name]
        assert info.space_class is type(self.space), info.error or f"entry point {info.target}"

    def test_picklable(self):
        # Spaces travel to compile and GPU worker processes.
        clone = pickle.loads(pickle.dumps(self.space))
        problem = self.problems()[0]
        assert clone.default_config(problem) == self.space.default_config(problem)

    # -- problems ----------------------------------------------------------------------------
    def test_default_shapes_parse(self):
        assert self.space.default_shapes, "default_shapes is empty: `autotune tune` needs shapes"
        for problem in self.problems():
            assert isinstance(problem, Problem)
            assert problem.key and all(size > 0 for size in problem.sizes.values())

    @pytest.mark.parametrize("text", ["", "x", "banana", "0x0x0", "-1x2x3", "1.5x2x3"])
    def test_malformed_shape_is_rejected(self, text):
        with pytest.raises(ValueError):
            self.space.parse_problem(text)

    def test_bad_shapes_are_refused_by_name(self):
        if not self.bad_shapes:
            pytest.skip("no bad_shapes declared")
        for text, words in self.bad_shapes:
            with pytest.raises(ValueError, match=words):
                self.space.parse_problem(text)

    def test_counts(self):
        for problem in self.problems():
            flops, moved = self.space.flops(problem), self.space.bytes_moved(problem)
            assert flops > 0 and math.isfinite(flops), f"flops({problem.key}) = {flops}"
            assert moved >= 0 and math.isfinite(moved)
            assert 0 < self.space.tolerance(problem) < 1

    # -- the space ---------------------------------------------------------------------------
    def test_parameters_are_distributions(self):
        for problem in self.problems():
            params = self.space.parameters(problem)
            assert params, "no parameters"
            for name, dist in params.items():
                assert isinstance(dist, optuna.distributions.BaseDistribution), name

    def test_default_config_is_legal_and_in_space(self):
        for problem in self.problems():
            params = self.space.parameters(problem)
            default = self.space.default_config(problem)
            assert set(default) == set(params), \
                f"default keys {sorted(default)} != {sorted(params)}"
            for name, value in default.items():
                assert _contains(params[name], value), f"default {name}={value!r} outside the space"
            assert self.space.violations(default, problem) == [], (
                f"default config is illegal for {problem.key}")

    def test_runtime_knobs_are_knobs(self):
        runtime = self.space.runtime_knobs
        for problem in self.problems():
            missing = set(runtime) - set(self.space.parameters(problem))
            assert not missing, f"runtime knobs {sorted(missing)} are not parameters"
            default = self.space.default_config(problem)
            assert len(self.space.launch_scalars(default)) == len(runtime)
            assert not set(runtime) & set(self.space.compile_config(default))

    def test_runtime_fields_are_fields(self):
        for problem in self.problems():
            missing = set(self.space.runtime_fields) - problem.values.keys()
            assert not missing, f"runtime fields {sorted(missing)} are not fields of {problem.key}"
            shared = self.space.binary_problem(problem)
            assert shared.values.keys() == problem.values.keys() - set(self.space.runtime_fields)

    def test_violations_are_reasons(self):
        for problem in self.problems():
            legal = illegal = 0
            for config in self.sampled_configs(problem):
                reasons = self.space.violations(config, problem)
                assert isinstance(reasons, list)
                assert all(isinstance(r, str) and r.strip() for r in reasons), reasons
                if reasons:
                    illegal += 1
                    with pytest.raises(IllegalConfig):
                        self.space.check(config, problem)
                else:
                    legal += 1
                    self.space.check(config, problem)
            assert legal, f"no legal config among {self.samples} random samples for {problem.key}"

    def test_a_missing_knob_is_a_violation(self):
        for problem in self.problems():
            default = self.space.default_config(problem)
            for knob in self.space.parameters(problem):
                config = {k: v for k, v in default.items() if k != knob}
                try:
                    reasons = self.space.violations(config, problem)
                except Exception as exc:
                    raise AssertionError(f"violations() raised {type(exc).__name__}: {exc} for a "
                                         f"config without knob {knob!r}: it must name it") from exc
                assert reasons and any(knob in r for r in reasons), (
                    f"a config without knob {knob!r} is not refused by name: {reasons}")

    def test_violations_are_cheap(self):
        problem = self.problems()[0]
        costs = []
        for config in self.sampled_configs(problem)[:50]:
            start = time.perf_counter()
            self.space.violations(config, problem)
            costs.append((time.perf_counter() - start) * 1e3)
        median = statistics.median(costs)
        assert median < self.max_violations_ms, f"median {median:.2f} ms"

    # -- building ----------------------------------------------------------------------------
    def _compile_default(self, problem: Problem) -> Compiled:
        if self.compiler is compile_with_tirx and importlib.util.find_spec("tvm") is None:
            pytest.skip("compiling needs TVM (apache-tvm)")
        candidate = Candidate(self.space, self.space.default_config(problem), problem)
        outcome = compile_candidate(self.compiler, candidate)
        assert isinstance(outcome, Compiled), f"default config failed to compile: {outcome.message}"
        return outcome

    def test_default_config_compiles(self):
        self._compile_default(self.problems()[0])

    def test_default_config_validates(self):
        problem = self.problems()[0]
        evaluator = self.evaluator
        if evaluator is None:
            if not gpus_for_arch(self.space.arch):
                pytest.skip(f"no GPU of arch {self.space.arch} here")
            from ..runner.cuda_eval import CudaEvaluator

            evaluator = CudaEvaluator(window_ms=20.0)  # times, not a figure: short
            evaluator.setup(None)
        compiled = self._compile_default(problem)
        candidate = Candidate(self.space, self.space.default_config(problem), problem)
        result = evaluator.evaluate(Job(candidate, compiled, seed=1))
        assert result.ok, f"{result.cause}: {result.message}"
        assert result.timing is not None and result.timing.ms > 0

    # -- the op ------------------------------------------------------------------------------
    def test_op_declares_the_problems(self):
        op = self.space.op
        if op is None:
            pytest.skip("names no op: tunable, not dispatchable")
        assert self.space.kernel == op.name, f"kernel {self.space.kernel!r}, op {op.name!r}"
        for problem in self.problems():
            assert [name for name, _ in problem.fields] == list(op.fields), problem.key
            assert op.from_key(problem.key) == problem, f"{problem.key} does not round-trip"
