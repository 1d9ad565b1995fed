"""A synthetic search space that runs on a CPU, for testing the tuner without TVM or a GPU.

Its "kernel" is a numpy matmul with tile-size knobs and a known, deterministic time model, so a
search must find `known_best`. Faults are injected per config (a partial config matches every
config containing it): hang, crash, cuda_error, wrong, unwritten, compile, resources,
compile_hang."""

from __future__ import annotations

import itertools
import math
import os
import signal
import time

import numpy as np
import optuna

from ..runner.base import Candidate, Cause, Compiled, Evaluator, Job, Result, Timing
from ..runner.cuda_eval import cause_of_exception
from ..runner.validate import check_outputs, poison
from ..spaces.base import Config, Problem, SearchSpace

SMEM_LIMIT = 96 * 1024
FAULTS = ("hang", "crash", "cuda_error", "wrong", "unwritten", "compile", "resources",
          "compile_hang")


class SyntheticCompileError(RuntimeError):
    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


class SyntheticSpace(SearchSpace):
    name = "synthetic"
    kernel = "gemm"
    arch = "sm_90a"
    default_shapes = ("64x48x32",)
    VENDOR_MS = 1.1  # the vendor op's model time: a few configs beat it

    def __init__(self, faults: dict[str, list[Config]] | None = None):
        unknown = set(faults or {}) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {FAULTS}")
        self.faults = {k: [dict(c) for c in v] for k, v in (faults or {}).items()}

    def fault(self, config: Config) -> str | None:
        for kind, partials in self.faults.items():
            if any(all(config.get(k) == v for k, v in p.items()) for p in partials):
                return kind
        return None

    # -- the space --------------------------------------------------------------------------
    def parameters(self, problem):
        return {
            "block_m": optuna.distributions.CategoricalDistribution([16, 32, 64, 128]),
            "block_n": optuna.distributions.CategoricalDistribution([16, 32, 64, 128]),
            "stages": optuna.distributions.IntDistribution(1, 4),
        }

    def smem_bytes(self, config: Config) -> int:
        return (config["block_m"] + config["block_n"]) * 64 * 2 * config["stages"]

    def violations(self, config, problem):
        missing = [k for k in self.parameters(problem) if k not in config]
        if missing:
            return [f"knob {k} is missing" for k in missing]
        reasons = []
        if self.smem_bytes(config) > SMEM_LIMIT:
            reasons.append(f"shared memory {self.smem_bytes(config)} B exceeds {SMEM_LIMIT} B")
        if config["block_m"] > problem["M"]:
            reasons.append(f"block_m={config['block_m']} exceeds M={problem['M']}")
        return reasons

    def default_config(self, problem):
        return {"block_m": 16, "block_n": 16, "stages": 2}

    def parse_problem(self, text, dtype="float32"):
        parts = text.lower().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise ValueError(f"malformed shape {text!r}: expected MxNxK, e.g. 64x48x32")
        m, n, k = map(int, parts)
        return Problem.of(dtype, M=m, N=n, K=k)

    def flops(self, problem):
        return 2.0 * problem["M"] * problem["N"] * problem["K"]

    def bytes_moved(self, problem):
        return 4.0 * (problem["M"] * problem["K"] + problem["K"] * problem["N"]
                      + problem["M"] * problem["N"])

    # -- the "kernel" -----------------------------------------------------------------------
    def model_time_ms(self, config: Config) -> float:
        """The time model: best at block_m=64, block_n=32, stages=3."""
        lm, ln = math.log2(config["block_m"]), math.log2(config["block_n"])
        return (1.0 + 0.3 * (lm - 6) ** 2 + 0.2 * (ln - 5) ** 2
                + 0.15 * (config["stages"] - 3) ** 2 + 0.05 * (lm - ln - 1) ** 2)

    def build(self, config, problem):
        return SyntheticKernel(self.fault(config))

    def make_inputs(self, problem, seed, device="cpu"):
        rng = np.random.default_rng(seed)
        m, n, k = problem["M"], problem["N"], problem["K"]
        return [rng.standard_normal((m, k), dtype=np.float32),
                rng.standard_normal((k, n), dtype=np.float32), np.zeros((m, n), np.float32)]

    def output_indices(self, problem):
        return [2]

    def reference(self, problem, inputs):
        return [inputs[0] @ inputs[1]]

    def tolerance(self, problem):
        return 1e-5

    def vendor(self, problem, inputs):
        a, b, c = inputs

        def run():
            c[...] = a @ b

        return run


    # -- a recorded table and its answer ----------------------------------------------------
    def legal_configs(self, problem: Problem) -> list[Config]:
        params = self.parameters(problem)
        choices = {k: (d.choices if hasattr(d, "choices") else range(d.low, d.high + 1, d.step))
                   for k, d in params.items()}
        configs = [dict(zip(choices, values)) for values in itertools.product(*choices.values())]
        return [c for c in configs if not self.violations(c, problem)]

    def recorded_frame(self, problem: Problem):
        """Every legal config with its model time, or its fault as the cause (a RecordedTable)."""
        import pandas as pd

        rows = []
        for c in self.legal_configs(problem):
            fault = self.fault(c)
            cause = _FAULT_CAUSE[fault].value if fault else None
            rows.append({**c, "time_ms": None if fault else self.model_time_ms(c), "cause": cause})
        rows.append({"time_ms": self.VENDOR_MS, "vendor": True})
        return pd.DataFrame(rows, dtype=object)  # the vendor row's empty knobs stay apart

    def known_best(self, problem: Problem) -> Config:
        return min((c for c in self.legal_configs(problem) if not self.fault(c)),
                   key=self.model_time_ms)


_FAULT_CAUSE = {"hang": Cause.TIMEOUT, "crash": Cause.CRASH, "cuda_error": Cause.CUDA_ERROR,
                "wrong": Cause.VALIDATION, "unwritten": Cause.VALIDATION, "compile": Cause.COMPILE,
                "resources": Cause.RESOURCES, "compile_hang": Cause.TIMEOUT}


class SyntheticKernel:
    def __init__(self, fault: str | None):
        self.fault = fault

    def __call__(self, a, b, c):
        if self.fault == "cuda_error":
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        if self.fault == "unwritten":
            c[: c.shape[0] // 2] = (a @ b)[: c.shape[0] // 2]  # forgets the second half
            return
        c[...] = a @ b + (0.5 if self.fault == "wrong" else 0.0)


def stub_compile(space: SyntheticSpace, config: Config, problem: Problem,
                 cache_dir: str | None = None) -> Compiled:
    """Stands in for compile_with_tirx: no TVM, a resource report from the model."""
    fault = space.fault(config)
    if fault == "compile_hang":
        time.sleep(3600)  # a compiler stuck in lowering
    if fault == "compile":
        raise SyntheticCompileError("nvrtc", "error: identifier \"wgmma_fake\" is undefined")
    if fault == "resources":
        raise SyntheticCompileError("resources", "registers 300 exceed the limit of 255")
    return Compiled(None, {"registers": 96, "spill_bytes": 0,
                           "smem_bytes": space.smem_bytes(config)})


class SyntheticEvaluator(Evaluator):
    """Validates the synthetic kernel on the CPU (poisoned outputs, relative error) and reports
    the model time; hangs or dies for the matching faults, like a bad GPU kernel would."""

    def evaluate(self, job: Job) -> Result:
        space, problem, config = job.candidate.space, job.candidate.problem, job.candidate.config
        vendor = job.candidate.vendor
        tag, fault = job.candidate.tag, None if vendor else space.fault(config)
        if fault == "hang":
            time.sleep(3600)
        if fault == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        try:
            inputs = space.make_inputs(problem, job.seed)
            references = space.reference(problem, inputs)
            outputs = [inputs[i] for i in space.output_indices(problem)]
            poison(outputs)
            if vendor:
                space.vendor(problem, inputs)()
            else:
                space.build(config, problem)(*inputs)
        except Exception as exc:
            cause, fatal = cause_of_exception(exc)
            return Result(tag, cause, f"{type(exc).__name__}: {exc}", fatal=fatal)
        errors, message = check_outputs(outputs, references, space.tolerance(problem))
        if message:
            return Result(tag, Cause.VALIDATION, message, rel_errors=errors)
        t = space.VENDOR_MS if vendor else space.model_time_ms(config)
        return Result(tag, timing=Timing(t, t, t, rounds=1, iters_per_round=1, input_sets=1),
                      rel_errors=errors)


def simulated_validate(space: SyntheticSpace, config: Config, problem: Problem, seed: int):
    """Stands in for a space's NumSim validation (autotune.runner.numsim): the synthetic kernel,
    faults included, judged as a tirx.numsim.Verdict; an error it raises is raised here."""
    from tirx.numsim import Verdict

    result = SyntheticEvaluator().evaluate(Job(Candidate(space, config, problem), Compiled(None),
                                               seed))
    if result.rel_errors is None:
        raise RuntimeError(result.message)
    return Verdict(error=max(result.rel_errors), tolerance=space.tolerance(problem))
