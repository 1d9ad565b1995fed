"""The sm_100a GEMM template compiles (no GPU needed) with zero spills, and the generated code
holds the machinery each config asks for.

CI compiles a deterministic pairwise-covering sample of the legal space's compile classes
(configs minus the runtime knob group_m: every value of every compiled knob, and every pair of
values that can co-occur, at least once). The full sweep of all 1,225 classes is
scripts/sweep_gemm_sm100_compile.py, whose committed record tests/test_gemm_sm100_sweep_record.py
checks.
"""

import itertools
import re

import pytest

import tirx
from kernels import registers
from autotune.spaces.gemm_sm100 import GemmSm100Space, kernel_config

SPACE = GemmSm100Space()
# M is not a multiple of any tile height: the sample also compiles the M-tail path.
PROBLEM = SPACE.parse_problem("4000x4096x4096")


def _pairs(config):
    return {((a, config[a]), (b, config[b])) for a, b in itertools.combinations(sorted(config), 2)}


def pairwise_sample(problem):
    """Greedy covering array over the compile classes: repeatedly take the first class covering
    the most uncovered value pairs. Deterministic, since compile_classes has a fixed order."""
    legal = SPACE.compile_classes(problem)
    uncovered = set().union(*(_pairs(c) for c in legal))
    chosen = []
    while uncovered:
        best = max(legal, key=lambda c: len(_pairs(c) & uncovered))
        chosen.append(best)
        uncovered -= _pairs(best)
    return chosen


SAMPLE = pairwise_sample(PROBLEM)
GROUP_M = 8  # any: the runtime knob does not change the binary


def _id(config):
    return "-".join(f"{k}{int(v) if isinstance(v, bool) else v}" for k, v in config.items())


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("artifacts")


def compile_and_check(config, problem, cache):
    """Compile one legal config and assert everything a CPU can check about it."""
    config = {"group_m": GROUP_M, **config}
    assert SPACE.violations(config, problem) == []
    cfg = kernel_config(config)
    tirx.check_resources("sm_100a", **SPACE.resources(config))
    art = tirx.build(SPACE.build(config, problem), arch="sm_100a", cache_dir=cache)
    res, launch = art.resources, art.launch
    assert (res.spill_store_bytes, res.spill_load_bytes, res.stack_frame_bytes) == (0, 0, 0)
    # ptxas honours setmaxnreg only when it knows the entry's register count (launch bounds of
    # one block per SM); ignored (C7508), it capped some configs at 64 registers and spilled.
    assert "C7508" not in art.ptxas_log
    # Every thread starts at the block's share of the register file (255 at most per thread).
    assert res.registers == min(registers.start_count(cfg.warpgroups), 255)
    # The plugin's shared-memory formula is exactly what the kernel asks for at launch.
    assert launch.dynamic_smem == cfg.smem_bytes
    assert launch.block == (cfg.threads, 1, 1)
    assert (launch.cluster or (1, 1, 1)) == (cfg.cluster, 1, 1)
    assert launch.grid[0] % cfg.cluster == 0 and launch.grid[0] <= 148
    # group_m is the kernel's launch argument: the caller's fourth, passed by value
    assert [(a.name, a.kind) for a in launch.args][3:] == [("group_m", "scalar")]
    assert [(p.arg, p.dtype) for p in launch.params if p.kind == "scalar"] == [(3, "int32")]
    check_machinery(art.source, cfg)
    return art


def check_machinery(src, cfg):
    cg = cfg.cta_group
    assert f"tcgen05.mma.cta_group::{cg}.kind::f16" in src
    assert f"tcgen05.mma.cta_group::{3 - cg}" not in src
    assert f"tcgen05.alloc.cta_group::{cg}" in src
    assert f"setmaxnreg.dec.sync.aligned.u32 {cfg.producer_regs}" in src
    assert f"setmaxnreg.inc.sync.aligned.u32 {cfg.epilogue_regs}" in src
    assert f"tcgen05.ld.sync.aligned.32x32b.x{cfg.epi_ld}.b32" in src
    assert re.search(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta", src)  # TMA store
    loads = re.findall(r'"(cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global[^ "]*)', src)
    assert loads, "no TMA loads"
    multicast_loads = [op for op in loads if "multicast::cluster" in op]
    assert bool(multicast_loads) == cfg.multicast, loads
    if cg == 2:
        assert all(op.endswith("cta_group::2") for op in loads), loads
    if cfg.cluster == 2:
        assert "barrier.cluster.arrive" in src


@pytest.mark.parametrize("config", SAMPLE, ids=[_id(c) for c in SAMPLE])
def test_pairwise_sample_compiles_without_spills(config, cache):
    compile_and_check(config, PROBLEM, cache)


def test_sample_covers_every_knob_value():
    compiled = {k: v for k, v in SPACE.knob_values(PROBLEM).items()
                if k not in SPACE.runtime_knobs}
    for knob, values in compiled.items():
        assert {c[knob] for c in SAMPLE} == set(values), knob
    assert len(SAMPLE) < 60  # keeps CI to a few minutes


def test_every_group_m_is_one_binary():
    config = SPACE.default_config(PROBLEM)
    scripts = {SPACE.build(dict(config, group_m=g), PROBLEM).script() for g in (1, 16)}
    assert len(scripts) == 1  # equal source: equal artifact cache key, compiled once


@pytest.mark.parametrize("shape", ["4000x4008x4104", "100x64x72", "2x8x8", "1x4096x4096", "1x8x8"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tails_compile_with_exact_tensor_maps(shape, dtype, cache):
    problem = SPACE.parse_problem(shape, dtype)
    art = compile_and_check(SPACE.default_config(problem), problem, cache)
    M, N, K = problem["M"], problem["N"], problem["K"]
    # TMA bounds each operand at its true extent: out-of-range loads fill zeros, stores clip.
    dims = sorted(m.global_dims[::-1] for m in art.launch.tensor_maps)  # outermost first
    assert dims == sorted([(M, K), (N, K), (M, N)])
    assert [a.shape for a in art.launch.args] == [(M, K), (N, K), (M, N), ()]


def test_wide_epilogue_chunk_stores_an_n_tail(cache):
    # D leaves in explicit 64-column boxes, so a 128-column chunk needs no N % 64.
    problem = SPACE.parse_problem("4000x4008x4096")
    config = dict(SPACE.default_config(problem), epi_n=128, epi_ld=64, consumers=1)
    art = compile_and_check(config, problem, cache)
    assert (4008, 4000) in [m.global_dims for m in art.launch.tensor_maps]
