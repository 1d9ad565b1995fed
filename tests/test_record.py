"""Recordings (autotune/record): the plan (uniform legal sample, one-knob neighbourhoods), the
compiled bundle (resumable, failures kept), reading measurements into a dataset, and replaying
it within the recorded spread, deterministically for a seed."""

import json
import random
import statistics
from pathlib import Path

import pytest

import pandas as pd

from autotune.record.bundle import (HEADER, compile_bundle, pack, plan, read_jobs, write_header)
from autotune.record.dataset import Recording, choices_by_text, row_config
from autotune.record.ingest import fastest_configs, ingest, merge
from autotune.record.measure import META, RESULTS, VENDOR, done_so_far
from autotune.runner import RecordedTable, replay
from autotune.runner.base import Candidate, Compiled
from autotune.spaces import get_space
from autotune.spaces.sampling import config_key, neighbours, uniform_legal
from autotune.testing.synthetic import SyntheticCompileError, SyntheticSpace

SYNTH = SyntheticSpace(faults={"compile": [{"block_n": 128}]})
SYNTH_PROBLEM = SYNTH.parse_problem("128x48x32")
GEMM = get_space("gemm_sm90")
GEMM_PROBLEM = GEMM.parse_problem("64x28672x4096")


def test_uniform_sample_is_legal_distinct_and_estimates_the_space_size():
    exact = len(SYNTH.legal_configs(SYNTH_PROBLEM))
    drawn = uniform_legal(SYNTH, SYNTH_PROBLEM, 1000, random.Random(0))
    assert len(drawn.configs) == exact  # asked for more than there are: every legal one, once
    assert len({config_key(c) for c in drawn.configs}) == exact
    assert not any(SYNTH.violations(c, SYNTH_PROBLEM) for c in drawn.configs)
    estimate, margin = drawn.legal_estimate
    assert abs(estimate - exact) <= 2 * margin + 1
    assert drawn.product == 4 * 4 * 4


def test_neighbours_are_every_legal_one_knob_change():
    centre = GEMM.default_config(GEMM_PROBLEM)
    found = neighbours(GEMM, GEMM_PROBLEM, centre)
    expected = [{**centre, k: v} for k, d in GEMM.parameters(GEMM_PROBLEM).items()
                for v in d.choices if v != centre[k]
                and not GEMM.violations({**centre, k: v}, GEMM_PROBLEM)]
    assert found == expected and len(found) > 10
    assert all(sum(c[k] != centre[k] for k in centre) == 1 for c in found)


def test_plan_starts_like_a_study_then_neighbourhoods_then_a_seeded_uniform_sample():
    best = {**GEMM.default_config(GEMM_PROBLEM), "stages": 3}
    jobs, info = plan(GEMM, GEMM_PROBLEM, 50, seed=1, centres=[best])
    sources = [s for s, _ in jobs]
    assert sources[0] == "default" and sources[1] == "seed"
    first_uniform = sources.index("uniform")
    assert set(sources[first_uniform:]) == {"uniform"}
    assert "neighbourhood-1" in sources[:first_uniform]
    assert sources.count("uniform") <= 50  # those already planned as neighbours are not repeated
    assert len({config_key(c) for _, c in jobs}) == len(jobs)
    assert not any(GEMM.violations(c, GEMM_PROBLEM) for _, c in jobs)
    assert jobs == plan(GEMM, GEMM_PROBLEM, 50, seed=1, centres=[best])[0]
    assert jobs != plan(GEMM, GEMM_PROBLEM, 50, seed=2, centres=[best])[0]
    # estimated 2,765,000 with the column split (schedule cooperative_n, wg_m=192), 2,230,000
    # with BLK_N in steps of 8 up to 256, 1,200,000 with the epi_tail knob
    # (its 'narrow' builds another kernel only at odd multiples of 16), 835,000 with clusters of
    # four (477,000 with the ping-pong schedule, 360,000 before it, with three consumers;
    # 270,363 before them, 120,840-191,040 before stream-K took clusters)
    assert 2_500_000 < info["plan"]["legal_estimate"] < 3_000_000


def fake_compiler(calls: list):
    """Writes an artifact directory as tirx would (its files' content is irrelevant here)."""

    def compile_(space, config, problem, cache_dir=None):
        calls.append(config)
        if space.fault(config) == "compile":
            raise SyntheticCompileError("nvrtc", "error: no such instruction")
        path = Path(cache_dir) / f"k{len(calls)}"
        path.mkdir(parents=True)
        for name in ("kernel.cubin", "artifact.json", "kernel.cu"):
            (path / name).write_text(name)
        return Compiled(str(path), {"registers": 96})

    return compile_


def file_compiler(space, config, problem, cache_dir=None):
    """fake_compiler's behaviour as a module-level function: worker processes import it."""
    if space.fault(config) == "compile":
        raise SyntheticCompileError("nvrtc", "error: no such instruction")
    path = Path(cache_dir) / "k{block_m}_{block_n}_{stages}".format(**config)
    path.mkdir(parents=True, exist_ok=True)
    for name in ("kernel.cubin", "artifact.json", "kernel.cu"):
        (path / name).write_text(name)
    return Compiled(str(path), {"registers": 96})


def test_a_bundle_compiled_by_worker_processes_is_the_one_compiled_in_order(tmp_path):
    jobs, _ = plan(SYNTH, SYNTH_PROBLEM, 12, seed=0)
    jobs = [(SYNTH_PROBLEM, s, c) for s, c in jobs]
    for n in (1, 2):
        compile_bundle(SYNTH, jobs, tmp_path / f"b{n}", str(tmp_path / f"cache{n}"),
                       compiler=file_compiler, processes=n)
    serial, parallel = read_jobs(tmp_path / "b1"), read_jobs(tmp_path / "b2")
    assert len(serial) == 13 and any("cause" in j for j in serial)
    assert parallel == serial  # the same jobs, failures and artifacts, in the plan's order


def make_bundle(tmp_path) -> tuple[Path, list]:
    jobs, info = plan(SYNTH, SYNTH_PROBLEM, 12, seed=0)
    folder = tmp_path / "bundle"
    write_header(folder, SYNTH, {SYNTH_PROBLEM.key: info}, "autotune record synthetic")
    calls = []
    compile_bundle(SYNTH, [(SYNTH_PROBLEM, s, c) for s, c in jobs], folder,
                   str(tmp_path / "cache"), compiler=fake_compiler(calls))
    return folder, calls


def test_bundle_compiles_each_job_once_keeps_failures_and_resumes(tmp_path):
    folder, calls = make_bundle(tmp_path)
    jobs = read_jobs(folder)
    assert len(jobs) == len(calls) == 13  # the default + 12 drawn (all legal, none repeated)
    failed = [j for j in jobs if "cause" in j]
    assert [j["config"] for j in failed] == [c for c in calls if SYNTH.fault(c) == "compile"]
    assert all(j["cause"] == "compile" and "no such instruction" in j["error"] for j in failed)
    assert all((folder / j["artifact"] / "kernel.cubin").exists() for j in jobs
               if "cause" not in j)
    jobs_again, _ = plan(SYNTH, SYNTH_PROBLEM, 12, seed=0)
    compile_bundle(SYNTH, [(SYNTH_PROBLEM, s, c) for s, c in jobs_again], folder,
                   str(tmp_path / "cache"), compiler=fake_compiler(calls))
    assert len(calls) == 13 and read_jobs(folder) == jobs  # nothing compiled twice
    assert json.loads((folder / HEADER).read_text())["target"] == \
        "autotune.testing.synthetic:SyntheticSpace"
    archive = pack(folder, tmp_path / "b.tar.xz")
    assert archive.stat().st_size > 0


def write_measurements(folder: Path, jobs: list, rounds: int) -> dict:
    """What measure.py writes: per job and round a time, or a failure (round -1)."""
    times = {}
    folder.mkdir()
    unmeasured = [j for j in jobs if "cause" not in j][-1]  # out of time before it
    with open(folder / RESULTS, "w") as out:
        for r in range(rounds):
            out.write(json.dumps({"id": f"{VENDOR}|{SYNTH_PROBLEM.key}", "round": r,
                                  "time_ms": 0.5 + r * 0.01}) + "\n")
            for i, job in enumerate(jobs):
                if job is unmeasured:
                    continue
                if "cause" in job:
                    if r == 0:
                        out.write(json.dumps({"id": job["id"], "round": -1, "cause": "compile",
                                              "error": job["error"]}) + "\n")
                    continue
                t = 1.0 + i + 0.1 * r
                times.setdefault(job["id"], []).append(t)
                out.write(json.dumps({"id": job["id"], "round": r, "time_ms": t}) + "\n")
    (folder / META).write_text(json.dumps({"runs": [{
        "device": "NVIDIA H100 80GB HBM3", "date": "2026-11-23 05:00:00 UTC", "timer": "graph",
        "command": "python -m autotune.record.measure b out", "torch": "2.11", "cuda": "13.0",
        "driver": "13.0", "python": "3.12.3"}]}))
    return times


def test_ingest_keeps_median_spread_and_causes_and_replays_within_the_spread(tmp_path):
    folder, _ = make_bundle(tmp_path)
    jobs = read_jobs(folder)
    times = write_measurements(tmp_path / "out", jobs, rounds=3)
    failed = sum("cause" in j for j in jobs)
    assert failed >= 1
    assert len(done_so_far(tmp_path / "out")) == 3 + 3 * len(times) + failed  # a rerun skips
    recording = ingest(folder, tmp_path / "out", note="test")
    frame = recording.frame
    assert len(frame) == len(jobs) - 1 and recording.meta["unmeasured_jobs"] == 1
    assert recording.meta["device"] == "NVIDIA H100 80GB HBM3"
    assert recording.meta["problems"][SYNTH_PROBLEM.key]["vendor_ms"] == pytest.approx(0.51)
    timed = frame[frame["time_ms"].notna()]
    for job in jobs:
        if job["id"] in times:
            row = timed[(timed["block_m"] == job["config"]["block_m"])
                        & (timed["block_n"] == job["config"]["block_n"])
                        & (timed["stages"] == job["config"]["stages"])].iloc[0]
            t = times[job["id"]]
            assert (row["time_ms"], row["min_ms"], row["max_ms"], row["rounds"]) == \
                (statistics.median(t), min(t), max(t), 3)
    assert set(frame[frame["time_ms"].isna()]["cause"]) == {"compile"}
    fastest = min(times, key=lambda ident: statistics.median(times[ident]))
    assert fastest_configs(folder, tmp_path / "out") == {
        SYNTH_PROBLEM.key: next(j["config"] for j in jobs if j["id"] == fastest)}

    recording.write(tmp_path / "rec")
    table = RecordedTable.from_frame(recording.frame.drop(columns=["source"]))
    config = {k: timed.iloc[2][k] for k in ("block_m", "block_n", "stages")}
    config = {k: int(v) for k, v in config.items()}
    lo, hi = timed.iloc[2]["min_ms"], timed.iloc[2]["max_ms"]

    def draws(seed):
        runner = replay(table, seed=seed)
        out = [runner.run([Candidate(SYNTH, config, SYNTH_PROBLEM)])[0].time_ms
               for _ in range(20)]
        runner.close()
        return out

    first = draws(0)
    assert all(lo <= t <= hi for t in first) and len(set(first)) > 1
    assert draws(0) == first and draws(1) != first


def test_a_plan_to_add_to_a_recording_has_no_start_and_keeps_retimed_sources():
    best = {**GEMM.default_config(GEMM_PROBLEM), "stages": 3}
    again = [("uniform", {**best, "group": 16}), ("seed", best)]
    jobs, info = plan(GEMM, GEMM_PROBLEM, 0, centres=[best], start=False, retime=again)
    assert jobs[:2] == again  # measured again first, as recorded
    assert {s for s, _ in jobs[2:]} == {"neighbourhood-1"}
    # the centre and its neighbours, each once: the two measured again keep their first source
    assert [c for _, c in jobs[2:]] == [c for c in neighbours(GEMM, GEMM_PROBLEM, best)
                                        if c != again[0][1]]
    assert "default" not in {s for s, _ in jobs}
    assert info["plan"]["start"] is False and info["plan"]["retimed"] == 2


def measured_recording(tmp_path, name: str, shift: float, warm_ms: float | None) -> Recording:
    """A synthetic bundle measured in 3 rounds, times shifted by `shift`, under a warm-up."""
    folder, _ = make_bundle(tmp_path / name)
    write_measurements(tmp_path / name / "out", read_jobs(folder), rounds=3)
    meta = json.loads((tmp_path / name / "out" / META).read_text())
    if warm_ms is not None:
        meta["runs"][0]["warm_ms"] = warm_ms
    (tmp_path / name / "out" / META).write_text(json.dumps(meta))
    recording = ingest(folder, tmp_path / name / "out")
    recording.frame["time_ms"] += shift
    recording.frame["min_ms"] += shift
    recording.frame["max_ms"] += shift
    return recording


def test_timed_rows_come_fastest_first_as_space_values(tmp_path):
    recording = measured_recording(tmp_path, "a", 0.0, 50.0)
    timed = recording.timed(SYNTH, SYNTH_PROBLEM)
    times = recording.frame.set_index(recording.frame.apply(
        lambda r: (r["block_m"], r["block_n"], r["stages"]), axis=1))["time_ms"]
    ordered = [times[(c["block_m"], c["block_n"], c["stages"])] for _, c in timed]
    assert ordered == sorted(ordered) and len(timed) == recording.frame["time_ms"].notna().sum()
    assert all(isinstance(c["block_m"], int) for _, c in timed)
    near = recording.timed(SYNTH, SYNTH_PROBLEM, within_percent=100)
    assert 0 < len(near) < len(timed) and near == timed[:len(near)]
    assert set(recording.frame["warm_ms"].dropna()) == {50.0}


def test_merge_takes_new_times_keeps_sources_and_numbers_new_neighbourhoods(tmp_path):
    old = measured_recording(tmp_path, "old", 0.0, None)  # before measure.py had a warm-up
    old = Recording(old.frame.drop(columns=["warm_ms"]), old.meta)  # no warm_ms in the CSV
    old.frame.loc[1, "source"] = "neighbourhood-1"  # one neighbourhood recorded (its centre's)
    first = row_config(choices_by_text(SYNTH, SYNTH_PROBLEM), old.frame.loc[1])
    old.meta["problems"][SYNTH_PROBLEM.key]["plan"]["centres"] = [first, {"unmeasured": 1}]
    old.write(tmp_path / "rec")
    old = Recording.read(tmp_path / "rec")
    new = measured_recording(tmp_path, "new", 5.0, 200.0)
    by_text = choices_by_text(SYNTH, SYNTH_PROBLEM)
    known = {config_key(row_config(by_text, row)) for _, row in old.frame.iterrows()}
    centre = next(c for c in SYNTH.legal_configs(SYNTH_PROBLEM) if config_key(c) not in known)
    new.frame = pd.concat([new.frame, pd.DataFrame([{
        "problem": SYNTH_PROBLEM.key, "source": "neighbourhood-1", **centre, "time_ms": 0.5,
        "min_ms": 0.4, "max_ms": 0.6, "rounds": 3, "warm_ms": 200.0}])], ignore_index=True)
    new.meta["problems"][SYNTH_PROBLEM.key]["plan"]["centres"] = [centre]
    new.meta["problems"][SYNTH_PROBLEM.key]["vendor_ms"] = 0.7

    merged = merge(old, new)
    frame, n = merged.frame, len(old.frame)
    assert len(frame) == n + 1
    assert list(frame["source"][:n]) == list(old.frame["source"])  # sources kept
    timed = frame[:n][frame[:n]["time_ms"].notna()]
    assert (timed["time_ms"] > 5.0).all() and set(timed["warm_ms"]) == {200.0}  # all re-timed
    assert frame.iloc[-1]["source"] == "neighbourhood-2"  # after the one recorded
    assert frame.iloc[-1]["time_ms"] == 0.5
    info = merged.meta["problems"][SYNTH_PROBLEM.key]
    assert info["vendor_ms"] == 0.7 and info["vendor_ms_before"] == pytest.approx(0.51)
    assert info["plan"]["centres"] == [first, centre]  # the unmeasured one is not a source
    assert len(merged.meta["measuring_runs"]) == 2
    assert merged.meta["merges"][0]["added"] == {SYNTH_PROBLEM.key: 1}
    assert merged.meta["merges"][0]["measured_again"] == {SYNTH_PROBLEM.key: n}

    untouched = measured_recording(tmp_path, "warm", 0.0, 50.0)
    untouched = Recording(untouched.frame.drop(columns=["warm_ms"]), untouched.meta)
    kept = merge(untouched, Recording(new.frame.iloc[-1:].reset_index(drop=True), new.meta))
    assert set(kept.frame["warm_ms"].dropna()) == {50.0, 200.0}  # each row says its warm-up
    new.meta["template"] = "other"
    with pytest.raises(ValueError, match="different templates"):
        merge(old, new)


def test_measure_takes_bundles_and_results_in_pairs(capsys):
    from autotune.record.measure import main

    with pytest.raises(SystemExit):
        main(["b1", "out1", "b2"])
    assert "come in pairs" in capsys.readouterr().err
