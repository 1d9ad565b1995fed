"""Build here, run on a GPU machine: the shared machinery of the sm90 GEMM validation and
benchmark scripts.

`build_jobs` (needs TVM) compiles each (problem, config) job into a folder of artifacts that
travels to the GPU machine (cubin + launch description only, to stay under the transfer limit).
`run_jobs` (needs torch + cuda-bindings, no TVM) checks every job against a float32 reference on
fresh random inputs with poisoned outputs, and times the jobs asked for, with cuBLAS
(torch.matmul) timed in the same process, in interleaved rounds per shape. Jobs run in a
worker process with a per-job time limit, so one hanging kernel costs its own result, not the
run's.
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autotune.runner.timing import interleaved, time_cold, time_launches  # noqa: E402
from autotune.spaces.gemm_sm90 import GemmSm90Space  # noqa: E402

SPACE = GemmSm90Space()
JOB_TIMEOUT_S = 60
L2_ROTATE_BYTES = 256 << 20  # rotate input sets so timed runs do not sit in the 50-60 MB L2


def _build_one(args) -> dict:
    import tirx

    i, job, out = args
    problem = SPACE.parse_problem(job["problem"], job.get("dtype", "bfloat16"))
    entry = dict(job, id=i)
    t0 = time.time()
    try:
        art = tirx.build(SPACE.build(job["config"], problem), SPACE.arch)
        d = out / str(i)
        d.mkdir(exist_ok=True)
        (d / "kernel.cubin").write_bytes(art.cubin)
        (d / "artifact.json").write_text((art.path / "artifact.json").read_text())
        (d / "kernel.cu").write_text("")  # the source stays here: Artifact.load wants the file
        entry["resources"] = {"registers": art.resources.registers,
                              "spill_bytes": art.resources.spill_bytes,
                              "smem_bytes": art.resources.smem_bytes}
    except Exception as exc:  # recorded, and the job is skipped on the GPU
        entry["compile_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    entry["compile_s"] = round(time.time() - t0, 2)
    return entry


def build_jobs(jobs: list[dict], out: Path, procs: int = 1) -> None:
    """jobs: {"problem": "MxNxK", "dtype", "config", "time": bool, "tag"}. Writes out/<i>/ and
    out/manifest.json, compiling in `procs` processes; a job that fails to compile is recorded
    with its error and not run."""
    out.mkdir(parents=True, exist_ok=True)
    work = [(i, job, out) for i, job in enumerate(jobs)]
    with mp.get_context("spawn").Pool(procs) as pool:
        manifest = []
        for entry in pool.imap(_build_one, work):
            manifest.append(entry)
            print(f"[{len(manifest)}/{len(jobs)}] {entry['problem']} {entry.get('tag', '')} "
                  f"{entry.get('compile_error', entry.get('resources'))} {entry['compile_s']}s",
                  flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


# ---------------------------------------------------------------- GPU side (no TVM)
def _input_sets(problem, seed: int) -> list:
    per_set = SPACE.bytes_moved(problem)
    n = max(1, min(8, math.ceil(L2_ROTATE_BYTES / per_set)))
    return [SPACE.make_inputs(problem, seed + s, device="cuda") for s in range(n)]


def _validate(job: dict, art_dir: Path):
    """(result, kernel): the job's kernel checked on two fresh input draws, outputs poisoned."""
    import torch

    import tirx

    problem = SPACE.parse_problem(job["problem"], job.get("dtype", "bfloat16"))
    kernel = tirx.Kernel(tirx.Artifact.load(art_dir / str(job["id"])))
    result = {"id": job["id"]}
    errors = []
    for seed in (job["id"] * 7 + 1, job["id"] * 7 + 2):  # two fresh input draws per job
        inputs = SPACE.make_inputs(problem, seed, device="cuda")
        (out,) = [inputs[i] for i in SPACE.output_indices(problem)]
        out.fill_(float("nan"))  # poison: an unwritten element stays NaN
        kernel(*inputs)
        torch.cuda.synchronize()
        (ref,) = SPACE.reference(problem, inputs)
        unwritten = int(torch.isnan(out).sum())
        err = (torch.linalg.vector_norm(out.double() - ref.double())
               / torch.linalg.vector_norm(ref.double())).item()
        errors.append(err)
        if unwritten or not err <= SPACE.tolerance(problem):
            result["error"] = f"{unwritten} unwritten elements, relative error {err:.3g}"
            break
    result["rel_err"] = max(errors)
    result["ok"] = "error" not in result
    return result, kernel


def _time_shape(problem, timed: list[tuple[dict, object]], rounds: int, beat) -> dict:
    """Time cuBLAS and every kernel of one shape in `rounds` interleaved rounds over the same
    rotated input sets, each round in a rotated order, so clock and temperature drift hit all
    alike; per entry, the median over rounds of do_bench's median, and of the back-to-back
    timer's. Returns {id or "cublas": (ms, b2b_ms, ms per round)}."""
    import statistics

    sets = _input_sets(problem, 1000 + timed[0][0]["id"])
    vendor = [SPACE.vendor(problem, s) for s in sets]
    entries = {"cublas": [lambda f=f: f() for f in vendor]}
    for job, kernel in timed:
        entries[job["id"]] = [lambda s=s, k=kernel: k(*s) for s in sets]

    def both_timers(name):
        calls = entries[name]
        beat(name)
        def launch(i):
            calls[i]()

        return (time_cold(launch, len(calls)).median_ms,
                time_launches(launch, len(calls)).median_ms)

    per_round = interleaved({name: lambda n=name: both_timers(n) for name in entries}, rounds)
    return {name: (statistics.median(ms for ms, _ in rs), statistics.median(b for _, b in rs),
                   [ms for ms, _ in rs])
            for name, rs in per_round.items()}


def _worker(art_dir: str, jobs: list[dict], rounds: int, conn) -> None:
    """Validate every job; time a shape's valid timed jobs together (`_time_shape`). Sends
    {"running": id} before each step (the parent's hang watch), then one result per job."""
    shapes: dict[tuple, list[dict]] = {}
    for job in jobs:
        shapes.setdefault((job["problem"], job.get("dtype", "bfloat16")), []).append(job)
    for (text, dtype), group in shapes.items():
        timed = []
        for job in group:
            conn.send({"running": job["id"]})
            try:
                res, kernel = _validate(job, Path(art_dir))
            except Exception as exc:
                res = {"id": job["id"], "ok": False, "error": f"{type(exc).__name__}: {exc}"[:400],
                       "trace": traceback.format_exc()[-800:]}
            if res["ok"] and job.get("time"):
                timed.append((job, kernel, res))
            else:
                conn.send(res)
        if not timed:
            continue
        problem = SPACE.parse_problem(text, dtype)
        flops = SPACE.flops(problem)
        try:
            # a hang in cuBLAS's turn is charged to the shape's first job
            first = timed[0][0]["id"]
            times = _time_shape(
                problem, [(j, k) for j, k, _ in timed], rounds,
                lambda name: conn.send({"running": first if name == "cublas" else name}))
        except Exception as exc:
            for _, _, res in timed:
                error = f"timing: {type(exc).__name__}: {exc}"[:400]
                conn.send({**res, "ok": False, "error": error})
            continue
        cub_ms, cub_b2b, cub_rounds = times["cublas"]
        for job, _, res in timed:
            t_ms, t_b2b, per_round = times[job["id"]]
            conn.send({**res, "ms": t_ms, "tflops": flops / t_ms / 1e9, "ms_rounds": per_round,
                       "b2b_ms": t_b2b, "cublas_ms": cub_ms, "cublas_tflops": flops / cub_ms / 1e9,
                       "cublas_b2b_ms": cub_b2b, "cublas_ms_rounds": cub_rounds,
                       "rounds": rounds})
    conn.send(None)


def run_jobs(art_dir: Path, results_path: Path, rounds: int = 1) -> list[dict]:
    """Run every compiled job; append one JSON line per job to results_path as it finishes.
    Timed jobs of a shape are timed together with cuBLAS in `rounds` interleaved rounds. A job
    that makes no progress within JOB_TIMEOUT_S (a hang) or kills its worker is recorded as
    failed, and a fresh worker goes on with the rest."""
    manifest = json.loads((art_dir / "manifest.json").read_text())
    pending = [j for j in manifest if "compile_error" not in j]
    results = []
    ctx = mp.get_context("spawn")
    with results_path.open("a") as log:
        while pending:
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(str(art_dir), pending, rounds, child),
                               daemon=True)
            proc.start()
            running = pending[0]["id"]
            while True:
                if not parent.poll(JOB_TIMEOUT_S):
                    res = {"id": running, "ok": False,
                           "error": f"no result in {JOB_TIMEOUT_S}s (hang?)"}
                    proc.kill()
                    proc.join()
                else:
                    try:
                        res = parent.recv()
                    except EOFError:  # the worker died (e.g. a fatal CUDA error)
                        proc.join()
                        res = {"id": running, "ok": False,
                               "error": f"no result: worker exited with {proc.exitcode}"}
                    if res is None:
                        proc.join()
                        pending = []
                        break
                    if "running" in res:
                        running = res["running"]
                        continue
                job = next(j for j in pending if j["id"] == res["id"])
                res = {**job, **res}
                results.append(res)
                log.write(json.dumps(res) + "\n")
                log.flush()
                pending = [j for j in pending if j["id"] != res["id"]]
                print(f"{res['problem']:>18} {res.get('tag', ''):>10} ok={res['ok']} "
                      f"err={res.get('rel_err', float('nan')):.2e} "
                      f"tflops={res.get('tflops', float('nan')):.1f} "
                      f"{res.get('error', '')}", flush=True)
                if res.get("error", "").startswith("no result"):
                    break  # the worker is gone: start a fresh one on what is left
    return results


def gpu_state() -> str:
    """SM clock, temperature, power draw and limit, and throttle reasons (nvidia-smi): large
    GEMMs run at the power limit, and their times move with it."""
    import subprocess

    fields = "clocks.sm,temperature.gpu,power.draw,power.limit,clocks_event_reasons.active"
    try:
        query = ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader", "-i", "0"]
        return subprocess.run(query, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable: {exc}"


def device_info() -> dict:
    import torch

    return {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "cuda": torch.version.cuda, "sms": torch.cuda.get_device_properties(0).multi_processor_count,
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "gpu_state_before": gpu_state()}
