"""Config store: file round trip and layout, header refusal, corrupt files, merging, export."""

import json
import warnings

import pytest

from autotune.spaces.base import Problem
from autotune.store import (ConfigStore, CorruptStoreError, Entry, Gpu, Header, MergeConflict,
                            StoreMismatchWarning, load_compatible, merge, merge_into,
                            store_path, template_hash)

HEADER = Header(space="gemm_sm90", kernel="gemm", arch="sm_90a", device="NVIDIA H200",
                template="abc123", driver="13.0", cuda="13.0", tvm="0.27.0.post1")


def entry(m, time_ms, n=4096, k=4096, **kw):
    key = Problem.of("bfloat16", M=m, N=n, K=k).key
    return Entry(problem=key, config={"blk_n": 128, "stages": 4, "m": m}, time_ms=time_ms, **kw)


def make_store(*entries, header=HEADER):
    store = ConfigStore(header)
    for e in entries:
        store.add(e)
    return store


def test_round_trip_keeps_every_field(tmp_path):
    store = make_store(entry(16, 0.02, default_ms=0.03, vendor_ms=0.025, source="study/1"),
                       entry(4096, 0.5, n=14336), entry(128, 0.1))
    path = store.write(tmp_path / "s.json")
    back = ConfigStore.read(path)
    assert back.header == HEADER
    assert back.entries == store.entries


def test_file_is_json_with_one_sorted_entry_per_line(tmp_path):
    store = make_store(entry(4096, 0.5), entry(16, 0.02), entry(128, 0.1))
    text = store.dumps()
    json.loads(text)
    lines = [line for line in text.splitlines() if line.startswith(' {"config"')]
    assert [json.loads(line.rstrip(","))["problem"].split(",")[0] for line in lines] == \
        ["M=16", "M=128", "M=4096"]  # numeric order, not string order
    assert text == make_store(entry(16, 0.02), entry(128, 0.1), entry(4096, 0.5)).dumps()


def test_empty_store_round_trips():
    assert ConfigStore.loads(ConfigStore(HEADER).dumps()).entries == {}


def test_problem_key_round_trip():
    p = Problem.of("float16", M=3, N=8, K=16)
    assert Problem.from_key(p.key) == p
    with pytest.raises(ValueError):
        Problem.from_key("M=3,N=8")


def test_problem_flags_round_trip_and_keep_their_type():
    p = Problem.of("bfloat16", seqlen=4096, head_dim=128, causal=True)
    assert p.key == "seqlen=4096,head_dim=128,causal=true,dtype=bfloat16"
    back = Problem.from_key(p.key)
    assert back == p and back["causal"] is True and back.flags == {"causal": True}
    assert back.sizes == {"seqlen": 4096, "head_dim": 128}
    with pytest.raises(ValueError, match="neither an integer nor true/false"):
        Problem.from_key("seqlen=4k,dtype=bfloat16")
    with pytest.raises(ValueError, match="neither an integer nor a flag"):
        Problem.of("bfloat16", scale=0.5)


@pytest.mark.parametrize("text, why", [
    ("{not json", "not valid JSON"),
    ('{"schema": 99, "header": {}, "entries": []}', "schema"),
    ('[1, 2]', "schema"),
    ('{"schema": 1, "entries": []}', "header"),
    ('{"schema": 1, "header": {"space": "x"}, "entries": []}', "schema 1"),
])
def test_corrupt_file_names_the_file(tmp_path, text, why):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(CorruptStoreError, match=str(path)) as exc:
        ConfigStore.read(path)
    assert why in str(exc.value)


@pytest.mark.parametrize("bad_entry", [
    {"problem": "M=1,N=8,K=8,dtype=bfloat16", "config": [1], "time_ms": 1.0},  # config not dict
    {"problem": "M=1,N=8,K=8", "config": {}, "time_ms": 1.0},  # key without dtype
    {"problem": "M=1,N=8,K=8,dtype=bfloat16", "config": {}},  # no time
    {"problem": "M=1,N=8,K=8,dtype=bfloat16", "config": {}, "time_ms": "fast"},
    {"problem": "M=1,N=8,K=8,dtype=bfloat16", "config": {}, "time_ms": 1.0, "color": "red"},
])
def test_corrupt_entry_is_an_error(tmp_path, bad_entry):
    data = json.loads(ConfigStore(HEADER).dumps())
    data["entries"] = [bad_entry]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CorruptStoreError, match="bad.json"):
        ConfigStore.read(path)


def test_duplicate_problem_is_an_error(tmp_path):
    data = json.loads(make_store(entry(16, 0.02)).dumps())
    data["entries"] *= 2
    with pytest.raises(CorruptStoreError, match="twice"):
        ConfigStore.loads(json.dumps(data), "dup.json")


def test_binary_file_is_an_error(tmp_path):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(CorruptStoreError, match="bin.json"):
        ConfigStore.read(path)


@pytest.mark.parametrize("field, value", [
    ("device", "NVIDIA H100 80GB HBM3"), ("arch", "sm_100a"), ("template", "changed"),
    ("space", "gemm_sm100"), ("kernel", "attention"),
])
def test_mismatching_header_is_refused_with_reason(tmp_path, field, value):
    path = make_store(entry(16, 0.02)).write(tmp_path / "s.json")
    expected = Header(**{**HEADER.__dict__, field: value})
    with pytest.warns(StoreMismatchWarning, match=f"{field} is .*{value}") as record:
        assert load_compatible(path, expected) is None
    assert str(path) in str(record[0].message)


def test_toolchain_differences_are_not_refused(tmp_path):
    path = make_store(entry(16, 0.02)).write(tmp_path / "s.json")
    expected = Header(**{**HEADER.__dict__, "driver": "14.0", "cuda": "13.1", "tvm": ""})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_compatible(path, expected).entries.keys() == {entry(16, 0).problem}


def test_missing_file_falls_back_with_warning(tmp_path):
    with pytest.warns(StoreMismatchWarning, match="no config store"):
        assert load_compatible(tmp_path / "none.json", HEADER) is None


def test_corrupt_file_is_an_error_not_a_fallback(tmp_path):
    path = tmp_path / "s.json"
    path.write_text("{")
    with pytest.raises(CorruptStoreError):
        load_compatible(path, HEADER)


def test_merge_keeps_better_entry_and_loses_none():
    a = make_store(entry(16, 0.020, source="a"), entry(128, 0.10, source="a"))
    b = make_store(entry(16, 0.018, source="b"), entry(128, 0.12, source="b"),
                   entry(512, 0.3, source="b"),
                   header=Header(**{**HEADER.__dict__, "driver": "13.1"}))
    merged = merge([a, b])
    assert {k: e.source for k, e in merged.entries.items()} == {
        entry(16, 0).problem: "b", entry(128, 0).problem: "a", entry(512, 0).problem: "b"}
    assert merged.header.driver == "13.0 | 13.1"
    assert merge([merged, a]).header.driver == "13.0 | 13.1"  # no "13.0 | 13.0 | 13.1"
    assert merge([b, a]).entries == merged.entries  # order does not matter


def test_merge_refuses_other_gpu_or_template():
    other = make_store(entry(16, 0.01), header=Header(**{**HEADER.__dict__, "device": "H100"}))
    with pytest.raises(MergeConflict, match="device"):
        merge([make_store(entry(16, 0.02)), other], ["mine.json", "theirs.json"])


def test_merge_into_creates_then_updates(tmp_path):
    path = tmp_path / "gemm_sm90" / "h200.json"
    merge_into(path, make_store(entry(16, 0.02)))
    merged = merge_into(path, make_store(entry(16, 0.03), entry(64, 0.04)))
    assert ConfigStore.read(path).entries == merged.entries
    assert merged.entries[entry(16, 0).problem].time_ms == 0.02


def test_store_path_and_template_hash(tmp_path):
    assert store_path("root", "gemm_sm90", "NVIDIA H100 80GB HBM3").as_posix() == \
        "root/gemm_sm90/nvidia-h100-80gb-hbm3.json"
    src = tmp_path / "t.py"
    src.write_text("a = 1")

    class Space:
        def template_files(self):
            return [str(src)]

    before = template_hash(Space())
    assert template_hash(Space()) == before
    src.write_text("a = 2")
    assert template_hash(Space()) != before


def test_export_from_studies_takes_best_and_default_times():
    optuna = pytest.importorskip("optuna")
    from autotune.store.export import store_from_studies

    class Space:
        name, kernel, arch = "gemm_sm90", "gemm", "sm_90a"

        def template_files(self):
            return []

    storage = optuna.storages.InMemoryStorage()
    key = Problem.of("bfloat16", M=16, N=4096, K=4096).key
    study = optuna.create_study(storage=storage, study_name=f"gemm_sm90/{key}")
    for attr, value in {"space": "gemm_sm90", "problem": key, "timed": True}.items():
        study.set_user_attr(attr, value)
    study.enqueue_trial({"x": 1}, user_attrs={"source": "default"})
    study.enqueue_trial({"x": 2})
    study.enqueue_trial({"x": 3})
    study.optimize(lambda t: {1: 0.05, 2: 0.03, 3: 0.04}[t.suggest_int("x", 1, 3)], n_trials=3)
    other = optuna.create_study(storage=storage, study_name="other")
    other.set_user_attr("space", "attention_sm90")
    store = store_from_studies(storage, Space(), Gpu("sm_90a", "NVIDIA H200", "13.0", "13.0"))
    assert list(store.entries) == [key]
    e = store.entries[key]
    assert (e.config, e.time_ms, e.default_ms, e.vendor_ms) == ({"x": 2}, 0.03, 0.05, None)
    assert store.header.device == "NVIDIA H200" and store.header.template == template_hash(Space())
