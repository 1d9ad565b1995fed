#!/usr/bin/env bash
# On a GPU machine with TVM staged (scripts/gpu_env.sh): compile the correctness sweep and the
# benchmark there (16 CPUs), then run both. Outputs: $OUT/val, $OUT/bench (+ build logs).
#   bash scripts/gpu_validate_bench.sh [bench build args, e.g. --store FILE or shapes]
source scripts/gpu_env.sh
PROCS=$(nproc)
python3 scripts/validate_gemm_sm90.py build $SCRATCH/val --procs $((PROCS / 2)) > $OUT/val_build.log 2>&1 &
python3 scripts/bench_gemm_sm90.py build $SCRATCH/bench "$@" --procs $((PROCS / 2)) > $OUT/bench_build.log 2>&1
wait
grep -c compile_error $SCRATCH/val/manifest.json $SCRATCH/bench/manifest.json
timeout ${VAL_TIMEOUT:-150} python3 scripts/validate_gemm_sm90.py run $SCRATCH/val $OUT/val 2>&1 | tail -n 5
timeout ${BENCH_TIMEOUT:-330} python3 scripts/bench_gemm_sm90.py run $SCRATCH/bench $OUT/bench 2>&1 | tail -n 30
