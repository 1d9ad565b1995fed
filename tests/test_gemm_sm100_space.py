"""The gemm_sm100 plugin without compiling: knobs, legality rules, defaults, problems."""

import pytest

from autotune.spaces.base import IllegalConfig, Problem
from autotune.spaces.gemm_sm100 import BOOK_STEP9, KNOBS, GemmSm100Space, kernel_config
from kernels.gemm.sm100 import SMEM_LIMIT, GemmConfig

SPACE = GemmSm100Space()
P4096 = SPACE.parse_problem("4096x4096x4096")


def legal(**overrides):
    return dict(SPACE.default_config(P4096), **overrides)


def test_identity():
    assert (SPACE.name, SPACE.kernel, SPACE.arch) == ("gemm_sm100", "gemm", "sm_100a")


def test_parameters_are_the_knobs_as_categoricals():
    from optuna.distributions import CategoricalDistribution

    params = SPACE.parameters(P4096)
    # every knob is compiled in (a GemmConfig field) or passed at launch, never both
    assert set(params) == set(KNOBS) == set(GemmConfig.__dataclass_fields__) | {"group_m"}
    assert SPACE.runtime_knobs == ("group_m",)
    for knob, dist in params.items():
        assert isinstance(dist, CategoricalDistribution)
        assert tuple(dist.choices) == KNOBS[knob]


@pytest.mark.parametrize("shape", ["1024x1024x1024", "2048x2048x2048", "4096x4096x4096",
                                   "8192x8192x8192", "4000x4008x4104", "2x8x8", "1x8x8",
                                   "100x1024x1000"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_default_config_is_legal_and_cited(shape, dtype):
    problem = SPACE.parse_problem(shape, dtype)
    assert SPACE.violations(SPACE.default_config(problem), problem) == []
    source = SPACE.default_source(problem)
    assert "TIRx-kernels" in source or "book" in source


def test_defaults_follow_the_cited_table():
    # TIRx-kernels GEMM_CONFIGS[4096]: cta_n=256 (pair MMA), cta_k=64, l2 group 4, 4 stages,
    # 8 epilogue chunks, two consumers.
    cfg = SPACE.default_config(P4096)
    assert cfg == dict(blk_n=128, blk_k=64, stages=4, epi_n=32, epi_ld=16, epi_stages=2,
                       cta_group=2, consumers=2, multicast=False, group_m=4)
    small = SPACE.default_config(SPACE.parse_problem("1024x1024x1024"))
    assert (small["blk_n"] * small["cta_group"], small["blk_k"], small["stages"]) == (64, 128, 5)
    # K % 64 != 0 breaks the 1024 entry's blk_k=128: the book's step-9 kernel takes over.
    odd = SPACE.parse_problem("1024x1024x1000")
    assert SPACE.default_config(odd) == BOOK_STEP9
    assert "step 9" in SPACE.default_source(odd)


def test_every_knob_value_is_legal_somewhere():
    seen = {k: set() for k in KNOBS}
    for config in SPACE.legal_configs(P4096):
        for k, v in config.items():
            seen[k].add(v)
    assert {k: tuple(sorted(v, key=KNOBS[k].index)) for k, v in seen.items()} == KNOBS


def test_legal_configs_respect_the_hardware_budgets():
    configs = list(SPACE.legal_configs(P4096))
    assert len(configs) > 1000
    for config in configs:
        r = SPACE.resources(config)
        assert r["smem_bytes"] <= SMEM_LIMIT and r["tmem_columns"] <= 512
        cfg = kernel_config(config)
        assert 16 * cfg.cta_group <= cfg.mma_n <= 256 and cfg.epi_ld <= cfg.epi_n <= 128


# (overrides of the 4096^3 default, the rule that must be named)
ILLEGAL = [
    (dict(blk_n=256, consumers=2), "TMEM"),  # 2 x 512 columns
    (dict(blk_n=256, cta_group=2), "MMA N"),  # N = 512 > 256
    (dict(blk_n=32, cta_group=1, epi_n=32, epi_stages=1), None),  # legal control: N=32, M=128
    (dict(stages=8), "shared memory"),
    (dict(epi_n=128, epi_ld=64, epi_stages=1, stages=3), "two consumers spills"),
    (dict(epi_n=128, epi_ld=32, epi_stages=1, stages=3), "use epi_ld=16 or consumers=1"),
    (dict(epi_n=128, epi_ld=16, epi_stages=1, stages=3), None),  # legal control: clean
    (dict(epi_n=128, epi_ld=64, epi_stages=1, stages=3, consumers=1), None),  # legal control
    (dict(epi_n=128, epi_stages=2, stages=4), "shared memory"),
    (dict(blk_n=64, cta_group=1, epi_n=128), "epi_n=128 must divide"),
    (dict(blk_n=96), "is not one of"),  # 96 is not a knob value
    (dict(epi_ld=64, epi_n=32), "must not exceed epi_n"),
    (dict(epi_ld=128), "is not one of"),
    (dict(multicast=True), "multicast needs cta_group=1"),
    (dict(cta_group=1, multicast=True, blk_n=32, epi_stages=1), None),  # legal control
    (dict(blk_n=192, cta_group=1, consumers=1, epi_n=64, epi_stages=2), "epi_stages=2 must divide"),
]


@pytest.mark.parametrize("overrides,rule", ILLEGAL)
def test_illegal_configs_are_refused_with_the_rule(overrides, rule):
    config = legal(**overrides)
    reasons = SPACE.violations(config, P4096)
    if rule is None:
        assert reasons == []
        return
    assert any(rule in r for r in reasons), reasons
    with pytest.raises(IllegalConfig) as exc:
        SPACE.check(config, P4096)
    assert exc.value.reasons == reasons


def test_shape_dependent_rules():
    k_odd = SPACE.parse_problem("4096x4096x4104")
    n_odd = SPACE.parse_problem("4096x4104x4096")
    assert any("K % 64" in r for r in SPACE.violations(legal(blk_k=128, stages=2), k_odd))
    assert SPACE.violations(legal(blk_k=128, stages=2), P4096) == []
    wide = legal(epi_n=128, epi_ld=16, epi_stages=1, stages=3)
    # D is stored in explicit 64-column boxes: a 128-column chunk needs no N % 64
    assert SPACE.violations(wide, n_odd) == [] and SPACE.violations(wide, P4096) == []


def test_group_m_is_a_launch_argument_not_a_compile_class():
    config = legal(group_m=16)
    assert SPACE.compile_config(config) == {k: v for k, v in config.items() if k != "group_m"}
    assert SPACE.compile_key(config) == SPACE.compile_key(legal(group_m=1))
    assert SPACE.compile_key(config) != SPACE.compile_key(legal(group_m=16, stages=3))
    assert SPACE.launch_scalars(config) == [16]
    classes = SPACE.compile_classes(P4096)
    legal_configs = list(SPACE.legal_configs(P4096))
    assert len(legal_configs) == len(KNOBS["group_m"]) * len(classes)  # group_m is never illegal
    assert all("group_m" not in c for c in classes)
    assert len({SPACE.compile_key(c) for c in classes}) == len(classes)


def test_missing_and_unknown_knobs_are_named():
    config = legal(colour="red")
    del config["stages"]
    reasons = SPACE.violations(config, P4096)
    assert "knob stages is missing" in reasons and any("colour" in r for r in reasons)


@pytest.mark.parametrize("text,dtype,message", [
    ("4096x4096", "bfloat16", "MxNxK"),
    ("4096x4100x4096", "bfloat16", "N=4100"),
    ("4096x4096x12", "bfloat16", "K=12"),
    ("0x4096x4096", "bfloat16", "M must be >= 1"),
    ("64x64x64", "float32", "float32"),
])
def test_bad_problems_are_refused_with_the_reason(text, dtype, message):
    with pytest.raises(ValueError, match=message):
        SPACE.parse_problem(text, dtype)


def test_problem_and_metrics():
    p = SPACE.parse_problem(" 4000 x 4008 X 4104 ", "float16")
    assert p == Problem.of("float16", M=4000, N=4008, K=4104)
    assert SPACE.flops(p) == 2.0 * 4000 * 4008 * 4104
    assert SPACE.bytes_moved(p) == 2.0 * (4000 * 4104 + 4008 * 4104 + 4000 * 4008)
    assert SPACE.output_indices(p) == [2]
    assert [f.rsplit("/", 1)[-1] for f in SPACE.template_files()] == ["sm100.py", "_sm100_kernel.py"]


def test_resources_match_the_formula():
    r = SPACE.resources(BOOK_STEP9)
    # book step 9: 4 stages of (2x128 + 128) x 64 bf16 + 2 consumers x 128x64 store tiles
    assert r == {"smem_bytes": 1024 + 4 * 384 * 64 * 2 + 2 * 128 * 64 * 2, "threads": 384,
                 "tmem_columns": 512, "cluster_size": 2}
