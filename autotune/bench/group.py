"""The GPU side of `autotune bench`: one shape's validated kernels and its vendor baseline,
timed with the tuner's protocol (runner/protocol.py) over the same input sets in interleaved
rounds (each round in a rotated order, so clock and temperature drift hit all alike). Runs in
an isolated worker."""

from __future__ import annotations

import dataclasses
import statistics

from ..runner.cuda_eval import CudaEvaluator
from ..runner.protocol import input_sets, time_on_sets
from ..runner.timing import interleaved

VENDOR = "vendor"


@dataclasses.dataclass(frozen=True)
class GroupJob:
    space: object
    problem: object
    kernels: list  # (name, config, artifact directory)
    rounds: int
    seed: int = 1000


class GroupTimer(CudaEvaluator):
    """Times a GroupJob: {name: {"ms": median over rounds, "ms_rounds": each round's}}."""

    def evaluate(self, job: GroupJob) -> dict:
        import tirx

        space, problem = job.space, job.problem
        sets = input_sets(space.make_inputs(problem, seed=job.seed, device="cuda"))
        binders = {VENDOR: lambda s: space.vendor(problem, s)}
        for name, config, path in job.kernels:
            kernel = tirx.Kernel(tirx.Artifact.load(path))
            scalars = space.launch_scalars(config)
            binders[name] = lambda s, k=kernel, sc=scalars: lambda: k(*s, *sc)
        per_round = interleaved({n: (lambda b=b: time_on_sets(b, sets).ms)
                                 for n, b in binders.items()}, job.rounds)
        return {n: {"ms": statistics.median(rs), "ms_rounds": rs} for n, rs in per_round.items()}
