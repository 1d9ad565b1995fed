"""Hopper GEMM tiles whose BLK_N is an odd multiple of 8 (wgmma's N step), as cuBLAS's 128x216
and 128x248 cover M = 642 and 740 in three tiles where multiples of 16 pad it 4-10%: legal up
to 256, their accumulators fenced four at a time past the last group of eight, their epilogue
chunks overlapping at the end, their pair slices whole 8-row atoms. Compiled here; the GPU
check is check_configs' on the device."""

import pytest

from autotune.spaces.gemm_sm90 import KNOBS, GemmSm90Space, kernel_config
from kernels.gemm._sm90_config import epilogue_chunk, epilogue_starts, multicast_slices

SPACE = GemmSm90Space()
PROBLEM = SPACE.parse_problem("642x11264x2816")


def _config(**change):
    return {**SPACE.default_config(PROBLEM), "swap_ab": True, **change}


def test_odd_multiples_of_8_are_knob_values_up_to_256_only():
    odd = [n for n in KNOBS["blk_n"] if n % 16]
    assert odd and odd[0] == 24 and odd[-1] == 248 and 216 in odd
    assert all(n % 16 == 0 for n in KNOBS["blk_n"] if n > 256)


@pytest.mark.parametrize("blk_n", [24, 88, 136, 216, 248])
def test_widths_of_8_mod_16_are_legal(blk_n):
    assert SPACE.violations(_config(blk_n=blk_n), PROBLEM) == []


def test_past_256_two_wgmmas_need_a_multiple_of_16():
    [why] = SPACE.violations(_config(blk_n=264, wg_m=64, consumers=1, stages=3), PROBLEM)
    assert why.startswith("blk_n=264 is not one of (16, 24, 32,") and "256, 272, 288" in why


@pytest.mark.parametrize("blk_n, tail, width, starts", [
    (216, "overlap", 64, [0, 64, 128, 152]),
    (88, "overlap", 64, [0, 24]),
    (24, "overlap", 16, [0, 8]),
    (88, "narrow", 16, [0, 16, 32, 48, 64, 72]),
])
def test_epilogue_chunks_end_at_blk_n_the_last_overlapping(blk_n, tail, width, starts):
    cfg = kernel_config(_config(blk_n=blk_n, epi_tail=tail))
    assert epilogue_chunk(cfg)[0] == width
    assert epilogue_starts(blk_n, width) == starts and starts[-1] + width == blk_n


def test_a_pair_shares_an_odd_atom_count_unevenly():
    assert multicast_slices(88, 2) == (48, 40, 1)  # 11 atoms: 6 + 5
    assert multicast_slices(216, 2) == (112, 104, 1)


@pytest.mark.parametrize("change, fences4", [
    (dict(blk_n=216), 1),  # 108 accumulators: 13 groups of 8 and one of 4
    (dict(blk_n=88, cluster="2x1", epilogue="reg"), 1),
    (dict(blk_n=152, wg_m=128), 0),  # two atoms of 76: 152, a multiple of 8
])
def test_the_kernel_fences_the_last_four_accumulators_and_does_not_spill(change, fences4):
    import tirx

    config = _config(**change)
    art = tirx.build(SPACE.build(config, PROBLEM), SPACE.arch)
    assert art.resources.spill_bytes == 0 and art.resources.stack_frame_bytes == 0
    source = art.path.joinpath("kernel.cu").read_text()
    body = source[source.index("extern \"C\" __global__"):]
    n = kernel_config(config).blk_n
    assert f"m64n{n}k16" in source
    fence_points = body.count("acc_fence8(acc_ptr[0],")
    assert fence_points > 0 and body.count("acc_fence4(") == fences4 * fence_points
