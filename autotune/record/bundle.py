"""A recording split across two machines, for GPU machines that lack TVM and Optuna (ours): the
plan is drawn and compiled here into a bundle (`jobs.jsonl` + the cubins), a GPU machine
measures it with torch and cuda-bindings alone (record/measure.py), and the measurements come
back to be read into a Recording (record/ingest.py).

The plan per shape: the default and the space's seeds (what a study starts from), every legal
one-knob change of the given centres (the best configs known, e.g. from an earlier sweep: a
dense neighbourhood of the top), then a uniform sample of the legal space in drawn order (so a
bundle cut short by the compile budget still holds a uniform prefix). Compiling is resumable:
each job is appended to `jobs.jsonl` when compiled, and a rerun skips the jobs there."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import multiprocessing
import random
import shutil
import tarfile
from pathlib import Path

from ..runner.builders import CompileService
from ..runner.compile import Compiler, compile_with_tirx
from ..runner.base import Candidate, Result
from ..spaces.base import Config, Problem, SearchSpace
from ..spaces.sampling import config_key, neighbours, uniform_legal

JOBS, HEADER = "jobs.jsonl", "bundle.json"
DEFAULT, SEED, UNIFORM = "default", "seed", "uniform"  # where a job comes from
ARTIFACTS = "a"
# what tirx.Artifact.load reads (the ptxas log stays here: the bundle travels)
ARTIFACT_FILES = ("kernel.cubin", "artifact.json", "kernel.cu")


def neighbourhood_source(i: int) -> str:
    return f"neighbourhood-{i}"


def sample_rng(seed: int, problem: Problem) -> random.Random:
    """The uniform sample's draws: per shape, the same on every resume."""
    return random.Random(f"{seed}|{problem.key}")


def start_configs(space: SearchSpace, problem: Problem, fixed: Config) -> list[tuple[str, Config]]:
    """The default and the space's seeds (fixed knobs pinned; legal ones): what a study
    measures first, so a recording holds what a tuner starts from."""
    out = [(DEFAULT, {**space.default_config(problem), **fixed})]
    out += [(SEED, {**c, **fixed}) for c in space.seed_configs(problem)]
    return [(s, c) for s, c in out if not space.violations(c, problem)]


def plan(space: SearchSpace, problem: Problem, sample: int, seed: int = 0,
         centres: list[Config] = (), fixed: Config | None = None, start: bool = True,
         retime: list[tuple[str, Config]] = ()) -> tuple[list[tuple[str, Config]], dict]:
    """(source, config) for one shape: start configs (`start`), configs recorded before to be
    measured again (`retime`, their sources kept), the centres' neighbourhoods, then the
    uniform sample, each config once (its first source); and what the plan is, for the header
    (the legal space's size as the sample's acceptance rate estimates it). Without the start
    configs, a plan adds to a recording that holds them."""
    fixed = dict(fixed or {})
    jobs = start_configs(space, problem, fixed) if start else []
    jobs += [(s, c) for s, c in ((s, {**c, **fixed}) for s, c in retime)
             if not space.violations(c, problem)]
    centres = [{**c, **fixed} for c in centres]
    for i, centre in enumerate(centres):
        jobs += [(neighbourhood_source(i + 1), c)
                 for c in [centre, *neighbours(space, problem, centre, fixed)]
                 if not space.violations(c, problem)]
    drawn = uniform_legal(space, problem, sample, sample_rng(seed, problem), fixed)
    jobs += [(UNIFORM, c) for c in drawn.configs]
    seen, out = set(), []
    for source, config in jobs:
        if config_key(config) not in seen:
            seen.add(config_key(config))
            out.append((source, config))
    estimate, margin = drawn.legal_estimate
    info = {"legal_space": f"~{estimate:,} +- {margin:,} (estimated: {drawn.legal_draws:,} legal "
                           f"of {drawn.draws:,} uniform draws from {drawn.product:,} knob "
                           "combinations)",
            "plan": {"sample": sample, "seed": seed, "fixed": fixed, "centres": centres,
                     "start": start, "retimed": len(retime),
                     "legal_estimate": estimate, "legal_margin": margin}}
    return out, info


def write_header(folder: str | Path, space: SearchSpace, problems: dict[str, dict],
                 command: str) -> None:
    """bundle.json: the plan per shape, the template's hash and the compiling toolchain."""
    import importlib.metadata

    from ..store.compat import template_hash

    try:
        versions = {"tvm": importlib.metadata.version("apache-tvm")}
    except importlib.metadata.PackageNotFoundError:  # TVM staged without its metadata
        import tvm

        versions = {"tvm": tvm.__version__}
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / HEADER).write_text(json.dumps(
        {"space": space.name, "target": f"{type(space).__module__}:{type(space).__name__}",
         "template": template_hash(space), "versions": versions,
         "command": command, "problems": problems}, indent=1, default=str) + "\n")


def read_jobs(folder: str | Path) -> list[dict]:
    path = Path(folder) / JOBS
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def job_id(problem: Problem, config: Config) -> str:
    return json.dumps([problem.key, sorted(config.items())], default=str)


def compile_bundle(space: SearchSpace, jobs: list[tuple[Problem, str, Config]], folder: str | Path,
                   cache_dir: str | None = None, progress=None,
                   compiler: Compiler = compile_with_tirx, processes: int = 1) -> Path:
    """Compile every (problem, source, config) into `folder` (resumable), over `processes`
    spawned worker processes (compiles are independent: a 16-core GPU machine compiles a
    recording's bundles 16 at a time); a failed compile is a job with its cause, measured as
    that failure."""
    folder = Path(folder)
    (folder / ARTIFACTS).mkdir(parents=True, exist_ok=True)
    done = {j["id"] for j in read_jobs(folder)}
    todo = [(problem, source, config) for problem, source, config in jobs
            if job_id(problem, config) not in done]
    service = CompileService(compiler, cache_dir)
    candidates = [(Candidate(space, config, problem), False) for problem, _, config in todo]
    with concurrent.futures.ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn")) if processes > 1 \
            else contextlib.nullcontext() as pool, open(folder / JOBS, "a") as out:
        outcomes = pool.map(service, candidates) if pool else map(service, candidates)
        for (problem, source, config), compiled in zip(todo, outcomes):
            job = {"id": job_id(problem, config), "space": space.name, "problem": problem.key,
                   "source": source, "config": config}
            if isinstance(compiled, Result):  # the compile failed: its cause is the row
                job["cause"], job["error"] = compiled.cause.value, compiled.message
            else:
                src = Path(compiled.artifact_path)
                dst = folder / ARTIFACTS / src.name
                if not dst.exists():
                    dst.mkdir()
                    for name in ARTIFACT_FILES:
                        shutil.copy(src / name, dst / name)
                job["artifact"] = f"{ARTIFACTS}/{src.name}"
                job["scalars"] = space.launch_scalars(config)  # what a launch passes
                job["resources"] = compiled.resources
            out.write(json.dumps(job, default=str) + "\n")
            out.flush()
            if progress:
                progress(job)
    return folder


def pack(folder: str | Path, archive: str | Path) -> Path:
    """The bundle as one tar.xz (cubins compress ~5x: what travels is limited)."""
    folder, archive = Path(folder), Path(archive)
    with tarfile.open(archive, "w:xz") as tar:
        for name in (HEADER, JOBS, ARTIFACTS):
            tar.add(folder / name, arcname=name)
    return archive

