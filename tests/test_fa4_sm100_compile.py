"""The sm_100a FA4 template compiles (no GPU needed) with zero spills, for runtime sizes, and the
binary holds what each config asks for: the register budgets ptxas honoured, the launch shape,
the runtime-size tensor maps.

CI compiles the NumSim sample of tests/test_fa4_sm100_numsim.py (every value of every knob,
causal and not, MHA and GQA, both head dims); the full sweep of every legal config is
scripts/sweep_fa4_sm100_compile.py, whose committed record tests/test_fa4_sm100_sweep_record.py
checks.
"""

import re

import pytest

import tirx
from kernels.fa4 import sm100
from kernels.fa4.problem import AttentionProblem
from tests.test_fa4_sm100_numsim import CASES, _config
from tirx.symbolic import evaluate

SM_COUNT = 148


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("artifacts")


def compile_and_check(cfg, problem, cache):
    assert sm100.config_violations(cfg, problem) == []
    art = tirx.build(sm100.build(cfg, problem, sm_count=SM_COUNT), "sm_100a", cache_dir=cache)
    res, launch = art.resources, art.launch
    assert (res.spill_store_bytes, res.spill_load_bytes, res.stack_frame_bytes) == (0, 0, 0)
    # ptxas honoured the register budgets (it ignores setmaxnreg when it cannot tell the
    # entry's count: C7508; nvJitLink ignores it outright: C7504)
    assert "C7504" not in art.ptxas_log and "C7508" not in art.ptxas_log
    src = art.source
    assert f"setmaxnreg.dec.sync.aligned.u32 {sm100.ISSUE_REGS}" in src
    assert f"setmaxnreg.inc.sync.aligned.u32 {cfg.softmax_regs}" in src
    assert launch.dynamic_smem == cfg.smem_bytes(problem.head_dim)
    assert launch.block == (cfg.threads, 1, 1)
    assert launch.grid == (SM_COUNT, 1, 1)  # persistent CTAs: a static grid for any size
    assert [(a.name, a.shape) for a in launch.args] == [
        ("Q", ("B", "SQ", problem.heads_q, problem.head_dim)),
        ("K", ("B", "SK", problem.heads_kv, problem.head_dim)),
        ("V", ("B", "SK", problem.heads_kv, problem.head_dim)),
        ("O", ("B", "SQ", problem.heads_q, problem.head_dim)),
        ("LSE", ("B", problem.heads_q, "SQ")), ("rescale_threshold", ())]
    assert "tcgen05.mma.cta_group::1.kind::f16" in src
    assert bool(re.search(r"\d+ < 16 - 2 \*|ex2\.approx", src))
    return art


@pytest.mark.parametrize("case", CASES)
def test_sample_compiles_without_spills(case, cache):
    _, problem, _, _ = CASES[case]
    compile_and_check(_config(case), problem, cache)


def test_one_binary_serves_every_size_and_threshold(cache):
    problem = AttentionProblem(128, 8, 2, causal=True)
    art = compile_and_check(sm100.default_config(problem), problem, cache)

    class T:  # what the launcher reads off a caller's tensor
        def __init__(self, *shape):
            self.shape = shape

    for batch, sq, sk in [(1, 1, 1), (3, 1000, 4097)]:
        args = (T(batch, sq, 8, 128), T(batch, sk, 2, 128), T(batch, sk, 2, 128),
                T(batch, sq, 8, 128), T(batch, 8, sq), 8)
        dims = sorted(tuple(evaluate(x, args) for x in m.global_dims[::-1])
                      for m in art.launch.tensor_maps)
        # TMA bounds each tensor at its true extent: out-of-range rows load zeros, stores clip
        assert (batch, sq, 8, 128) in dims and (batch, sk, 2, 128) in dims
    scalar, = [p for p in art.launch.params if p.kind == "scalar" and p.expr is None]
    assert (scalar.arg, scalar.dtype) == (5, "int32")  # the rescale threshold, at launch
