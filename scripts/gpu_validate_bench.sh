#!/usr/bin/env bash
# On a GPU machine with TVM staged (scripts/gpu_env.sh): the correctness sweep of gemm_sm90 over
# ragged, decode and suite shapes (and two fp16 shapes), then its benchmark over the suite;
# candidates compile on the machine's CPUs. Outputs: $OUT/val, $OUT/val16, $OUT/bench.
#   bash scripts/gpu_validate_bench.sh [autotune bench options, e.g. --store FILE]
source scripts/gpu_env.sh
W=$(nproc)
timeout ${VAL_TIMEOUT:-200} autotune validate gemm_sm90 --per-shape 8 --seed 4 --compile-workers $W \
  --shapes 1x4096x4096 16x6144x4096 77x1024x1000 128x4096x14336 333x520x136 1000x1024x4104 \
  2048x2048x2048 4096x4096x4096 --out $OUT/val 2>&1 | tail -n 5
timeout 120 autotune validate gemm_sm90 --dtype float16 --shapes 77x1024x1000 2048x2048x2048 \
  --per-shape 3 --seed 4 --compile-workers $W --out $OUT/val16 2>&1 | tail -n 3
timeout ${BENCH_TIMEOUT:-330} autotune bench gemm_sm90 --compile-workers $W --out $OUT/bench "$@" \
  2>&1 | tail -n 30
