"""First-use tuning (autotune/dispatch/first_use.py): which configs it times, what wins (a config
over the default only beyond noise, the vendor op over it only beyond noise), that it runs once
per shape and never for a stored one, never inside a graph capture, and that its outcome
persists in its own store file whose header is checked. No GPU: the timer is scripted."""

import warnings

import pytest

from autotune.dispatch import FirstUse, FirstUseWarning, NoKernelWarning, Selector
from autotune.dispatch.dispatcher import VENDOR_FASTER
from autotune.dispatch.first_use import VENDOR, candidates, count_from_env, is_first_use
from autotune.dispatch.prebuild import prebuild
from autotune.errors import UserError
from autotune.ops.gemm import GEMM
from autotune.store import ConfigStore, Entry, Header, StoreMismatchWarning, config_id
from tests.test_dispatch import FAKE_DEFAULT, FakeGemmSpace, FakeTensor, entries, gemm, make_dispatcher

SEEDS = [{"blk": 64}, {"blk": 32}, {"blk": 16}, {"blk": 9000}]  # 9000 > N: illegal


class SeededSpace(FakeGemmSpace):
    """Seeds in the plugin's order; its cost model ranks blk=16 first, then 32, then 64."""

    def seed_configs(self, problem):
        return [dict(c) for c in SEEDS]

    def estimate_ms(self, config, problem):
        return {64: 3.0, 32: 2.0, 16: 1.0}.get(config["blk"], 9.0)


HEADER = Header(space="fake_gemm", kernel="gemm", arch="sm_90a", device="NVIDIA H200",
                template="t1", provenance="first use")


class Timer:
    """Scripted times by config blk ({blk: ms} and the vendor's); records what it was asked."""

    def __init__(self, ms: dict, vendor_ms: float = 10.0, wrong=()):
        self.ms, self.vendor_ms, self.wrong, self.asked = ms, vendor_ms, wrong, []

    def __call__(self, space, problem, kernels, rounds):
        self.asked.append((problem.key, sorted(kernels)))
        by_id = {config_id(c): c for c in [FAKE_DEFAULT, *SEEDS]}
        refused = {cid: "wrong result: output 0 holds NaN" for cid in kernels
                   if by_id[cid]["blk"] in self.wrong}
        times = {cid: self.ms[by_id[cid]["blk"]] for cid in kernels if cid not in refused}
        return {**times, VENDOR: self.vendor_ms}, refused


def tuned_dispatcher(tmp_path, timer, count=3, path="first-use.json", stored=(), capturing=False):
    op, built, _ = make_dispatcher(tmp_path, stored=stored, space=SeededSpace())
    op.first_use = FirstUse(count, HEADER, tmp_path / path if path else None, time=timer,
                            capturing=lambda: capturing)
    return op, built


def call(op, m=100, n=4096, k=4096):
    """The route a call of this shape takes (chosen on its first call, then cached)."""
    return op.route(FakeTensor(m, k), FakeTensor(n, k))


def test_candidates_are_dispatch_choices_then_seeds_by_the_cost_model():
    space = SeededSpace()
    selector = Selector({}, GEMM.bucket, space.default_config)
    got = candidates(space, selector, gemm(100), 4)
    assert got == [FAKE_DEFAULT, {"blk": 16}, {"blk": 32}, {"blk": 64}]
    assert candidates(space, selector, gemm(100), 2) == [FAKE_DEFAULT, {"blk": 16}]
    assert {"blk": 9000} not in candidates(space, selector, gemm(100), 10)  # illegal
    assert candidates(space, selector, gemm(100), 0) == []


def test_candidates_keep_the_plugins_order_without_a_cost_model():
    class Unranked(SeededSpace):
        def estimate_ms(self, config, problem):
            return None

    space = Unranked()
    got = candidates(space, Selector({}, GEMM.bucket, space.default_config), gemm(100), 3)
    assert got == [FAKE_DEFAULT, {"blk": 64}, {"blk": 32}]


def test_a_config_faster_beyond_noise_replaces_the_default(tmp_path):
    timer = Timer({8: 1.0, 16: 0.90, 32: 0.95, 64: 0.5})  # 64 is not among the 3 timed
    op, _ = tuned_dispatcher(tmp_path, timer)
    route = call(op)
    assert (route.reason, route.config) == ("exact", {"blk": 16})
    assert len(timer.asked[0][1]) == 3
    entry = op.selector.entries[gemm(100).key]
    assert is_first_use(entry) and entry.time_ms == 0.90 and entry.default_ms == 1.0
    assert entry.vendor_ms == 10.0 and len(entry.measured) == 3


def test_a_config_faster_within_noise_leaves_the_default(tmp_path):
    op, _ = tuned_dispatcher(tmp_path, Timer({8: 1.0, 16: 0.98, 32: 0.99}))
    route = call(op)
    assert route.config == FAKE_DEFAULT
    assert op.selector.entries[gemm(100).key].time_ms == 1.0


def test_the_vendor_op_serves_where_it_won_beyond_noise(tmp_path):
    op, _ = tuned_dispatcher(tmp_path, Timer({8: 1.0, 16: 0.9, 32: 0.95}, vendor_ms=0.8))
    route = call(op)
    assert route.reason == VENDOR_FASTER and route.config == {"blk": 16}


def test_the_vendor_op_within_noise_does_not_serve(tmp_path):
    op, _ = tuned_dispatcher(tmp_path, Timer({8: 1.0, 16: 0.9, 32: 0.95}, vendor_ms=0.89))
    assert call(op).reason == "exact"


def test_a_config_with_a_wrong_result_is_not_served(tmp_path):
    op, _ = tuned_dispatcher(tmp_path, Timer({8: 1.0, 16: 0.5, 32: 0.9}, wrong=(16,)))
    with pytest.warns(FirstUseWarning, match="wrong result"):
        route = call(op)
    assert route.config == {"blk": 32}
    assert config_id({"blk": 16}) not in op.selector.entries[gemm(100).key].measured


def test_timing_runs_once_per_shape(tmp_path):
    timer = Timer({8: 1.0, 16: 0.9, 32: 0.95})
    op, _ = tuned_dispatcher(tmp_path, timer)
    for _ in range(3):
        call(op)
    call(op, m=200)
    assert [key for key, _ in timer.asked] == [gemm(100).key, gemm(200).key]


def test_a_stored_shape_is_not_timed(tmp_path):
    timer = Timer({8: 1.0, 16: 0.9, 32: 0.95})
    op, _ = tuned_dispatcher(tmp_path, timer, stored=[gemm(100)])
    assert call(op).tuned == gemm(100).key and call(op).config["tuned_for"] == gemm(100).key
    assert timer.asked == []


def test_no_timing_inside_a_graph_capture(tmp_path):
    timer = Timer({8: 1.0, 16: 0.5})
    op, _ = tuned_dispatcher(tmp_path, timer, capturing=True)
    with pytest.warns(FirstUseWarning, match="capture"):
        route = call(op)
    assert timer.asked == [] and route.reason == "default"


def test_only_configs_with_a_kernel_are_timed(tmp_path):
    timer = Timer({8: 1.0, 16: 0.9, 32: 0.95})
    op, _ = tuned_dispatcher(tmp_path, timer)
    op.provider.build = None  # a GPU machine without TVM: only what is in the index
    with pytest.warns(NoKernelWarning):
        route = call(op)
    assert timer.asked == [] and route.reason == "vendor"


def test_the_outcome_persists_and_a_later_dispatcher_reuses_it(tmp_path):
    op, _ = tuned_dispatcher(tmp_path, Timer({8: 1.0, 16: 0.9, 32: 0.95}))
    call(op)
    call(op, m=200)
    stored = ConfigStore.read(tmp_path / "first-use.json")
    assert sorted(stored.entries) == sorted([gemm(100).key, gemm(200).key])
    assert stored.header == HEADER
    later = FirstUse(3, HEADER, tmp_path / "first-use.json", time=None)
    assert later.stored()[gemm(100).key].config == {"blk": 16}


@pytest.mark.parametrize("text, why", [
    ("{not json", "not valid JSON"),
    ("template", "refused .template is 'old'"),
    ("timer", "refused .timer is 'old'"),  # an earlier protocol's times: timed again
])
def test_a_corrupt_or_stale_store_file_is_refused_then_rewritten(tmp_path, text, why):
    path = tmp_path / "first-use.json"
    if text in ("template", "timer"):
        other = ConfigStore(Header(**{**HEADER.__dict__, text: "old"}))
        other.entries.update(entries(gemm(100)))
        other.write(path)
    else:
        path.write_text(text)
    timer = Timer({8: 1.0, 16: 0.9, 32: 0.95})
    op, _ = tuned_dispatcher(tmp_path, timer)
    with pytest.warns(StoreMismatchWarning, match=why):
        assert op.first_use.stored() == {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoreMismatchWarning)
        call(op)
    rewritten = ConfigStore.read(path)
    assert rewritten.header == HEADER and list(rewritten.entries) == [gemm(100).key]


def test_count_comes_from_the_argument_else_the_environment(monkeypatch):
    monkeypatch.delenv("AUTOTUNE_FIRST_USE", raising=False)
    assert count_from_env(None) == 0
    monkeypatch.setenv("AUTOTUNE_FIRST_USE", "4")
    assert count_from_env(None) == 4 and count_from_env(0) == 0
    monkeypatch.setenv("AUTOTUNE_FIRST_USE", "many")
    with pytest.raises(UserError, match="AUTOTUNE_FIRST_USE='many'"):
        count_from_env(None)


def test_prebuild_builds_first_use_configs_for_shapes_no_store_holds(tmp_path):
    from autotune.dispatch import ArtifactIndex

    built = []

    def build(space, problem, config, index):
        built.append((problem.key, config["blk"]))

    space = SeededSpace()
    prebuild(space, [], [gemm(100)], ArtifactIndex(tmp_path), first_use=3, build=build,
             log=lambda line: None)
    assert sorted(built) == sorted([(gemm(100).key, 8), (gemm(100).key, 16),
                                    (gemm(100).key, 32)])
    built.clear()
    prebuild(space, [], [gemm(100)], ArtifactIndex(tmp_path), build=build, log=lambda line: None)
    assert built == [(gemm(100).key, 8)]  # without first use: the default only


def test_load_reads_the_first_use_store_under_the_committed_one(tmp_path, monkeypatch):
    from autotune.dispatch import load
    from autotune.dispatch.first_use import store_file
    from autotune.spaces.gemm_sm90 import GemmSm90Space
    from tests.test_dispatch import H200, Recorder, real_space_store

    monkeypatch.setenv("AUTOTUNE_CACHE", str(tmp_path / "cache"))
    space = GemmSm90Space()
    committed = real_space_store(space).write(tmp_path / "s.json")  # holds M=16
    tuner = FirstUse.for_gpu(space, H200, 3)
    assert tuner.path == store_file(space, H200) and str(tmp_path / "cache") in str(tuner.path)
    mine = ConfigStore(tuner.header)
    for m in (16, 100):
        mine.entries[gemm(m).key] = Entry(gemm(m).key, dict(space.default_config(gemm(m)),
                                                             stages=5), 0.02, source="first use")
    mine.write(tuner.path)
    op = load("gemm", store=committed, artifacts=tmp_path / "a", gpu=H200, build=False,
              first_use=3, load_kernel=Recorder)
    assert op.first_use.count == 3
    assert op.selector.entries[gemm(16).key].config["stages"] == 6  # the committed store's
    assert op.selector.entries[gemm(100).key].config["stages"] == 5  # first use's
    off = load("gemm", store=committed, artifacts=tmp_path / "a", gpu=H200, build=False,
               first_use=0, load_kernel=Recorder)
    assert off.first_use is None and list(off.selector.entries) == [gemm(16).key]
