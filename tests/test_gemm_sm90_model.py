"""The Hopper GEMM cost model ranks as the H100 measured where it was checked (what the model is
for: ranking the seeds a study and first use time first)."""

from autotune.spaces.gemm_sm90 import GemmSm90Space

SPACE = GemmSm90Space()


def _ms(shape, **overrides):
    problem = SPACE.parse_problem(shape)
    config = {**SPACE.default_config(problem), **overrides}
    assert not SPACE.violations(config, problem)
    return SPACE.estimate_ms(config, problem)


def test_narrow_tiles_of_one_consumer_rank_first_where_they_ran_fastest():
    # 151x4544x4544: 108 tiles of 64x128 (one consumer) 0.021 ms, the 128x128 default of then
    # 0.034 (studies/2026-11-24-h100-gemm-s10/judge): the seed a short study must reach
    narrow = dict(consumers=1, wg_m=64, blk_n=128, stages=8, persistent=False, cluster="1x1")
    tiled = dict(consumers=2, wg_m=64, blk_n=128, stages=6, persistent=True, cluster="1x1")
    assert _ms("151x4544x4544", **narrow) < _ms("151x4544x4544", **tiled)


def test_the_model_orders_the_later_studies_trials_as_they_ran():
    # The pair factor was fitted on sessions <= 12's studies; on sessions 13-20's 84 (their
    # committed trial CSVs) the model without it ordered 39% of their trial pairs right and its
    # first pick ran 0.84x the study's best (studies/2026-11-27-cpu-gemm-model-pairs/)
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "studies/2026-11-27-cpu-gemm-model-pairs/rank.py"
    spec = importlib.util.spec_from_file_location("rank_pairs", path)
    rank = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rank)
    from autotune.spaces import gemm_sm90_model

    held = [s for s in rank.studies() if s[0] > 12]
    assert len(held) >= 84
    order, _, pick = rank.score(held, gemm_sm90_model.PAIR_SLOWDOWN)
    assert order > 0.65 and pick > 0.95


def test_a_pair_over_one_tile_column_costs_what_a_pair_over_two_does():
    # 1x2 pairs of swapped 64x152 tiles: at M = 152 one column, so each pair's second CTA has
    # no tile and its SM idles (0.405x the tile alone, held busy on an H200,
    # studies/2026-11-29-h200-gemm-s37/gap); at M = 304 two columns fill every pair
    pair = dict(swap_ab=True, wg_m=64, consumers=1, blk_n=152, stages=8, cluster="1x2",
                persistent=False, split_k=1, epilogue="tma")
    one, two = _ms("152x7168x16384", **pair), _ms("304x7168x16384", **pair)
    assert abs(one / two - 1) < 0.02
    assert _ms("152x7168x16384", **{**pair, "cluster": "1x1"}) < one / 1.5


def test_the_model_orders_every_committed_studys_trials_with_idle_ctas_and_split_k():
    # counting a cluster's tile-less CTAs and SPLIT_SLOWDOWN: 0.666 -> 0.732 (H100), 0.707 ->
    # 0.724 (H200, 56 studies) of the trial pairs > 3% apart ordered right
    # (.../s37/model_order.txt); list s39's 12 studies (session 34: the cuBLAS-layout seeds
    # first, covering tiles the model misranks) order at 0.585, all 68 at 0.701; session 35's
    # list s42 (12) at 0.636 and the 23-shape suite at 0.527 (its large shapes' seeds within a
    # few % of each other), all 103 at 0.662; with SM_MAX_BYTES_PER_S 7e10 (session 35) the
    # H100's 264 at 0.737 (0.732 before), the H200's 103 at 0.751, first picks 0.972 of best.
    # Those (up to list s42) guard the model; every study committed since joins a looser floor
    # (session 36's list s45, 12 studies: 0.629 alone, all 115 H200 at 0.738)
    import importlib.util
    import re
    from pathlib import Path

    path = (Path(__file__).resolve().parents[1]
            / "studies/2026-11-29-h200-gemm-s37/model_order.py")
    spec = importlib.util.spec_from_file_location("model_order", path)
    order = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(order)

    def up_to_s42(path: str) -> bool:
        found = re.search(r"-s(\d+)/", path)
        return found is None or int(found.group(1)) <= 42

    for device, floor, studies in (("h100", 0.73, 264), ("h200", 0.74, 103)):
        part = order.studies(device, up_to_s42)
        right, _, pick = order.score(part)
        assert len(part) == studies and right > floor and pick > 0.96, (device, right, pick)
        part = order.studies(device)
        right, _, pick = order.score(part)
        assert len(part) >= studies and right > 0.72 and pick > 0.95, (device, right, pick)
