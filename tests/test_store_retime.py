"""Re-timing a store from `autotune compare` tables (autotune/store/retime.py): the protocol's
times and timer, a stored config that lost to today's default gives way to it, a shape the
tables cannot re-time stops it with its name, and the entries a new default made stale can be
re-timed alone."""

import dataclasses
import json

import pandas as pd
import pytest

from autotune.errors import UserError
from autotune.runner.base import PROTOCOL
from autotune.spaces.base import Problem
from autotune.spaces.gemm_sm90 import GemmSm90Space
from autotune.store import ConfigStore, Entry, Header, config_id
from autotune.store.__main__ import main
from autotune.store.retime import read_tables, retime, stale_keys

SPACE = GemmSm90Space()
HEADER = Header(space="gemm_sm90", kernel="gemm", arch="sm_90a", device="NVIDIA H100 80GB HBM3",
                template="t", timer="graph-warm")
COLUMNS = ["problem", "tuned_ms", "default_ms", "vendor_ms", "note"]


def key(m, n=4096, k=4096):
    return Problem.of("bfloat16", M=m, N=n, K=k).key


def default(m):
    return SPACE.default_config(Problem.from_key(key(m)))


def tuned(m):  # a legal config other than the default: another pipeline depth
    return {**default(m), "stages": default(m)["stages"] - 1}


def old_store():
    store = ConfigStore(HEADER)
    for m, config in ((16, tuned(16)), (2048, tuned(2048)), (512, default(512))):
        store.entries[key(m)] = Entry(key(m), config, 0.5, 0.6, 0.7, source=f"study {m}",
                                      measured={"a1b2c3d4e5f6": 0.55})
    return store


def table(*rows):
    return pd.DataFrame(list(rows), columns=COLUMNS).set_index("problem")


ROWS = [(key(16), 0.010, 0.012, 0.011, "exact"),  # the tuned config still wins
        (key(2048), 0.110, 0.100, 0.105, "exact"),  # today's default beats it
        (key(512), 0.030, 0.030, 0.029, "exact; tuned is the default")]


def test_entries_take_the_tables_times_and_the_protocol_timer():
    out = retime(old_store(), SPACE, table(*ROWS))
    assert out.header.timer == PROTOCOL and out.header.template == "t"
    kept = out.entries[key(16)]
    assert (kept.config, kept.time_ms, kept.default_ms, kept.vendor_ms) == \
        (tuned(16), 0.010, 0.012, 0.011)
    # the old timer's record goes: a store never mixes timers
    assert kept.measured == {config_id(tuned(16)): 0.010, config_id(default(16)): 0.012}
    assert kept.source == "re-timed (kept; was study 16)"


def test_a_config_that_lost_to_todays_default_gives_way_to_it():
    lost = retime(old_store(), SPACE, table(*ROWS)).entries[key(2048)]
    assert (lost.config, lost.time_ms, lost.default_ms) == (default(2048), 0.100, 0.100)
    assert lost.measured == {config_id(tuned(2048)): 0.110, config_id(default(2048)): 0.100}
    assert lost.source.startswith("re-timed (lost to today's default")


def test_a_stored_default_is_timed_once():
    same = retime(old_store(), SPACE, table(*ROWS)).entries[key(512)]
    assert (same.config, same.time_ms, same.default_ms) == (default(512), 0.030, 0.030)
    assert same.measured == {config_id(default(512)): 0.030}


def test_a_stored_config_compare_refused_gives_way_to_the_default():
    rows = [ROWS[0], (key(2048), float("nan"), 0.100, 0.105, "exact; tuned refused"), ROWS[2]]
    assert retime(old_store(), SPACE, table(*rows)).entries[key(2048)].config == default(2048)


def test_shapes_the_tables_cannot_retime_are_named():
    rows = [ROWS[0], (key(512), 0.030, 0.030, 0.029, "nearest (M=256,...)")]
    with pytest.raises(UserError) as err:
        retime(old_store(), SPACE, table(*rows))
    assert f"no compare row for {key(2048)}" in str(err.value)
    assert f"another config than the stored one for {key(512)}" in str(err.value)


def test_a_row_naming_another_config_than_the_stored_one_stops_it():
    # compare's table names the config it ran (tuned_config): a store changed since the table
    named = table(*ROWS).assign(tuned_config=[json.dumps(tuned(16)), json.dumps(default(2048)),
                                              json.dumps(default(512))])
    with pytest.raises(UserError, match=f"another config than the stored one for {key(2048)}$"):
        retime(old_store(), SPACE, named)
    named.loc[key(2048), "tuned_config"] = json.dumps(tuned(2048))
    assert retime(old_store(), SPACE, named).entries[key(2048)].config == default(2048)


def test_tables_lose_their_geomean_rows_and_refuse_a_shape_timed_twice(tmp_path):
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    pd.DataFrame([ROWS[0], ("geomean", None, None, None, ""),
                  ("geomean M<=256", None, None, None, "")], columns=COLUMNS).to_csv(first)
    pd.DataFrame(ROWS[1:], columns=COLUMNS).to_csv(second)
    assert sorted(read_tables([first, second]).index) == sorted(r[0] for r in ROWS)
    with pytest.raises(UserError, match="more than once"):
        read_tables([first, first])


def test_the_command_writes_the_retimed_store_or_names_the_problem(tmp_path, capsys):
    path, csv = tmp_path / "store.json", tmp_path / "table.csv"
    old_store().write(path)
    pd.DataFrame(ROWS[:2], columns=COLUMNS).to_csv(csv)
    assert main(["retime", str(path), "--tables", str(csv)]) == 2
    assert f"no compare row for {key(512)}" in capsys.readouterr().err
    assert ConfigStore.read(path).header.timer == "graph-warm"  # nothing written
    pd.DataFrame(ROWS, columns=COLUMNS).to_csv(csv)
    assert main(["retime", str(path), "--tables", str(csv)]) == 0
    assert f"3 of 3 entries re-timed ({PROTOCOL}); 1 took today's default: {key(2048)}" \
        in capsys.readouterr().out
    assert ConfigStore.read(path).header.timer == PROTOCOL


def test_stale_names_the_entries_that_never_timed_todays_default():
    store = old_store()  # measured holds another config's time only: all three are stale
    assert stale_keys(store, SPACE) == sorted(store.entries)
    fresh = retime(store, SPACE, table(*ROWS))
    assert stale_keys(fresh, SPACE) == []
    # a default rule changes for one shape: that entry's default_ms is another config's time
    fresh.entries[key(16)] = dataclasses.replace(fresh.entries[key(16)],
                                                 measured={config_id(tuned(16)): 0.010})
    assert stale_keys(fresh, SPACE) == [key(16)]


def test_partial_retimes_the_listed_entries_and_keeps_the_others():
    store = retime(old_store(), SPACE, table(*ROWS))
    row = (key(16), 0.009, 0.008, 0.011, "exact")  # a new default now beats the tuned config
    out = retime(store, SPACE, table(row), partial=True)
    assert (out.entries[key(16)].config, out.entries[key(16)].time_ms) == (default(16), 0.008)
    assert out.entries[key(2048)] is store.entries[key(2048)]
    with pytest.raises(UserError, match=f"no compare row for {key(2048)}"):
        retime(store, SPACE, table(row))  # without partial every entry needs its row


def test_partial_refuses_a_store_under_another_timer_or_a_table_of_other_shapes():
    with pytest.raises(UserError, match="timed by 'graph-warm'.*re-time every entry"):
        retime(old_store(), SPACE, table(ROWS[0]), partial=True)
    store = retime(old_store(), SPACE, table(*ROWS))
    with pytest.raises(UserError, match="none of the store's shapes"):
        retime(store, SPACE, table((key(64), 0.01, 0.01, 0.01, "exact")), partial=True)


def test_the_stale_command_lists_shapes_compare_reads_back(tmp_path, capsys):
    path = tmp_path / "store.json"
    store = retime(old_store(), SPACE, table(*ROWS))
    store.entries[key(2048)] = dataclasses.replace(store.entries[key(2048)], measured={})
    store.write(path)
    assert main(["stale", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.split() == [key(2048)] and "1 of 3 entries" in err
    assert SPACE.parse_problem(out.strip()) == Problem.from_key(key(2048))


def test_stale_parts_split_the_list_and_a_bad_part_is_named(tmp_path, capsys):
    path = tmp_path / "store.json"
    old_store().write(path)  # all three entries stale
    parts = []
    for k in (1, 2):
        assert main(["stale", str(path), "--part", f"{k}/2"]) == 0
        out, err = capsys.readouterr()
        parts.append(out.split())
        assert f"part {k}/2: {len(parts[-1])}" in err
    assert sorted(parts[0] + parts[1]) == sorted(old_store().entries) and len(parts[0]) == 2
    assert main(["stale", str(path), "--part", "3/2"]) == 2
    assert "--part '3/2': expected K/N" in capsys.readouterr().err
