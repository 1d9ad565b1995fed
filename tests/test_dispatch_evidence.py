"""Dispatch on shapes nobody tuned never trades the default for a config without evidence: a
config tuned elsewhere serves only if the studies' records show it beating the default on
several tuned shapes of the same class and losing on none; the vendor op serves where it was
timed faster beyond noise. Configs from outside the problem's bucket are only first use's
candidates. Proved on the CPU with stores exported from replayed studies."""

from __future__ import annotations

import pandas as pd
import pytest

from autotune.dispatch import Selector
from autotune.dispatch.classes import gemm_class
from autotune.dispatch.rules import DEFAULT, EXACT, NEAREST, NOISE
from autotune.ops.gemm import GEMM
from autotune.runner import RecordedTable, replay
from autotune.spaces.base import Problem
from autotune.store import Entry, Gpu, config_id
from autotune.store.export import store_from_studies
from autotune.study import make_sampler, open_storage, tune_problem
from autotune.testing.synthetic import SyntheticSpace

DEFAULT_CFG = {"block_m": 16, "block_n": 16, "stages": 2}
GOOD = {"block_m": 16, "block_n": 32, "stages": 3}
OTHER = {"block_m": 16, "block_n": 64, "stages": 1}


def gemm(m, n=4096, k=4096):
    return Problem.of("float32", M=m, N=n, K=k)


def entry(problem, config, time_ms, measured, default_ms=1.0, vendor_ms=None):
    return Entry(problem.key, config, time_ms, default_ms, vendor_ms,
                 measured={config_id(c): t for c, t in measured})


def selector(*entries, default=lambda p: dict(DEFAULT_CFG)):
    return Selector({e.problem: e for e in entries}, GEMM.bucket, default)


def test_a_config_that_won_on_one_shape_only_does_not_serve_another():
    store = selector(entry(gemm(16), GOOD, 0.8, [(GOOD, 0.8), (DEFAULT_CFG, 1.0)]),
                     entry(gemm(64), OTHER, 0.9, [(OTHER, 0.9), (DEFAULT_CFG, 1.0)]))
    assert [c.reason for c in store.choices(gemm(32))] == [DEFAULT]


def test_a_config_that_won_on_two_shapes_of_the_class_serves_the_nearest_first():
    store = selector(entry(gemm(16), GOOD, 0.8, [(GOOD, 0.8), (OTHER, 0.9), (DEFAULT_CFG, 1.0)]),
                     entry(gemm(64), OTHER, 0.85, [(GOOD, 0.9), (OTHER, 0.85), (DEFAULT_CFG, 1.0)]))
    choices = store.choices(gemm(20), nearest=True)
    assert [(c.reason, c.tuned) for c in choices] == [
        (NEAREST, gemm(16).key), (NEAREST, gemm(64).key), (DEFAULT, None)]
    assert choices[0].config == GOOD and "beat the default on 2 of 2" in choices[0].evidence
    # served untimed, configs from outside the bucket lost on 14 of 17 unseen H100 shapes:
    # dispatch leaves them to first use, which times them first
    assert [c.reason for c in store.choices(gemm(20))] == [DEFAULT]


def test_one_loss_on_a_peer_disqualifies_a_config():
    # GOOD wins twice by 20%, but on a third shape of its class it is 1% slower than the default.
    store = selector(entry(gemm(16), GOOD, 0.8, [(GOOD, 0.8), (DEFAULT_CFG, 1.0)]),
                     entry(gemm(64), GOOD, 0.8, [(GOOD, 0.8), (DEFAULT_CFG, 1.0)]),
                     entry(gemm(256), DEFAULT_CFG, 1.0, [(GOOD, 1.01), (DEFAULT_CFG, 1.0)]))
    assert [c.reason for c in store.choices(gemm(32))] == [DEFAULT]


def test_wins_within_the_noise_are_no_evidence():
    close = 1.0 - NOISE / 2
    store = selector(entry(gemm(16), GOOD, close, [(GOOD, close), (DEFAULT_CFG, 1.0)]),
                     entry(gemm(64), GOOD, close, [(GOOD, close), (DEFAULT_CFG, 1.0)]))
    assert [c.reason for c in store.choices(gemm(32))] == [DEFAULT]


def test_only_shapes_of_the_same_class_count():
    # Every stored shape has another default than the query (M > 100 in this plugin's rule).
    def default(p):
        return dict(DEFAULT_CFG) if p["M"] <= 100 else {**DEFAULT_CFG, "stages": 4}

    big = {**DEFAULT_CFG, "stages": 4}
    store = selector(entry(gemm(512), GOOD, 0.5, [(GOOD, 0.5), (big, 1.0)]),
                     entry(gemm(1024), GOOD, 0.5, [(GOOD, 0.5), (big, 1.0)]), default=default)
    assert [c.reason for c in store.choices(gemm(32), nearest=True)] == [DEFAULT]
    assert store.choices(gemm(2048), nearest=True)[0].config == GOOD


def test_the_default_time_is_todays_defaults_record_where_the_study_timed_it():
    # The stores' default_ms (1.0) is an older default's; the study also timed today's default,
    # which GOOD does not beat: no evidence. Without that record, default_ms stands.
    today = {**DEFAULT_CFG, "stages": 4}
    timed = selector(entry(gemm(16), GOOD, 0.8, [(GOOD, 0.8), (today, 0.79)]),
                     entry(gemm(64), GOOD, 0.8, [(GOOD, 0.8), (today, 0.79)]),
                     default=lambda p: dict(today))
    assert [c.reason for c in timed.choices(gemm(32), nearest=True)] == [DEFAULT]
    untimed = selector(entry(gemm(16), GOOD, 0.8, [(GOOD, 0.8)]),
                       entry(gemm(64), GOOD, 0.8, [(GOOD, 0.8)]), default=lambda p: dict(today))
    assert untimed.choices(gemm(32), nearest=True)[0].config == GOOD


def test_the_vendor_serves_a_tuned_shape_where_it_was_timed_faster_beyond_noise():
    fast = selector(entry(gemm(16), GOOD, 0.8, [(GOOD, 0.8)], vendor_ms=0.7))
    assert "faster here" in fast.vendor_faster(gemm(16), GOOD)
    close = selector(entry(gemm(16), GOOD, 0.8, [(GOOD, 0.8)], vendor_ms=0.8 * (1 - NOISE / 2)))
    assert close.vendor_faster(gemm(16), GOOD) is None
    assert fast.choices(gemm(16))[0].reason == EXACT


def test_the_vendor_serves_an_untuned_shape_where_it_beat_that_config_on_its_class():
    lost = [entry(gemm(m), GOOD, 1.0, [(DEFAULT_CFG, 1.0)], vendor_ms=0.8) for m in (16, 64)]
    assert "beat this config on 2 of 2" in selector(*lost).vendor_faster(gemm(32), DEFAULT_CFG)
    mixed = lost + [entry(gemm(128), GOOD, 1.0, [(DEFAULT_CFG, 1.0)], vendor_ms=1.05)]
    assert selector(*mixed).vendor_faster(gemm(32), DEFAULT_CFG) is None


# -- the rule on stores exported from replayed studies ------------------------------------------
class TwoClassSpace(SyntheticSpace):
    """Skinny problems (M <= 64) and wide ones have their own default. TRAP is the best config on
    skinny problems and a disaster on wide ones; WIDE wins on wide ones only."""

    TRAP = {"block_m": 16, "block_n": 128, "stages": 2}
    WIDE = {"block_m": 64, "block_n": 64, "stages": 3}

    def default_config(self, problem):
        return dict(DEFAULT_CFG) if problem["M"] <= 64 else {**DEFAULT_CFG, "block_m": 32}

    def seed_configs(self, problem):
        return [dict(self.TRAP), dict(self.WIDE)]

    def time_ms(self, config, problem) -> float:
        skinny = problem["M"] <= 64
        scale = problem["N"] / 4096
        if config == self.TRAP:
            return scale * (0.7 if skinny else 2.5)
        if config == self.WIDE:
            return scale * (1.1 if skinny else 0.85)
        return scale * (1.0 + 0.01 * self.model_time_ms(config))

    def table(self, problems) -> RecordedTable:
        rows = [{**c, "time_ms": self.time_ms(c, p), "problem": p.key}
                for p in problems for c in self.legal_configs(p)]
        rows += [{"time_ms": 0.95 * p["N"] / 4096, "problem": p.key, "vendor": True}
                 for p in problems]
        return RecordedTable.from_frame(pd.DataFrame(rows, dtype=object))


TWO = TwoClassSpace()
TUNED = [TWO.parse_problem(s) for s in ("16x4096x64", "48x2048x64", "128x4096x64", "512x4096x64")]
LEFT_OUT = [TWO.parse_problem(s) for s in ("32x3072x64", "100x2048x64", "1024x1024x64", "64x512x64")]


@pytest.fixture(scope="module")
def replayed_store(tmp_path_factory):
    storage = open_storage(f"sqlite:///{tmp_path_factory.mktemp('s')}/s.db")
    runner = replay(TWO.table(TUNED + LEFT_OUT))
    with runner:
        for problem in TUNED:
            tune_problem(TWO, problem, runner, storage=storage, trials=3,
                         sampler=make_sampler("random", seed=0), retime_best=False)
    return store_from_studies(storage, TWO, Gpu("sm_90a", "NVIDIA H100", "13.0", "13.0"))


def test_a_replayed_store_records_the_evidence_and_the_vendor(replayed_store):
    wide = TUNED[2]  # its study: the default and the two seeds
    e = replayed_store.get(wide)
    assert e.config == TWO.WIDE and e.vendor_ms == pytest.approx(0.95)
    assert e.measured == {config_id(c): pytest.approx(TWO.time_ms(c, wide))
                          for c in (TWO.default_config(wide), TWO.TRAP, TWO.WIDE)}
    assert replayed_store.header.timer == "graph-window"


def test_on_left_out_shapes_dispatch_is_never_slower_than_the_default(replayed_store):
    space = TWO
    sel = Selector(replayed_store.entries, GEMM.bucket, space.default_config)
    for problem in LEFT_OUT:
        for nearest in (False, True):  # served, and first use's best bet
            choice = next(c for c in sel.choices(problem, nearest)
                          if not space.violations(c.config, problem))
            default = space.default_config(problem)
            assert space.time_ms(choice.config, problem) <= space.time_ms(default, problem)
    # and the evidence ranks first use's candidates: each class's winner first in its class
    assert sel.choices(LEFT_OUT[0], nearest=True)[0].config == TWO.TRAP
    assert sel.choices(LEFT_OUT[2], nearest=True)[0].config == TWO.WIDE


def test_the_nearest_config_alone_would_have_lost(replayed_store):
    # 100x2048 is a wide shape whose nearest tuned shape is the skinny 48x2048: its TRAP config
    # is 2.5x the default there. The old rule took it; the evidence rule does not.
    problem = LEFT_OUT[1]
    nearest = min((k for k in replayed_store.entries),
                  key=lambda k: GEMM.bucket.distance(problem, Problem.from_key(k)))
    assert replayed_store.entries[nearest].config == TWO.TRAP
    assert TWO.time_ms(TWO.TRAP, problem) > 2 * TWO.time_ms(TWO.default_config(problem), problem)
    sel = Selector(replayed_store.entries, GEMM.bucket, TWO.default_config)
    assert sel.choices(problem, nearest=True)[0].config != TWO.TRAP


# -- shape classes wider than "same default" (dispatch/classes.py) ------------------------------
def per_n_default(p):  # every N has its own default: no two shapes below share one
    return {**DEFAULT_CFG, "block_n": p["N"] // 128}


def class_entry(n, measured, vendor_ms=None):
    """A tuned 2048 x n x 4096 shape (all of one shape class) whose own default timed 1.0."""
    problem = gemm(2048, n)
    return entry(problem, measured[0][0], min(t for _, t in measured),
                 [*measured, (per_n_default(problem), 1.0)], vendor_ms=vendor_ms)


def class_selector(*entries, shape_class=gemm_class):
    return Selector({e.problem: e for e in entries}, GEMM.bucket, per_n_default, shape_class)


def test_a_config_that_won_on_two_peers_of_the_shape_class_serves_though_no_default_is_shared():
    store = class_selector(class_entry(4096, [(GOOD, 0.8)]), class_entry(6144, [(GOOD, 0.85)]))
    query = gemm(2048, 5120)
    assert gemm_class(query) == gemm_class(gemm(2048, 4096)) == gemm_class(gemm(2048, 6144))
    assert store.choices(query, nearest=True)[0].config == GOOD
    # the rule before the classes: no peer shares the query's default, so nothing serves
    assert [c.reason for c in class_selector(
        class_entry(4096, [(GOOD, 0.8)]), class_entry(6144, [(GOOD, 0.85)]),
        shape_class=None).choices(query, nearest=True)] == [DEFAULT]


def test_a_config_that_lost_to_its_peers_default_on_one_class_peer_is_never_borrowed():
    peers = (class_entry(4096, [(GOOD, 0.8)]), class_entry(6144, [(GOOD, 0.85)]),
             class_entry(7168, [(OTHER, 0.9), (GOOD, 1.02)]))
    query = gemm(2048, 5120)
    assert [c.reason for c in class_selector(*peers).choices(query, nearest=True)] == [DEFAULT]
    # only the leave-one-out's diagnostic rule takes it (2 wins outnumber 1 loss)
    tolerant = Selector({e.problem: e for e in peers}, GEMM.bucket, per_n_default,
                        tolerate_losses=True)
    assert tolerant.choices(query, nearest=True)[0].config == GOOD


def test_shapes_of_another_class_are_no_peers():
    # the same records, on M=16 shapes (another M regime): no evidence for a 2048-row query
    store = class_selector(*(entry(gemm(16, n), GOOD, 0.8,
                                   [(GOOD, 0.8), (per_n_default(gemm(16, n)), 1.0)])
                             for n in (4096, 6144)))
    assert [c.reason for c in store.choices(gemm(2048, 5120))] == [DEFAULT]


def test_the_vendor_serves_an_untuned_shape_only_with_recorded_evidence():
    query = gemm(2048, 5120)
    default = per_n_default(query)
    # no vendor time recorded on the peers: no vendor route, however slow the default there
    silent = class_selector(class_entry(4096, [(OTHER, 0.99)]), class_entry(6144, [(OTHER, 0.99)]))
    assert silent.vendor_faster(query, default) is None
    # the vendor beat each peer's own default by 20%: it serves the query's default route
    faster = class_selector(class_entry(4096, [(OTHER, 0.99)], vendor_ms=0.8),
                            class_entry(6144, [(OTHER, 0.99)], vendor_ms=0.8))
    assert "beat this config on 2 of 2" in faster.vendor_faster(query, default)
    # one peer where the vendor was slower than its default: no vendor route
    mixed = class_selector(class_entry(4096, [(OTHER, 0.99)], vendor_ms=0.8),
                           class_entry(6144, [(OTHER, 0.99)], vendor_ms=0.8),
                           class_entry(7168, [(OTHER, 0.99)], vendor_ms=1.01))
    assert mixed.vendor_faster(query, default) is None
