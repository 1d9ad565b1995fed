#!/usr/bin/env bash
# Issue 15's GPU check (the 4096^3 gemm_sm90 study of studies/results/core_h200x2): GPU trials
# per minute of the local and the Ray runner on 1 and 2 GPUs, warm compile cache, steady state.
# Two calls to one warm machine, after the TVM bundle calls (README):
#   bash scripts/gpu_scaling.sh warm      # fills the compile cache: each run once, thrown away
#   bash scripts/gpu_scaling.sh measure   # the four runs again, fresh storages; the table
# `autotune results` gives each study's device_trials and trials_per_min (completions between
# the first and the last trial that ran on a GPU). Writes $OUT/scaling.txt and the databases.
source scripts/gpu_env.sh
export AUTOTUNE_CACHE=$SCRATCH/cache_scaling
DB=$SCRATCH; [ "$1" = measure ] && DB=$OUT
for run in "--gpus 0" "--gpus 0,1" "--gpus 0 --ray" "--gpus 0,1 --ray"; do
  tag=$(echo "$run" | tr -c 'a-z0-9' '_')
  rm -f $DB/scale_$tag.db
  timeout ${RUN_TIMEOUT:-120} autotune tune gemm_sm90 --shapes 4096x4096x4096 --trials ${TRIALS:-80} \
    $run --seed 0 --final-top 0 --storage sqlite:///$DB/scale_$tag.db --no-progress 2>&1 | tail -n 2
  [ "$1" = measure ] && { echo "== $run"; autotune results --storage sqlite:///$DB/scale_$tag.db; } \
    | tee -a $OUT/scaling.txt
done
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader >> $OUT/scaling.txt
