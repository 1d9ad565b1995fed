"""The Hopper GEMM plugin and template on a CPU-only machine: legality, defaults, refusals, and
that legal configs compile for sm_90a with zero spills and the Hopper machinery in the source."""

from __future__ import annotations

import itertools
import random

import pytest
from optuna.distributions import CategoricalDistribution

from autotune.spaces import gemm_sm90
from autotune.spaces.base import IllegalConfig
from autotune.spaces.gemm_sm90 import KNOBS, SUITE, GemmSm90Space, kernel_config
from autotune.spaces.sampling import legal_draws, random_config
from kernels.gemm._sm90_config import CO_RESIDENT_CLUSTERS
from kernels.gemm.sm90 import _tile_coords, accumulator_regs, geometry, smem_bytes

SPACE = GemmSm90Space()
BIG = SPACE.parse_problem("4096x4096x4096")
SKINNY = SPACE.parse_problem("16x4096x4096")


def test_registered_identity():
    assert (SPACE.name, SPACE.arch, SPACE.kernel) == ("gemm_sm90", "sm_90a", "gemm")
    assert len(SUITE) == 23 and SPACE.default_problems()[0].sizes == {"M": 2048, "N": 2048,
                                                                       "K": 2048}


def test_template_hash_covers_every_file_the_kernel_is_built_from():
    # geometry, shared-memory layout and epilogue chunking live in _sm90_config.py: a change
    # there must make stored configs stale like a change to the kernel body
    names = [f.rsplit("/", 1)[-1] for f in SPACE.template_files()]
    assert names == ["sm90.py", "_sm90_wgmma.py", "_sm90_config.py"]


def test_parameters_are_categoricals_over_every_knob():
    params = SPACE.parameters(BIG)
    assert set(params) == set(KNOBS)
    # swap-AB at every M: cuBLAS's kernels put the weights on the wgmma M side at every shape
    assert set(params["swap_ab"].choices) == {False, True}


@pytest.mark.parametrize("shape", SUITE + ("1x4096x4096", "77x1024x1000", "1000x520x136"))
def test_default_is_legal_for_every_shape_class(shape):
    problem = SPACE.parse_problem(shape)
    assert SPACE.violations(SPACE.default_config(problem), problem) == []


def test_unsupported_dtype_is_refused():
    with pytest.raises(ValueError, match="float32"):
        SPACE.parse_problem("128x128x128", dtype="float32")


def _config(**kw):
    return {**SPACE.default_config(BIG), **kw}


@pytest.mark.parametrize("overrides, reason", [
    (dict(stages=5, blk_n=256, epilogue="tma"), "shared memory"),
    (dict(wg_m=128, consumers=2, blk_n=256, stages=2, epilogue="reg"), "accumulator registers"),
    (dict(wg_m=128, consumers=1, blk_n=256, stages=2, epilogue="reg"), "accumulator registers"),
    (dict(wg_m=128, consumers=2, blk_n=96, stages=3, epilogue="reg"), "register epilogue"),
    (dict(stages=9), "stages=9 is not one of"),
    (dict(blk_n=264), "blk_n=264 is not one of"),
    (dict(blk_n=400), "blk_n=400 is not one of"),
    (dict(blk_n=384, stages=4), "shared memory"),
    (dict(consumers=3, blk_n=288, stages=2), "accumulator registers"),
    (dict(wg_m=128, consumers=1, blk_n=288, stages=2), "accumulator registers"),
    (dict(cluster="2x2"), "cluster='2x2' is not one of"),
    (dict(split_k=3), "split_k=3 is not one of"),
    (dict(unknown=2), "unknown knobs"),
    (dict(split_k=2), "needs persistent=False"),
    (dict(split_k=2, cluster="2x1"), "needs cluster='1x1'"),
    (dict(split_k=2), "needs epilogue='reg'"),
    (dict(split_k=2, blk_n=224, persistent=False, epilogue="reg"), "the reduction would spill"),
    (dict(stream_k=True, swap_ab=True, blk_n=224, stages=2, epilogue="reg"), "fix-up"),
    (dict(stream_k=True, consumers=3, blk_n=160, stages=2, epilogue="reg"), "fix-up"),
    (dict(stream_k=True, blk_n=304, stages=2, epilogue="reg"), "fix-up"),
    (dict(stream_k=True, consumers=1, blk_n=384, stages=3, epilogue="reg"), "fix-up"),
    (dict(stream_k=True, consumers=1, swap_ab=True, blk_n=384, stages=3, epilogue="reg"),
     "fix-up"),
    (dict(split_k=8, consumers=3, blk_n=192, stages=2, persistent=False, cluster="1x1",
          epilogue="reg"), "the reduction would spill"),
    (dict(split_k=4, swap_ab=True, wg_m=128, blk_n=64, stages=3, persistent=False,
          cluster="1x1", epilogue="reg"), "the reduction would spill"),
])
def test_illegal_configs_name_the_broken_rule(overrides, reason):
    config = _config(**overrides)
    assert any(reason in v for v in SPACE.violations(config, BIG))
    with pytest.raises(IllegalConfig):
        SPACE.check(config, BIG)


def test_every_split_k_rank_stores_whole_accumulator_pairs():
    # The template stores accumulators in (col, col+1) pairs and gives each split-K rank an
    # equal share: a tile width that does not split evenly is refused by name (16 columns of
    # one m64 atom, 8 accumulators, cannot be shared by 8 ranks), never compiled.
    refused = set()
    for wg_m, blk_n, split_k in itertools.product(KNOBS["wg_m"], KNOBS["blk_n"], KNOBS["split_k"]):
        config = _config(wg_m=wg_m, blk_n=blk_n, split_k=split_k, consumers=1, persistent=False,
                         epilogue="reg", stages=2)
        acc = accumulator_regs(kernel_config(config))
        named = any("equal shares" in v for v in SPACE.violations(config, BIG))
        assert named == (acc % (2 * split_k) != 0), (wg_m, blk_n, split_k)
        if named:
            refused.add((wg_m, blk_n, split_k))
    assert (64, 16, 8) in refused and (64, 32, 8) not in refused
    # every multiple of 16 splits 2 and 4 ways; an odd multiple of 8 in one atom only 2 ways
    assert not {r for r in refused if r[2] < 8 and r[1] % 16 == 0}
    assert (64, 88, 4) in refused and (64, 88, 2) not in refused and (128, 88, 4) not in refused


def test_split_k_needs_a_k_tile_per_rank_and_counts_its_partials_in_smem():
    short_k = SPACE.parse_problem("128x4096x192")  # 3 K tiles of 64
    config = {**SPACE.default_config(short_k), "split_k": 4, "persistent": False,
              "epilogue": "reg"}
    assert any("split_k=4 > 3 K tiles" in v for v in SPACE.violations(config, short_k))
    assert SPACE.violations({**config, "split_k": 2}, short_k) == []
    # 2 consumers x 128 accumulators x 128 threads x 4 B = 128 KiB of partials over a 96 KiB ring
    c = kernel_config(_config(blk_n=256, stages=2, persistent=False, epilogue="reg", split_k=2))
    assert smem_bytes(c) == 1024 + 2 * 128 * 128 * 4


def test_swap_ab_takes_either_epilogue_at_any_m():
    # the TMA-store epilogue stages D^T's tile transposed (stmatrix.trans): legal both ways
    for problem in (SKINNY, BIG):
        for epilogue in ("tma", "reg"):
            config = _config(swap_ab=True, epilogue=epilogue, blk_n=208, stages=4)
            assert SPACE.violations(config, problem) == [], (problem, epilogue)


def test_missing_knob_is_illegal():
    config = _config()
    del config["stages"]
    assert "knob stages is missing" in SPACE.violations(config, BIG)


def test_smem_rule_matches_the_template_formula():
    # legal draws from the whole space (enumerating its ~4.4M configs takes over 15 minutes)
    drawn = legal_draws(SPACE, BIG, random.Random(0), 1000, attempts=150)
    assert len(drawn) == 1000
    for config in drawn:
        assert smem_bytes(kernel_config(config)) <= 232448


@pytest.mark.parametrize("rows, cols, cfg", [
    (1000, 3000, dict(raster="m", group=4)), (1000, 3000, dict(raster="n", group=8)),
    (4096, 4096, dict(raster="m", group=16, cluster_m=2)), (77, 520, dict(raster="n", group=1)),
])
def test_grouped_raster_visits_every_cluster_tile_once(rows, cols, cfg):
    from kernels.gemm.sm90 import GemmConfig

    c = GemmConfig(**cfg)
    g = geometry(rows, cols, 64, c)
    seen = {tuple(int(x) for x in _tile_coords(t, g, c)) for t in range(g.total)}
    assert seen == set(itertools.product(range(g.cluster_tiles_m), range(g.cluster_tiles_n)))


def covering_sample(seed: int = 0, per_shape: int = 7) -> list[tuple]:
    """Legal (problem, config) pairs drawn until every value of every knob appears."""
    rng = random.Random(seed)
    shapes = ("16x4096x4096", "1000x1024x4104", "4096x4096x4096")
    unseen = {(k, v) for k, vals in KNOBS.items() for v in vals}
    out = []
    for text in shapes:
        problem = SPACE.parse_problem(text)
        for _ in range(per_shape):
            pool = legal_draws(SPACE, problem, rng, 64)  # drawn: enumerating takes minutes
            best = max(pool, key=lambda c: len(set(c.items()) & unseen))
            unseen -= set(best.items())
            out.append((problem, best))
    for knob, value in sorted(unseen, key=str):  # rare values (stages=16): drawn with it pinned
        pinned = {**SPACE.parameters(problem), knob: CategoricalDistribution([value])}
        draws = (random_config(pinned, rng) for _ in range(20000))
        config = next((c for c in draws if not SPACE.violations(c, problem)), None)
        if config is not None:
            unseen -= set(config.items())
            out.append((problem, config))
    assert not unseen, f"the sample misses {sorted(unseen, key=str)}"
    return out


def _compile_and_check(problem, config, tmp_path):
    import tirx

    art = tirx.build(SPACE.build(config, problem), SPACE.arch, cache_dir=tmp_path)
    res = art.resources
    assert res.spill_bytes == 0 and res.stack_frame_bytes == 0, (
        problem.key, sorted(config.items()), res)
    assert res.smem_bytes <= 232448
    assert res.dynamic_smem_bytes == smem_bytes(kernel_config(config))  # the plugin's formula
    for needle in ("wgmma.mma_async", "setmaxnreg", "cp.async.bulk.tensor", "mbarrier"):
        assert needle in art.source, needle
    c = kernel_config(config)
    assert art.launch.cluster == (None if c.cluster_size == 1 else (c.cluster_size, 1, 1))
    if c.split_k > 1:  # one tile per cluster of split_k CTAs, partials read through DSMEM
        assert art.launch.grid[0] % c.split_k == 0
        assert "mapa.u64" in art.source and "barrier.cluster.wait.acquire" in art.source
    assert art.launch.block == ((c.consumers + 1) * 128, 1, 1)
    # evict-first operand loads carry an L2 cache policy; with "normal" no load does
    assert ("L2::cache_hint" in art.source) == (c.l2_evict == "first")
    # the TMA-store epilogue stages the tile with stmatrix; the register epilogue has none
    assert ("stmatrix.sync.aligned.m8n8.x4" in art.source) == (c.epilogue == "tma")
    # swapped, the accumulators hold D^T: the staging writes each 8x8 matrix transposed
    assert ("m8n8.x4.trans" in art.source) == (c.epilogue == "tma" and c.swap_ab)


@pytest.mark.parametrize("problem, config", covering_sample(),
                         ids=lambda x: getattr(x, "key", None) or "")
def test_legal_config_compiles_without_spills(problem, config, tmp_path):
    _compile_and_check(problem, config, tmp_path)


@pytest.mark.parametrize("shape, overrides", [
    # two 64-column TMA boxes per chunk (wg_m=128), weights paired along M (1x2)
    ("695x2048x10944", dict(wg_m=128, consumers=1, blk_n=96, stages=6, cluster="1x2",
                            persistent=False)),
    # three consumers, 64-row chunks of a ragged M
    ("3093x21888x2048", dict(wg_m=64, consumers=3, blk_n=192, stages=3)),
])
def test_swapped_tma_epilogue_compiles_without_spills(shape, overrides, tmp_path):
    problem = SPACE.parse_problem(shape)
    config = {**SPACE.default_config(problem), **overrides, "swap_ab": True, "epilogue": "tma"}
    assert SPACE.violations(config, problem) == []
    _compile_and_check(problem, config, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_larger_legal_sample_compiles_without_spills(seed, tmp_path):
    for problem, config in covering_sample(seed=100 + seed, per_shape=8):
        _compile_and_check(problem, config, tmp_path)


@pytest.mark.parametrize("shape, overrides, wgmma", [
    # cuBLAS's tile at this shape: two wgmmas of 152 per atom, 16-column epilogue chunks
    ("5966x1600x6400", dict(swap_ab=True, blk_n=304, stages=4), "m64n152k16"),
    # the widest, with the register epilogue, multicast halves of 192 rows in a 2x1 pair
    ("3164x1536x6144", dict(blk_n=384, stages=3, epilogue="reg", cluster="2x1"), "m64n192k16"),
])
def test_tiles_wider_than_256_issue_two_wgmmas_per_atom(shape, overrides, wgmma, tmp_path):
    problem = SPACE.parse_problem(shape)
    config = {**SPACE.default_config(problem), "wg_m": 64, "consumers": 2, **overrides}
    assert SPACE.violations(config, problem) == []
    _compile_and_check(problem, config, tmp_path)
    import tirx

    source = tirx.build(SPACE.build(config, problem), SPACE.arch, cache_dir=tmp_path).source
    assert wgmma in source and "m64n256k16" not in source


def test_seeds_offer_wide_tiles_where_they_take_fewer_waves_x_width():
    wide = [(c["swap_ab"], c["blk_n"]) for c in
            SPACE.seed_configs(SPACE.parse_problem("5966x1600x6400")) if c["blk_n"] > 256]
    # 47 x 5 tiles of 128x320 and, swapped, 13 x 19 of 128x320 in 2 waves; 128x256 take 3
    assert wide == [(False, 320), (True, 320)]
    assert not [c for c in SPACE.seed_configs(SPACE.parse_problem("4096x4096x4096"))
                if c["blk_n"] > 256]


def test_illegal_config_is_refused_before_compiling(monkeypatch):
    """The plugin's check is what stands between the tuner and the compiler."""
    import kernels.gemm.sm90 as template

    monkeypatch.setattr(template, "build_gemm", lambda *a, **k: pytest.fail("compiled"))
    with pytest.raises(IllegalConfig):
        SPACE.check(_config(stages=5, epilogue="tma"), BIG)


@pytest.mark.parametrize("N, K", [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336),
                                  (1024, 1000), (520, 136), (8, 8)])
def test_default_is_legal_for_every_m(N, K):
    # The fallback must always be runnable: every M from decode sizes to large prefill.
    space = GemmSm90Space()
    for M in [*range(1, 140), 255, 256, 512, 1000, 1024, 1025, 2048, 8192]:
        problem = space.parse_problem(f"{M}x{N}x{K}")
        assert space.violations(space.default_config(problem), problem) == [], (M, N, K)


@pytest.mark.parametrize("shape", ["16x4096x4096", "77x1024x1000", "128x6144x4096",
                                   "128x4096x4096", "512x4096x4096", "4096x4096x4096"])
def test_seed_configs_are_legal_neighbours_of_the_default(shape):
    problem = SPACE.parse_problem(shape)
    default, seeds = SPACE.default_config(problem), SPACE.seed_configs(problem)
    assert len(seeds) >= 5 and default not in seeds
    assert len({tuple(sorted(c.items())) for c in seeds}) == len(seeds)
    for config in seeds:
        assert SPACE.violations(config, problem) == [], config
    # the L2 policy the default does not use is always measured
    assert {c["l2_evict"] for c in seeds} - {default["l2_evict"]}


@pytest.mark.parametrize("shape", ["217x3840x15360", "300x1024x8192", "500x5120x4096"])
def test_medium_seeds_pair_two_swapped_tiles_over_all_of_m(shape):
    # each weight tile loaded once for all of M: a 1x2 pair of swapped tiles spanning M
    problem = SPACE.parse_problem(shape)
    M = problem["M"]
    paired = [c for c in SPACE.seed_configs(problem) if c["swap_ab"] and c["cluster"] == "1x2"
              and c["blk_n"] < M <= 2 * c["blk_n"] < M + 32]
    # the medium rule's pair (reg epilogue), and where M's two columns fit one wave the
    # cuBLAS-layout seed's (TMA store; _vendor_layouts)
    assert 1 <= len(paired) <= 2 and len({c["epilogue"] for c in paired}) == len(paired), paired


def test_large_seeds_include_swapped_192_row_tiles():
    problem = SPACE.parse_problem("3000x20000x2048")
    assert any(c["swap_ab"] and c["consumers"] == 3 and c["blk_n"] == 192
               for c in SPACE.seed_configs(problem))


@pytest.mark.parametrize("shape, tiles, ranked", [
    # cuBLAS's tiles there (nvjet, H200): 256x160 in 4 whole waves; 128x232 in 3
    ("5266x4096x1408", [(128, 160, 4), (64, 160, 5)], [0, 15]),
    # behind the cuBLAS-layout seed the model ranks first there (256x184, _vendor_layouts)
    ("2533x4608x1152", [(128, 192, 3), (64, 240, 4)], [2, 3]),
])
def test_large_seeds_take_cublas_orientation_in_whole_waves(shape, tiles, ranked):
    """Swapped tiles of 256 and 128 weight rows (wg_m, BLK_N, stages), at the places the cost
    model ranks them among the seeds (a study of 8 trials runs the first 7)."""
    problem = SPACE.parse_problem(shape)
    order = SPACE.ranked_seed_configs(problem)
    for (wg_m, blk_n, stages), place in zip(tiles, ranked):
        fit = [i for i, c in enumerate(order) if c["swap_ab"] and c["consumers"] == 2
               and c["wg_m"] == wg_m and c["blk_n"] == blk_n and c["cluster"] == "1x1"]
        assert fit == [place] and order[place]["stages"] == stages, order


@pytest.mark.parametrize("shape, blk_n, split", [
    ("72x1536x12288", 80, 4), ("80x5120x5120", 80, 1), ("82x3072x23040", 96, 2),
    ("96x4096x14336", 96, 1), ("65x8448x3072", 80, 1), ("68x4096x2560", 80, 1),
    ("89x1024x5120", 96, 4), ("70x1536x7168", 80, 4), ("94x8448x2048", 96, 1),
    # declined: too few CTAs with K under 4096 to split, or even split 4 ways; M > 96; more
    # than one wave of tiles (8512 / 64 = 133 > 132 SMs)
    ("96x2560x2560", None, None), ("67x256x1152", None, None), ("72x512x4608", None, None),
    ("100x8192x4096", None, None), ("73x21504x3072", None, None), ("80x8512x4096", None, None)])
def test_skinny_default_swaps_64_row_tiles_covering_m_up_to_96(shape, blk_n, split):
    problem = SPACE.parse_problem(shape)
    config = SPACE.default_config(problem)
    if blk_n is None:
        assert not config["swap_ab"]
        return
    assert (config["swap_ab"], config["wg_m"], config["consumers"]) == (True, 64, 1)
    assert (config["blk_n"], config["split_k"], config["epilogue"]) == (blk_n, split, "reg")
    ctas = -(-problem["N"] // 64) * split
    # the smallest split that fills 64 CTAs, and K split only where it is >= 4096
    assert ctas >= 64 and (split == 1 or ctas // 2 < 64 and problem["K"] >= 4096)
    assert -(-problem["N"] // 64) <= 132  # one wave


@pytest.mark.parametrize("shape", ["112x1024x16384", "120x2048x8192", "70x1536x7168"])
def test_skinny_seeds_offer_swapped_tiles_covering_m_with_k_split(shape):
    # where the default keeps 64-row tiles: 112x1024x16384 swapped and split 4 ran 1.33x it
    problem = SPACE.parse_problem(shape)
    cover = 16 * -(-problem["M"] // 16)
    splits = {c["split_k"] for c in SPACE.seed_configs(problem)
              if c["swap_ab"] and c["consumers"] == 1 and c["blk_n"] == cover}
    assert {1, 2, 4} <= splits


@pytest.mark.parametrize("shape, blk_n", [("128x6144x4096", 96), ("96x2560x2560", 64),
                                          ("128x4096x4096", 64), ("128x28672x4096", 256)])
def test_skinny_default_takes_64_row_tiles_of_one_consumer_filling_one_wave(shape, blk_n):
    problem = SPACE.parse_problem(shape)
    config = SPACE.default_config(problem)
    assert (config["swap_ab"], config["wg_m"], config["consumers"]) == (False, 64, 1)
    assert (config["blk_n"], config["epilogue"], config["split_k"]) == (blk_n, "tma", 1)
    grid = geometry(problem["M"], problem["N"], problem["K"], kernel_config(config)).grid
    # one wave where BLK_N <= 256 allows it (28672 columns need two)
    assert grid <= 132 or blk_n == 256


@pytest.mark.parametrize("shape, split", [("128x1024x4096", 2), ("192x1536x2048", 1),
                                          ("256x1000x4096", 1), ("256x2048x8192", 1),
                                          ("2048x512x4096", 1)])
def test_few_tile_default_takes_64_row_tiles_of_one_consumer(shape, split):
    # where the shape-class rules would leave most SMs idle (small N), narrower tiles and,
    # under 48 of them, split-K fill at least 48 SMs
    problem = SPACE.parse_problem(shape)
    config = SPACE.default_config(problem)
    assert (config["wg_m"], config["consumers"], config["split_k"]) == (64, 1, split)
    assert config["epilogue"] == ("tma" if split == 1 else "reg") and config["blk_n"] >= 64
    assert geometry(problem["M"], problem["N"], problem["K"], kernel_config(config)).grid >= 48


@pytest.mark.parametrize("shape, blk_n", [
    # list s22's exact widths (H100, held busy: 1.17-1.36x the 128x128 default): the narrowest
    # that divides N; 746x1344 takes 192 (84 CTAs), 128 would pad the last column (132)
    ("1779x640x20480", 160), ("695x1408x18432", 128), ("746x1344x11008", 192),
    ("2816x320x16384", 160),
    # M <= 320, where 128-row tiles pad M more, with no more CTAs (list s22c: 1.43x, 1.54x)
    ("264x4352x16384", 256), ("270x4608x11008", 192),
    # declined: no width divides N in one wave (544 = 17 x 32; 1024: 128 takes 152 CTAs, 256 no
    # more than the default's 80), too few more CTAs (64x256: 96 against 96), K under 8192,
    # SMs already busy (4096x640: 128x160 tiles fill 128)
    ("2106x544x24576", None), ("1200x1024x8192", None), ("3072x512x12288", None),
    ("1779x640x4096", None), ("4096x640x16384", None),
    # M = 374 (64-row tiles pad no less: 0.98x), 64x256 tiles in two waves at 272x8192 (0.87x)
    ("374x3328x8192", None), ("272x8192x8192", None)])
def test_few_tile_long_k_default_takes_64_row_tiles_only_of_a_width_dividing_n(shape, blk_n):
    problem = SPACE.parse_problem(shape)
    config = SPACE.default_config(problem)
    narrow = (config["wg_m"], config["consumers"], config["persistent"]) == (64, 1, False)
    if blk_n is None:
        assert not narrow
        return
    assert narrow and (config["blk_n"], config["split_k"]) == (blk_n, 1)
    assert problem["N"] % blk_n == 0
    grid = geometry(problem["M"], problem["N"], problem["K"], kernel_config(config)).grid
    assert grid <= 132


@pytest.mark.parametrize("shape, split", [("64x768x4096", 4), ("16x1024x4096", 4),
                                          ("48x1280x2560", 4), ("8x520x4096", 4),
                                          ("1x2048x2048", 1), ("1x4096x4096", 1)])
def test_decode_default_splits_k_only_under_24_weight_tiles(shape, split):
    # split-K until >= 48 CTAs stream B, at most 4 ways (8 was slower where measured)
    problem = SPACE.parse_problem(shape)
    config = SPACE.default_config(problem)
    assert config["swap_ab"] and config["split_k"] == split


def _before_rows_256(shape: str, monkeypatch) -> dict:
    """The default as the rules before ROWS_256 take it (the 128-row width and 192-row
    decisions these tests are about; where ROWS_256 holds, their 128x256 becomes 256x192)."""
    with monkeypatch.context() as m:
        m.setattr(gemm_sm90, "ROWS_256_MIN_N", 1 << 30)
        return SPACE.default_config(SPACE.parse_problem(shape))


def test_large_default_narrows_tiles_that_fill_one_wave_badly(monkeypatch):
    # 4096x640: 96 tiles of 128x256 in one wave of 132 SMs, 5/6 of their columns inside N;
    # 128 tiles of 128x160 fill the wave and N. Shapes of many waves keep 256.
    narrow = SPACE.default_config(SPACE.parse_problem("4096x640x2048"))
    assert (narrow["blk_n"], narrow["cluster"], narrow["persistent"]) == (160, "1x1", True)
    for shape in ("4096x4096x4096", "8192x8192x8192", "2048x2048x2048"):
        assert _before_rows_256(shape, monkeypatch)["blk_n"] == 256


@pytest.mark.parametrize("shape, rows_256", [
    # list s49 (unseen, H200, held busy): 1.017-1.077x the 128x256 default at 8 of 8
    ("6962x154112x6144", True), ("5389x36864x2048", True), ("8192x8192x8192", True),
    ("4096x28672x4096", True),
    # N or K under the rule's bounds, or rules before it that take other tiles: unchanged
    ("4096x4096x4096", False), ("8192x6144x1024", False), ("2500x5120x17920", False),
    ("1100x45056x8192", True), ("4096x640x2048", False), ("1024x28672x4096", False)])
def test_large_default_takes_256x192_tiles_in_place_of_128x256_where_n_and_k_are_large(
        shape, rows_256, monkeypatch):
    problem = SPACE.parse_problem(shape)
    before, config = _before_rows_256(shape, monkeypatch), SPACE.default_config(problem)
    if not rows_256:
        assert config == before
        return
    assert (before["wg_m"], before["consumers"], before["blk_n"]) == (64, 2, 256)
    assert config == {**before, "wg_m": 128, "blk_n": 192, "stages": 3}
    assert SPACE.violations(config, problem) == []
    # the 128-row tile it replaced, and the neighbours measured around it, stay seeds
    seeds = SPACE.seed_configs(problem)
    assert before in seeds and SPACE._deepest(problem, {**before, "cluster": "2x1"}) in seeds
    assert any(kernel_config(c).blk_m == 192 and not c["swap_ab"] for c in seeds)


@pytest.mark.parametrize("shape, blk_n", [
    # 200 cluster tiles of 128x256 on 66 clusters: 4 waves, the last with 2 tiles; 230 of
    # 128x224 take 4 waves too, every one nearly full (-12.5% waves x BLK_N; H100: 0.763 vs
    # 0.838 ms, studies/2026-11-23-h100-gemm-s5/); 3 waves of 192x192 cut the area by only 3.6%
    ("2500x5120x17920", 224),
    # 26 x 12 = 312 tiles of 128x256: 3 waves, the last with 48; 26 x 14 = 364 of 128x224 take
    # 3 waves too (-12.5%; H100: 1.021x the 256-wide default); 192-row tiles: more area
    ("3300x3072x3072", 224),
    # 7 waves of 256 against 9 of 192: -3.6%, under the rule's 5%; 5 of 128x320: -10.7%
    ("3100x8192x22016", 320),
    # 5 waves of 128x320 against 7 of 128x256 (-10.7%; held busy 1.062x, s14/power3)
    ("4510x5760x2304", 320),
    # 4 waves of 128x224 (-12.5% from 256's) against 3 of 128x288 (-3.6% more): 224 stays
    ("3295x4096x7168", 224),
    # 16 waves of 256 against 18 of 224, 21 of 192 and 15 of 192x192 (more area): 256 stays
    ("8192x8192x8192", 256),
])
def test_large_default_of_many_waves_narrows_only_for_a_mostly_idle_last_wave(
        shape, blk_n, monkeypatch):
    config = _before_rows_256(shape, monkeypatch)
    assert (config["consumers"], config["blk_n"], config["cluster"], config["persistent"]) == (
        2, blk_n, "1x1", True)


@pytest.mark.parametrize("shape, rows, blk_n, cluster", [
    # 8 x 16 = 128 tiles of 192x192 in one wave won 1.08x over 240 of 128x160 in two (H100, 9
    # rounds, twice); 12 x 11 = 132 of 128x288 take one wave of the same area: 128 rows stay
    ("1500x3072x4096", 128, 288, "1x1"),
    # 9 rows of 128x256 tiles alone take 12 full waves; 11 of 192x192 are 3% more area (in 2x1
    # pairs of 10 rows, 128x256 took 14 waves and 192x192 won 1.14x)
    ("1100x45056x8192", 128, 256, "1x1"),
    # 14 waves of 128x256 alone (11 rows) against 12 of 192x192: 3.6% less area, under 8%
    ("1300x43008x14336", 128, 256, "1x1"),
    # 15 rows: 3 waves of 128x160 take less waves x width than 2 of 128x256; 192x160 no less
    ("1800x4096x11008", 128, 160, "1x1"),
    # 12 rows of swapped 128x288 tiles, one wave (132 tiles): the fewest waves x width
    ("3164x1536x6144", 128, 288, "1x1"),
    # 192x128 tiles are not offered: 20% more shared-memory reads per FLOP (0.85x)
    ("2500x27392x4096", 128, 256, "1x1"),
    # 4 waves of 192x192 are 12.5% more area than 4 of 128x256 (0.95x)
    ("4096x4096x4096", 128, 256, "1x1"),
    ("3100x8192x22016", 128, 320, "1x1"),
])
def test_large_default_takes_192_row_tiles_only_for_a_clear_cut_in_waves_x_area(
        shape, rows, blk_n, cluster, monkeypatch):
    # H100 figures: 192-row tile / the 128-row default, studies/2026-11-23-h100-gemm-s7/
    problem = SPACE.parse_problem(shape)
    config = _before_rows_256(shape, monkeypatch)
    assert (config["consumers"] * config["wg_m"], config["blk_n"]) == (rows, blk_n)
    assert config["cluster"] == cluster and SPACE.violations(config, problem) == []


@pytest.mark.parametrize("shape, tile", [
    # cuBLAS's tile: 107 swapped tiles of 192x160, one wave (held busy 1.17x the 128x320 one)
    ("152x20480x7168", (192, 160)),
    # M = 194 takes 224 columns: 112 accumulators are too many for three consumers
    ("194x59136x8192", (128, 224)),
])
def test_medium_default_swaps_tiles_over_all_of_m_up_to_256(shape, tile):
    config = SPACE.default_config(SPACE.parse_problem(shape))
    assert config["swap_ab"] and (config["wg_m"] * config["consumers"], config["blk_n"]) == tile
    # 32 such tiles at 151x6144x1536 would leave most SMs idle: 128-row tiles stay
    assert not SPACE.default_config(SPACE.parse_problem("151x6144x1536"))["swap_ab"]


@pytest.mark.parametrize("shape, blk_n", [
    # list s28 (H200, held busy: 1.15-1.58x the rules before it): 3 columns of 96 over M ...
    ("277x4096x3840", 96), ("257x4864x4096", 96),
    # ... or one of 160, N filling 24-30 clusters of four; list s29: two of 160 (1.11x)
    ("158x12288x2048", 160), ("144x14336x2560", 160), ("307x6912x5120", 160),
    # declined: K >= 8192 (the exact-narrow rule's), 36 and 18 clusters, K under 2048, M
    # in windows judged and lost or level (s29: two columns of 96 or 128)
    ("266x5120x12288", None), ("277x6144x4096", None), ("277x3072x4096", None),
    ("150x12288x1024", None), ("200x4096x4096", None), ("292x5120x4096", None),
    ("183x6912x5120", None), ("204x7680x4096", None)])
def test_default_takes_swapped_fours_where_they_fill_one_wave_of_clusters(shape, blk_n):
    problem = SPACE.parse_problem(shape)
    config = SPACE.default_config(problem)
    fours = config["swap_ab"] and (config["cluster"], config["multicast"]) == ("2x1", 4)
    if blk_n is None:
        assert not fours
        return
    assert fours and (config["wg_m"], config["consumers"], config["blk_n"]) == (128, 1, blk_n)
    assert (config["raster"], config["persistent"]) == ("m", False)
    assert SPACE.violations(config, problem) == []
    g = geometry(problem["M"], problem["N"], problem["K"], kernel_config(config))
    assert 24 <= g.clusters <= 30 and g.grid == 4 * g.clusters


def test_swapped_fours_are_an_early_seed_where_the_rule_declines_for_long_k():
    """266x5120x12288 (K >= 8192: the exact-narrow rule's 64x256 tiles): the fours ran 1.178x
    those held busy on an H200; an 8-trial study measures the default and 7 seeds."""
    problem = SPACE.parse_problem("266x5120x12288")
    assert not SPACE.default_config(problem)["swap_ab"]
    seeds = SPACE.ranked_seed_configs(problem)
    fours = [i for i, c in enumerate(seeds) if c["swap_ab"] and c["multicast"] == 4
             and (c["cluster"], c["wg_m"], c["consumers"], c["blk_n"]) == ("2x1", 128, 1, 96)]
    assert fours and fours[0] < 7


# cuBLAS's swapped fours on an H200 (nvjet WG_MxBLK_N 4x1) and ours, BLK_N rounded up to 16
@pytest.mark.parametrize("shape, tile", [
    ("75x6720x2560", (64, 80)), ("107x5120x3072", (64, 112)), ("144x14336x2560", (128, 144)),
    ("200x2048x5632", (64, 80)),  # cuBLAS 64x72
    ("266x5120x12288", (128, 96)), ("292x5120x16384", (128, 112)),  # cuBLAS 128x104
    ("185x2048x5504", (64, 64)),
])
def test_fitted_fours_seed_sizes_the_tiles_as_cublas_does(shape, tile):
    problem = SPACE.parse_problem(shape)
    fitted = SPACE._fitted_fours(problem)
    assert (fitted["wg_m"], fitted["blk_n"]) == tile
    assert (fitted["swap_ab"], fitted["cluster"], fitted["multicast"]) == (True, "2x1", 4)
    assert fitted["blk_k"] == (128 if tile[0] == 64 else 64)  # a 64-row four's K step is short
    geometry_ = geometry(problem["M"], problem["N"], problem["K"], kernel_config(fitted))
    assert geometry_.clusters <= CO_RESIDENT_CLUSTERS[4]
    assert fitted in SPACE.seed_configs(problem) and not SPACE.violations(fitted, problem)


def unswapped_default_tile(shape):
    """(rows, BLK_N) of the default's tiles at `shape`, checked legal and unswapped."""
    problem = SPACE.parse_problem(shape)
    config = SPACE.default_config(problem)
    assert not config["swap_ab"] and SPACE.violations(config, problem) == []
    return config["wg_m"] * config["consumers"], config["blk_n"]


@pytest.mark.parametrize("shape, tile", [
    # 128-row tiles would pad M to 256 rows; 3 x 43 tiles of 64x192 fit one wave
    ("134x8192x2048", (64, 192)),
    # the tiles a study chose here
    ("160x9216x8192", (64, 224)),
    # 3 x 62 tiles of 64x256 would take two waves: 128-row tiles stay
    ("168x15872x14848", (128, 256)),
])
def test_default_takes_64_row_tiles_up_to_192_rows_where_they_fit_one_wave(shape, tile):
    assert unswapped_default_tile(shape) == tile


@pytest.mark.parametrize("shape, tile", [
    # 5 x 75 tiles of 192x192: 3 waves, where 8 x 56 of 128x256 take 4 (-16% waves x area)
    ("919x14336x12288", (192, 192)),
    # one wave either way: 4 x 31 tiles of 192x160, 6% less area than 6 x 19 of 128x256 (held
    # busy 1.053x; medium shapes run below the power cap, large ones need 8%)
    ("684x4864x7168", (192, 160)),
    # one wave of 128x288 tiles, as much area as one of 192x192
    ("700x6144x16384", (128, 288)),
    # 5 waves of 192x192 against 7 of 128x192: 7% more area (held busy 0.953x)
    ("900x21504x7168", (128, 192)),
])
def test_medium_default_takes_192_row_tiles_only_for_a_clear_cut_in_waves_x_area(shape, tile):
    problem = SPACE.parse_problem(shape)
    assert unswapped_default_tile(shape) == tile
    # the seeds keep both heights
    heights = {c["wg_m"] * c["consumers"] for c in SPACE.seed_configs(problem)}
    assert {128, 192} <= heights


@pytest.mark.parametrize("shape, blk_n", [("200x3584x4096", 128), ("256x3072x8192", 96),
                                          ("96x2816x2048", 64), ("192x1536x2048", 64)])
def test_narrow_default_stages_whole_32_column_chunks(shape, blk_n):
    # the TMA-store epilogue's 16-column chunks (BLK_N 48, 112, 240) were 1.1-2.3x slower on
    # the H100 than the multiple of 32 next to them
    config = SPACE.default_config(SPACE.parse_problem(shape))
    assert (config["wg_m"], config["consumers"], config["blk_n"]) == (64, 1, blk_n)


@pytest.mark.parametrize("shape, blk_n", [("512x6144x4096", 192), ("512x4096x4096", 128),
                                          ("777x18176x4544", 256), ("1024x28672x3584", 256),
                                          ("559x9600x3200", 384), ("700x6144x16384", 288)])
def test_medium_default_takes_the_fewest_waves_of_the_narrowest_loads(shape, blk_n):
    # one wave of 128x192 at 512x6144; many waves take 256 (fewer loads of A per FLOP); tiles
    # wider than 256 only within two waves: one of 128x288 at 700x6144 (1.22x two of 128x192),
    # where 3 waves of 128x352 at 777x18176 ran level with 4 of 128x256
    config = SPACE.default_config(SPACE.parse_problem(shape))
    assert (config["wg_m"], config["consumers"], config["blk_n"]) == (64, 2, blk_n)
    assert SPACE.violations(config, SPACE.parse_problem(shape)) == []


@pytest.mark.parametrize("shape, blk_n", [
    ("141x11776x5120", 144),  # 23 fours' worth, 138 CTAs of 64-row tiles: was 128x192, 0.59x
    ("157x16128x8192", 160),  # 32 fours' worth: was swapped 192x160
])
def test_m_just_past_128_takes_swapped_128_row_tiles_alone_in_one_wave(shape, blk_n):
    problem = SPACE.parse_problem(shape)
    config = SPACE.default_config(problem)
    assert (config["swap_ab"], config["wg_m"], config["consumers"], config["cluster"]) == (
        True, 128, 1, "1x1")
    assert config["blk_n"] == blk_n and SPACE.violations(config, problem) == []
    assert geometry(problem["M"], problem["N"], problem["K"], kernel_config(config)).grid <= 132


def test_m_just_past_128_beyond_one_wave_keeps_the_rules_before():
    config = SPACE.default_config(SPACE.parse_problem("150x20480x4096"))  # 160 weight tiles
    assert (config["wg_m"], config["consumers"]) == (64, 3)
