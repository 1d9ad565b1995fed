"""Clusters of four in the Hopper GEMM (multicast=4): how the knob maps onto the template, its
legality, the persistent grid of co-resident clusters, how configs stored before the knob keep
their names, and its kernel."""

import pytest

from autotune.dispatch.load import valid_entries
from autotune.spaces.gemm_sm90 import GemmSm90Space, kernel_config
from autotune.store.format import Entry, config_id
from kernels.gemm._sm90_config import CO_RESIDENT_CLUSTERS, geometry, multicast_slices

SPACE = GemmSm90Space()
PROBLEM = SPACE.parse_problem("185x2048x5504")  # cuBLAS: 64x64 tiles in clusters of 4 (H200)


def _config(**change):
    return {**SPACE.default_config(PROBLEM), **change}


@pytest.mark.parametrize("cluster, multicast, dims", [
    ("1x1", 2, (1, 1)), ("2x1", 2, (2, 1)), ("1x2", 2, (1, 2)),
    ("2x1", 4, (4, 1)), ("1x2", 4, (1, 4)),
])
def test_multicast_sets_how_many_ctas_the_cluster_axis_holds(cluster, multicast, dims):
    cfg = kernel_config(_config(cluster=cluster, multicast=multicast))
    assert (cfg.cluster_m, cfg.cluster_n) == dims
    assert cfg.cluster_size == cfg.multicast_size == dims[0] * dims[1]


@pytest.mark.parametrize("change, rule", [
    ({"cluster": "1x1"}, "needs cluster='2x1' or '1x2'"),
    ({"cluster": "2x1", "blk_n": 16, "swap_ab": True}, "BLK_N=16 has fewer than 4"),
    ({"cluster": "1x2", "persistent": True, "stream_k": True}, "needs multicast=2"),
])
def test_clusters_of_four_refuse_what_they_cannot_run_with_the_rule(change, rule):
    assert SPACE.violations(_config(cluster="1x2", multicast=4), PROBLEM) == []
    assert any(rule in v for v in SPACE.violations(_config(multicast=4, **change), PROBLEM))


@pytest.mark.parametrize("rows, ctas, slices", [
    (64, 4, [16, 16, 16, 16]), (80, 4, [24, 24, 16, 16]), (112, 4, [32, 32, 24, 24]),
    (144, 4, [40, 40, 32, 32]), (96, 2, [48, 48]), (208, 4, [56, 56, 48, 48]),
])
def test_multicast_slices_cover_the_tile_in_whole_swizzle_atoms(rows, ctas, slices):
    big, small, bigs = multicast_slices(rows, ctas)
    assert [big if rank < bigs else small for rank in range(ctas)] == slices
    assert sum(slices) == rows and all(s % 8 == 0 for s in slices)


def test_a_tile_of_fewer_atoms_than_ctas_is_not_sliced():
    with pytest.raises(AssertionError, match="16 rows do not split into 4"):
        multicast_slices(16, 4)
    assert SPACE.violations(_config(cluster="2x1", multicast=4, blk_n=32, swap_ab=True),
                            PROBLEM) == []


def test_a_persistent_grid_of_fours_holds_only_the_clusters_that_run_at_once():
    # an H200 runs 30 clusters of four (its GPCs leave 12 SMs out), not 132 / 4 = 33
    big = SPACE.parse_problem("4096x4096x4096")
    cfg = kernel_config({**SPACE.default_config(big), "cluster": "2x1", "multicast": 4})
    g = geometry(4096, 4096, 4096, cfg)
    assert CO_RESIDENT_CLUSTERS[4] == 30
    assert (g.clusters, g.grid) == (30, 120)
    pair = kernel_config({**SPACE.default_config(big), "cluster": "2x1"})
    assert geometry(4096, 4096, 4096, pair).grid == 132  # pairs fill every SM


def test_a_config_stored_before_the_knob_keeps_its_id_and_reads_as_pairs():
    paired = _config(cluster="1x2")
    stored = {k: v for k, v in paired.items() if k != "multicast"}
    assert config_id(stored) == config_id(paired) != config_id({**paired, "multicast": 4})
    entry = Entry(problem=PROBLEM.key, config=stored, time_ms=0.016,
                  measured={config_id(stored): 0.016})
    [read] = valid_entries(SPACE, {PROBLEM.key: entry}).values()
    assert read.config == paired and read.config["multicast"] == 2


def test_cluster_of_four_kernel_releases_each_stage_to_all_four_producers():
    import tirx

    config = _config(cluster="1x2", multicast=4)
    art = tirx.build(SPACE.build(config, PROBLEM), SPACE.arch)
    assert art.resources.spill_bytes == 0 and art.resources.stack_frame_bytes == 0
    assert art.launch.cluster == (4, 1, 1) and art.launch.grid == (96, 1, 1)
    # two release sites (in the K loop, after the last K tile), where warps 1-3 arrive
    # remotely on one peer's empty barrier each: its address mapped once, before the K loop,
    # and stepped by the stage (8 bytes a barrier), no mapa per K tile
    source = art.path.joinpath("kernel.cu").read_text()
    body = source[source.index("extern \"C\" __global__"):]
    assert body.count("mapa_u32_shared__cluster_u32(") == 1
    assert "^ (warp_id_in_cta & 3)" in body.split("mapa_u32_shared__cluster_u32(")[1][:200]
    arrives = body.split("mbarrier_arrive_nocount_arrive_shared__cluster_b64(")[1:]
    assert len(arrives) == 2 and all(a.startswith("(_ptr[0] + ") for a in arrives)
    # each CTA loads a quarter of the A tile for all four CTAs: cta_mask 0b1111
    assert "multicast__cluster_L2__cache_hint(" in source and "(ushort)15" in source


def test_uneven_quarters_load_in_two_boxes_that_tile_the_shared_tile():
    """cuBLAS's fours at few-tile skinny shapes take the activation tile's width from M (64x72
    at 200x2048x5632, 64x112 at 107x5120x3072, 128x144 at 144x14336x2560); 80 rows are 10
    swizzle atoms: ranks 0-1 load 24 rows, ranks 2-3 16, through two tensor maps."""
    import json

    import tirx

    problem = SPACE.parse_problem("200x2048x5632")
    config = {**SPACE.default_config(problem), "blk_n": 80, "cluster": "2x1", "multicast": 4,
              "swap_ab": True, "wg_m": 64, "consumers": 1}
    assert SPACE.violations(config, problem) == []
    art = tirx.build(SPACE.build(config, problem), SPACE.arch)
    assert art.resources.spill_bytes == 0 and art.resources.stack_frame_bytes == 0
    assert art.launch.cluster == (4, 1, 1) and art.launch.grid == (96, 1, 1)
    maps = json.loads(art.path.joinpath("artifact.json").read_text())["launch"]["tensor_maps"]
    activations = sorted(m["box_dims"][1] for m in maps if m["global_dims"] == [5632, 200])
    assert activations == [16, 24]
    source = art.path.joinpath("kernel.cu").read_text()
    assert source.count("multicast__cluster_L2__cache_hint(tvm_builtin") == 2
    assert "(((int)blockIdx.x) & 3) < 2)" in source
