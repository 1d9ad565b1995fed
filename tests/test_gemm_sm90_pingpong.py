"""Ping-pong in the Hopper GEMM (schedule='pingpong'): its geometry, legality, where the plugin
offers it, how configs stored before the knob keep their names, and its kernel."""

import dataclasses

import pytest

from autotune.dispatch.load import valid_entries
from autotune.spaces.gemm_sm90 import GemmSm90Space, kernel_config
from autotune.store import ConfigStore
from autotune.store.format import Entry, config_id
from autotune.store.restamp import kernel_digests, restamp
from kernels.gemm._sm90_config import geometry, smem_bytes

SPACE = GemmSm90Space()
PROBLEM = SPACE.parse_problem("4128x16384x1024")


def _pingpong(**change):
    return {**SPACE.default_config(PROBLEM), "schedule": "pingpong", **change}


def test_each_consumer_owns_whole_tiles_of_its_rows():
    # the default's 128x256 tiles (two 64-row consumers on one tile) -> 64x256 tiles, one per
    # consumer: twice the tiles, each stage holds 64 rows of A
    coop, pp = kernel_config(SPACE.default_config(PROBLEM)), kernel_config(_pingpong())
    assert (coop.blk_m, pp.blk_m) == (128, 64)
    g_coop, g_pp = geometry(4128, 16384, 1024, coop), geometry(4128, 16384, 1024, pp)
    assert (g_coop.total, g_pp.total) == (33 * 64, 65 * 64)
    assert g_pp.grid == 132  # persistent: one CTA per SM, its tiles dealt to the two in turn
    assert smem_bytes(coop) - smem_bytes(pp) == coop.stages * 64 * 64 * 2


@pytest.mark.parametrize("change, rule", [
    ({"consumers": 1}, "needs consumers=2, not 1"),
    ({"consumers": 3, "blk_n": 128}, "needs consumers=2, not 3"),
    ({"persistent": False}, "needs persistent=True"),
    ({"split_k": 2, "persistent": False, "epilogue": "reg"}, "needs split_k=1 and stream_k"),
    ({"stream_k": True}, "needs split_k=1 and stream_k"),
])
def test_pingpong_refuses_what_it_cannot_run_with_the_rule(change, rule):
    assert SPACE.violations(_pingpong(), PROBLEM) == []
    assert any(rule in v for v in SPACE.violations(_pingpong(**change), PROBLEM))


@pytest.mark.parametrize("shape", ["4128x16384x1024", "3547x3904x512", "2048x512x4096",
                                   "512x4096x4096", "16x4096x4096", "160x9216x8192"])
def test_no_default_takes_pingpong(shape):
    # the default's own tiles ping-pong were 0.85-0.98x it at all 11 shapes held busy (H200)
    assert SPACE.default_config(SPACE.parse_problem(shape))["schedule"] == "cooperative"


@pytest.mark.parametrize("shape, offered", [("3547x3904x512", True), ("9000x1024x256", True),
                                            ("4128x16384x1024", False), ("512x4096x512", False)])
def test_the_128x128_pingpong_seed_only_at_large_m_and_short_k(shape, offered):
    problem = SPACE.parse_problem(shape)
    seeds = [c for c in SPACE.seed_configs(problem) if c["schedule"] == "pingpong"]
    assert bool(seeds) == offered
    assert all((c["wg_m"], c["blk_n"]) == (128, 128) for c in seeds)


def test_a_config_stored_before_the_knob_keeps_its_id_and_reads_as_the_default():
    default = SPACE.default_config(PROBLEM)
    stored = {k: v for k, v in default.items() if k != "schedule"}
    assert config_id(stored) == config_id(default) != config_id(_pingpong())
    entry = Entry(problem=PROBLEM.key, config=stored, time_ms=0.2,
                  measured={config_id(stored): 0.2})
    [read] = valid_entries(SPACE, {PROBLEM.key: entry}).values()
    assert read.config == default
    assert read.measured[config_id(default)] == 0.2


def test_restamp_writes_the_knob_into_entries_stored_before_it(tmp_path):
    from autotune.store import Header

    default = SPACE.default_config(PROBLEM)
    stored = {k: v for k, v in default.items() if k != "schedule"}
    header = Header(space=SPACE.name, kernel=SPACE.kernel, arch=SPACE.arch, device="NVIDIA H200",
                    template="0ld")
    store = ConfigStore(header, {PROBLEM.key: Entry(problem=PROBLEM.key, config=stored,
                                                    time_ms=0.2)})
    stamped = restamp(store, SPACE, kernel_digests(SPACE, store))
    assert stamped.entries[PROBLEM.key].config == default
    written = ConfigStore.read(stamped.write(tmp_path / "store.json"))
    assert written.entries[PROBLEM.key] == dataclasses.replace(store.entries[PROBLEM.key],
                                                               config=default)


def test_pingpong_kernel_compiles_without_spills():
    import tirx

    config = _pingpong(wg_m=128, blk_n=128, stages=5)
    assert SPACE.violations(config, PROBLEM) == []
    art = tirx.build(SPACE.build(config, PROBLEM), SPACE.arch)
    assert art.resources.spill_bytes == 0 and art.resources.stack_frame_bytes == 0
    assert art.launch.grid == (132, 1, 1) and art.launch.block == (384, 1, 1)
    # a full and an empty barrier per stage, and the two consumers' order barriers
    source = art.path.joinpath("kernel.cu").read_text()
    assert source.count("mbarrier_init_init_shared_b64(tvm") == 2 * 5 + 2
