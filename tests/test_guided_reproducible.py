"""The `guided` sampler proposes the same configs for a seed in every process: nothing that
decides a proposal may depend on PYTHONHASHSEED (the order of a set of strings, `hash()`)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Proposals of guided on gemm_sm90, cold and ranked by a model calibrated on another shape
# (study/transfer.py), with the transfer start's candidates; times: a hash-free function of
# the params, so the search leaves the model's order.
CHILD = """
import json, random
import optuna
from autotune.spaces import get_space
from autotune.spaces.sampling import uniform_legal
from autotune.study.samplers import make_sampler
from autotune.study.transfer import CalibratedModel, best_candidates

optuna.logging.set_verbosity(optuna.logging.WARNING)
space = get_space("gemm_sm90")
problem, other = space.parse_problem("1000x1024x4104"), space.parse_problem("4096x4096x4096")

def time_ms(config):
    return float(sum(v if isinstance(v, (int, float)) else len(v) for v in config.values()))

def proposals(estimate=None):
    study = optuna.create_study(sampler=make_sampler("guided", 3, space=space, problem=problem,
                                                     estimate=estimate))
    out = []
    for _ in range(12):
        trial = study.ask(space.parameters(problem))
        out.append(sorted((k, repr(v)) for k, v in trial.params.items()))
        study.tell(trial, time_ms(trial.params))
    return out

measured = uniform_legal(space, other, 40, random.Random(1)).configs
model = CalibratedModel.fit(space, [(other, measured, [time_ms(c) for c in measured])])
start = best_candidates(model, problem, [space.default_config(problem)], 4, seed=3, pool=200)
print(json.dumps({"cold": proposals(), "transfer": proposals(model.estimate_ms),
                  "start": [sorted((k, repr(v)) for k, v in c.items()) for c in start]}))
"""


def _start(hash_seed: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD], cwd=ROOT, text=True,
                            env={**os.environ, "PYTHONHASHSEED": hash_seed},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_guided_proposes_the_same_configs_whatever_the_hash_seed():
    first, second = (_result(p) for p in [_start("0"), _start("1")])  # both run at once
    assert len(first["cold"]) == len(first["transfer"]) == 12 and len(first["start"]) == 4
    assert first == second
