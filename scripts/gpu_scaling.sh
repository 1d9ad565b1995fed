#!/usr/bin/env bash
# Trials per minute of one gemm_sm90 study on 1 and 2 GPUs, locally and through Ray, each with
# a cold compile cache; then `compare` and the dispatch-overhead benchmark on the stored configs.
source scripts/gpu_env.sh
for run in "0" "0,1" "0 --ray" "0,1 --ray"; do
  tag=$(echo "$run" | tr -c 'a-z0-9' '_')
  AUTOTUNE_CACHE=$SCRATCH/cache_$tag timeout 150 python3 scripts/gpu_study.py gemm_sm90 --shape 4096x4096x4096 \
    --trials ${TRIALS:-80} --gpus $run --storage sqlite:///$OUT/scale_$tag.db --out $OUT/scaling.jsonl 2>&1 | tail -1
done
STORE=studies/configs/gemm_sm90/nvidia-h200.json
timeout 200 autotune compare gemm --store $STORE --artifacts $SCRATCH/dispatch --out $OUT/report 2>&1 | tail -14
timeout 60 python3 scripts/bench_dispatch_overhead.py --shape 2048x4096x4096 --store $STORE --artifacts $SCRATCH/dispatch --out $OUT/dispatch_overhead.json 2>&1 | tail -12
