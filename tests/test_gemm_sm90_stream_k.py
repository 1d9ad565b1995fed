"""Stream-K in the Hopper GEMM: its schedule, legality, default rule and kernel."""

import pytest

from autotune.spaces.gemm_sm90 import GemmSm90Space, kernel_config
from kernels.gemm._sm90_config import GemmConfig, geometry, stream_k_split

SPACE = GemmSm90Space()


def test_stream_k_takes_clusters_a_pair_sharing_each_tile():
    # 3100x8192x22016 in 2x1 clusters of 128x256 tiles: 13 x 32 = 416 cluster tiles on 66
    # clusters (132 SMs): 5 waves whole, 86 cluster tiles' 344 K tiles shared by 66 clusters
    problem = SPACE.parse_problem("3100x8192x22016")
    config = {**SPACE.default_config(problem), "consumers": 2, "blk_n": 256, "stages": 4,
              "persistent": True, "cluster": "2x1", "stream_k": True}
    assert SPACE.violations(config, problem) == []
    g = geometry(3100, 8192, 22016, kernel_config(config))
    assert (g.total, g.clusters, g.grid) == (416, 66, 132)
    assert stream_k_split(g) == (5 * 66, 86 * 344)


@pytest.mark.parametrize("shape, tiles, whole, shared", [
    # 400 tiles of 128x256 on 132 SMs: 2 waves whole, 136 tiles (280 K tiles each) shared
    ("2500x5120x17920", 400, 264, 136 * 280),
    # under one wave nothing runs whole: 100 tiles' 216 K tiles are shared by 132 CTAs
    ("600x5120x13824", 100, 0, 100 * 216),
])
def test_stream_k_runs_all_but_the_last_full_wave_whole(shape, tiles, whole, shared):
    M, N, K = (int(x) for x in shape.split("x"))
    g = geometry(M, N, K, GemmConfig(blk_n=256, stream_k=True))
    assert (g.total, g.clusters) == (tiles, 132)
    assert stream_k_split(g) == (whole, shared)
    share = shared / g.clusters
    assert share >= 1 if whole else share < 216  # 1-2 tiles of work, or under one tile


@pytest.mark.parametrize("change, rule", [
    ({"persistent": False}, "needs persistent=True"),
    ({"split_k": 2, "persistent": True, "epilogue": "reg"}, "needs split_k=1"),
])
def test_stream_k_refuses_what_it_cannot_run_with_the_rule(change, rule):
    problem = SPACE.parse_problem("600x5120x13824")
    config = {**SPACE.default_config(problem), "stream_k": True, **change}
    assert any(rule in v for v in SPACE.violations(config, problem))


@pytest.mark.parametrize("shape", ["2500x5120x17920", "600x5120x13824", "1200x2304x5760",
                                   "333x18432x2304", "512x4096x4096", "700x6144x16384",
                                   "160x9216x8192", "4096x4096x4096", "16x4096x4096"])
def test_no_default_or_seed_takes_stream_k(shape):
    # measured 1.2-2.5x slower than the tiled configs wherever a rule gave it (H100, session 4)
    problem = SPACE.parse_problem(shape)
    assert not SPACE.default_config(problem)["stream_k"]
    assert not any(c["stream_k"] for c in SPACE.seed_configs(problem))


@pytest.mark.parametrize("shape", ["600x5120x13824", "512x4096x4096", "160x9216x8192"])
def test_the_cost_model_ranks_stream_k_behind_its_tiled_twin(shape):
    """Measured 1.2-2.5x slower everywhere: a guided search must not spend trials on it first."""
    problem = SPACE.parse_problem(shape)
    tiled = {**SPACE.default_config(problem), "persistent": True, "cluster": "1x1", "split_k": 1}
    assert SPACE.violations({**tiled, "stream_k": True}, problem) == []
    ratio = (SPACE.estimate_ms({**tiled, "stream_k": True}, problem)
             / SPACE.estimate_ms(tiled, problem))
    assert ratio == pytest.approx(1.2)


@pytest.mark.slow
def test_stream_k_kernel_compiles_without_spills_and_owns_its_scratch():
    import tirx

    problem = SPACE.parse_problem("600x5120x13824")
    config = {**SPACE.default_config(problem), "blk_n": 256, "stages": 4, "stream_k": True}
    assert SPACE.violations(config, problem) == []
    art = tirx.build(SPACE.build(config, problem), SPACE.arch)
    assert art.resources.spill_bytes == 0 and art.resources.stack_frame_bytes == 0
    cfg = kernel_config(config)
    # partials (CTA, consumer, accumulator, thread) and one flag per CTA and consumer: the
    # launcher supplies both, the caller passes A, B, D
    assert [(a.name, a.kind, a.shape) for a in art.launch.args][3:] == [
        ("scratch_partials", "scratch", (132, 2, 128, 128)),
        ("scratch_flags", "scratch", (132 * cfg.consumers,))]


def test_the_caller_passes_no_scratch_buffer():
    from tirx.artifact import ArgSpec, LaunchSpec
    from tirx.errors import LaunchError
    from tirx.launch import check_args

    spec = LaunchSpec(symbol="k", args=(ArgSpec("A", (4,), "float32"),
                                        ArgSpec("scratch_flags", (8,), "int32", "scratch")),
                      params=(), tensor_maps=(), grid=(1, 1, 1), block=(32, 1, 1), cluster=None,
                      dynamic_smem=0)
    check_args(spec, [0x1000])  # a raw device pointer for A; the scratch buffer is the kernel's
    with pytest.raises(LaunchError, match=r"takes 1 arguments \(A\), got 2"):
        check_args(spec, [0x1000, 0x2000])
