#!/usr/bin/env bash
# Issue 15's GPU check (the 4096^3 gemm_sm90 study of studies/2026-11-22-h200x2-runner): GPU
# trials per minute of the local and the Ray runner on 1 and 2 GPUs, warm compile cache, steady
# state. On one warm machine, after the calls that staged each .bundle/stage-* part (README):
#   bash scripts/gpu_scaling.sh warm measure  # fill the compile cache (runs thrown away), then
#                                             # the four runs again on fresh storages: the table
# TUNE_ARGS adds options to every run; by default the seeded random sampler, which proposes the
# same sequence in every run, so that one warming run (WARM_RUNS, default "--gpus 0,1"; "" for
# all four) compiles exactly what the measured runs ask for. (TPE's proposals follow the
# timings: a TPE run after the warm one asks for configs the cache lacks.)
# `autotune results` gives each study's device_trials and trials_per_min (completions between
# the first and the last trial that ran on a GPU). Writes $OUT/scaling.txt and the databases.
source scripts/gpu_env.sh
export AUTOTUNE_CACHE=$SCRATCH/cache_scaling
RUNS=("--gpus 0" "--gpus 0,1" "--gpus 0 --ray" "--gpus 0,1 --ray")
TUNE_ARGS=${TUNE_ARGS---sampler random} WARM_RUNS=${WARM_RUNS---gpus 0,1}
for phase in "$@"; do
  DB=$SCRATCH; runs=("${RUNS[@]}")
  [ "$phase" = warm ] && [ -n "$WARM_RUNS" ] && runs=("$WARM_RUNS")
  [ "$phase" = measure ] && DB=$OUT
  for run in "${runs[@]}"; do
    tag=$(echo "$run" | tr -c 'a-z0-9' '_')
    rm -f $DB/scale_$tag.db
    start=$SECONDS
    timeout ${RUN_TIMEOUT:-120} autotune tune gemm_sm90 --shapes 4096x4096x4096 \
      --trials ${TRIALS:-80} $run $TUNE_ARGS --seed 0 --final-top 0 --storage sqlite:///$DB/scale_$tag.db \
      --no-progress 2>&1 | tail -n 2
    echo "== $phase $run: $((SECONDS - start)) s wall" | tee -a $OUT/scaling.txt
    [ "$phase" = measure ] && { echo "== $run"; autotune results --storage sqlite:///$DB/scale_$tag.db; } \
      | tee -a $OUT/scaling.txt
  done
done
rm -f $OUT/*.db.lock  # a call returns at most 8 files: the table, the log and the databases
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader >> $OUT/scaling.txt
