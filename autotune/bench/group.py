"""The GPU side of `autotune bench`: one shape's validated kernels and its vendor baseline,
timed over the same rotated input sets in interleaved rounds (each round in a rotated order, so
clock and temperature drift hit all alike), with both timers. Runs in an isolated worker."""

from __future__ import annotations

import dataclasses
import statistics

from ..runner.cuda_eval import CudaEvaluator, rotated_sets
from ..runner.timing import interleaved, time_cold, time_launches

VENDOR = "vendor"


@dataclasses.dataclass(frozen=True)
class GroupJob:
    space: object
    problem: object
    kernels: list  # (name, config, artifact directory)
    rounds: int
    seed: int = 1000


class GroupTimer(CudaEvaluator):
    """Times a GroupJob: {name: {"ms": median over rounds of the cold timer's median,
    "b2b_ms": the same of the back-to-back timer, "ms_rounds": the cold medians per round}}."""

    def evaluate(self, job: GroupJob) -> dict:
        import tirx

        space, problem = job.space, job.problem
        sets = rotated_sets(space.make_inputs(problem, seed=job.seed, device="cuda"))
        calls = {VENDOR: [space.vendor(problem, s) for s in sets]}
        for name, config, path in job.kernels:
            kernel = tirx.Kernel(tirx.Artifact.load(path))
            scalars = space.launch_scalars(config)
            calls[name] = [lambda s=s, k=kernel, sc=scalars: k(*s, *sc) for s in sets]

        def both_timers(name):
            def launch(i):
                calls[name][i]()

            return (time_cold(launch, len(sets)).median_ms,
                    time_launches(launch, len(sets)).median_ms)

        per_round = interleaved({n: (lambda n=n: both_timers(n)) for n in calls}, job.rounds)
        return {n: {"ms": statistics.median(c for c, _ in rs),
                    "b2b_ms": statistics.median(b for _, b in rs),
                    "ms_rounds": [c for c, _ in rs]} for n, rs in per_round.items()}
