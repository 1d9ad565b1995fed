#!/usr/bin/env bash
# Issue 3 on a GPU machine: fault survival (real deadlock / illegal-address kernels), then the
# same gemm_sm90 study on 1 GPU, on 2 GPUs, and on 2 GPUs through Ray, each with a cold compile
# cache so that the runs are comparable. Writes under $OUT.
source scripts/gpu_env.sh
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee $OUT/devices.txt
python3 -c "import tvm, optuna, ray, torch; print('tvm', tvm.__version__, 'optuna', optuna.__version__, 'ray', ray.__version__, 'torch', torch.__version__)" | tee -a $OUT/devices.txt
timeout 240 python3 -m pytest -p no:cacheprovider -v tests/test_runner_gpu_faults.py 2>&1 | tee $OUT/gpu_faults.log | tail -5
TRIALS=${TRIALS:-32}
for run in "0" "0,1" "0,1 --ray"; do
  tag=$(echo "$run" | tr -c 'a-z0-9' '_')
  AUTOTUNE_CACHE=$SCRATCH/cache_$tag timeout 200 python3 scripts/gpu_study.py gemm_sm90 --shape 4096x4096x4096 \
    --trials $TRIALS --gpus $run --storage sqlite:///$OUT/study_$tag.db --out $OUT/study_runs.jsonl 2>&1 \
    | grep -v "^\s*$" | tail -4
done
