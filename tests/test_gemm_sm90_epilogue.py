"""The Hopper GEMM's TMA-store epilogue at a BLK_N that no 64- or 32-column chunk tiles (an odd
multiple of 16): 64- or 32-column chunks, the last overlapping the one before it (epi_tail
"overlap"), or 16-column ones ("narrow": the kernels stored before the knob)."""

import pytest

from autotune.dispatch.load import valid_entries
from autotune.spaces.gemm_sm90 import GemmSm90Space, kernel_config
from autotune.store.format import Entry, config_id
from kernels.gemm._sm90_config import epilogue_chunk, epilogue_starts

SPACE = GemmSm90Space()
PROBLEM = SPACE.parse_problem("552x8512x2048")


def _chunks(**change):
    cfg = kernel_config({**SPACE.default_config(PROBLEM), **change})
    width, bufs = epilogue_chunk(cfg)
    return width, bufs, epilogue_starts(cfg.blk_n, width)


@pytest.mark.parametrize("blk_n, stages, width, starts", [
    (208, 4, 64, [0, 64, 128, 144]),  # the last chunk rewrites 48 columns of the third
    (80, 4, 64, [0, 16]),
    (48, 4, 32, [0, 16]),  # at most 64 columns: 32-column chunks
    (208, 5, 32, [0, 32, 64, 96, 128, 160, 176]),  # 64-column staging would not fit the ring
    (16, 4, 16, [0]),
    (304, 4, 16, list(range(0, 304, 16))),  # nor would 32-column staging: 16 as before the knob
])
def test_odd_widths_store_whole_swizzle_rows_the_last_overlapping(blk_n, stages, width, starts):
    got = _chunks(blk_n=blk_n, stages=stages)
    assert got[0] == width and got[2] == starts
    assert starts[-1] + width == blk_n and starts == sorted(starts)
    assert SPACE.violations({**SPACE.default_config(PROBLEM), "blk_n": blk_n,
                             "stages": stages}, PROBLEM) == []


@pytest.mark.parametrize("blk_n, width", [(256, 64), (224, 32), (192, 64), (96, 32)])
def test_widths_a_chunk_tiles_build_the_same_kernel_either_way(blk_n, width):
    overlap, narrow = _chunks(blk_n=blk_n), _chunks(blk_n=blk_n, epi_tail="narrow")
    assert overlap == narrow and overlap[0] == width
    assert overlap[2] == list(range(0, blk_n, width))


def test_narrow_keeps_sixteen_column_chunks():
    width, bufs, starts = _chunks(blk_n=208, epi_tail="narrow")
    assert (width, bufs) == (16, 2) and starts == list(range(0, 208, 16))


def test_defaults_overlap_and_stored_configs_read_as_narrow_under_their_old_id():
    assert SPACE.default_config(PROBLEM)["epi_tail"] == "overlap"
    stored = {k: v for k, v in SPACE.default_config(PROBLEM).items() if k != "epi_tail"}
    stored["blk_n"] = 208
    narrow = {**stored, "epi_tail": "narrow"}
    assert config_id(stored) == config_id(narrow) != config_id({**stored, "epi_tail": "overlap"})
    entry = Entry(problem=PROBLEM.key, config=stored, time_ms=0.04,
                  measured={config_id(stored): 0.04})
    [read] = valid_entries(SPACE, {PROBLEM.key: entry}).values()
    assert read.config == narrow


@pytest.mark.parametrize("tail, stores", [("overlap", 4), ("narrow", 13)])
def test_the_kernel_issues_one_tma_store_per_chunk(tail, stores):
    import tirx

    config = {**SPACE.default_config(PROBLEM), "blk_n": 208, "stages": 4, "epi_tail": tail}
    art = tirx.build(SPACE.build(config, PROBLEM), SPACE.arch)
    assert art.resources.spill_bytes == 0 and art.resources.stack_frame_bytes == 0
    source = art.path.joinpath("kernel.cu").read_text()
    body = source[source.index("extern \"C\" __global__"):]
    assert body.count("bulk_tensor_2d_global_shared__cta_tile_bulk_group(") == stores
