"""Build, on a machine with TVM, every kernel a GPU machine's dispatcher will ask for: per
shape the config the dispatcher would pick (from each GPU model's store) and the default (which
`autotune compare` times too), and with `first_use` the configs first-use tuning would time
there. The artifact directory then travels to the GPU machine."""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor

from ..spaces.base import Problem, SearchSpace
from ..store import ConfigStore, Gpu, expected_header, mismatches
from .artifacts import ArtifactIndex, config_id
from .first_use import SOURCE, candidates
from .load import build_with_tirx, valid_entries
from .rules import Selector


def usable_entries(space: SearchSpace, store: ConfigStore) -> dict:
    """The store's entries if it was measured for this space and template (any GPU)."""
    expected = expected_header(space, Gpu(space.arch, store.header.device))
    reasons = mismatches(store.header, expected)
    if reasons:
        raise ValueError(f"store for {store.header.device} does not fit {space.name}: "
                         + "; ".join(reasons))
    return valid_entries(space, store.entries)


def compile_into_cache(job) -> str:
    """A worker's share of a warm-up: compile (space, problem, compile config) into tirx's disk
    cache; "" or what failed. Prebuild leaves failures to its indexing pass, which meets them
    again and logs them."""
    space, problem, config = job
    try:
        build_with_tirx(space, problem, config, None)
        return ""
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:300]}"


def prebuild(space: SearchSpace, stores: list[ConfigStore], problems: list[Problem],
             index: ArtifactIndex, *, with_stored: bool = True, first_use: int = 0,
             build=build_with_tirx, log=print, procs: int = 1) -> int:
    """Build what is missing; returns how many builds failed (each is logged). With `procs` > 1
    the missing kernels first compile in that many processes into tirx's disk cache; indexing
    them, one at a time (the index is one file), then finds them there."""
    selectors = [Selector(usable_entries(space, s), space.op.bucket, space.default_config)
                 for s in stores] or [Selector({}, space.op.bucket, space.default_config)]
    wanted: dict[tuple[str, str], tuple] = {}
    for selector in selectors:
        todo = list(problems)
        if with_stored:
            todo += [selector.problems[k] for k in sorted(selector.problems)]
        for problem in todo:
            choices = selector.choices(problem)
            chosen = next((c for c in choices if space.is_legal(c.config, problem)), None)
            # the pick and the default; and for a shape no store holds, first use's configs
            roles = [(c.reason, c.config) for c in filter(None, (chosen, choices[-1]))]
            if problem.key not in selector.entries:
                roles += [(SOURCE, c) for c in candidates(space, selector, problem, first_use)]
            for role, config in roles:
                compiled = space.compile_config(config)  # one binary per compile class
                binary = space.binary_problem(problem)  # one binary per runtime-field class
                wanted.setdefault((binary.key, config_id(compiled)), (problem, role, compiled))
    missing = [(space, problem, compiled) for problem, _, compiled in wanted.values()
               if index.lookup(space, space.binary_problem(problem), compiled) is None]
    if procs > 1 and build is build_with_tirx and len(missing) > 1:
        workers = min(procs, len(missing))
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
            list(pool.map(compile_into_cache, missing))
    failures = 0
    for n, (problem, role, compiled) in enumerate(wanted.values(), 1):
        tag = f"[{n}/{len(wanted)}] {problem.key} {role} {config_id(compiled)}"
        if index.lookup(space, space.binary_problem(problem), compiled) is not None:
            log(f"{tag}: present")
            continue
        try:
            build(space, problem, compiled, index)
            log(f"{tag}: built")
        except Exception as exc:  # report and go on: the dispatcher falls back for this shape
            failures += 1
            log(f"{tag}: FAILED {type(exc).__name__}: {str(exc)[:300]}")
    return failures

