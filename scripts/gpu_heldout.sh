#!/usr/bin/env bash
# Issue 18 on one GPU machine in one call, with no TVM there: every kernel comes prebuilt in an
# artifact index (README, "Running on a GPU machine"). Carry .bundle/device-site.tar.xz,
# .bundle/artifacts.tar.xz (the index); then
#   bash scripts/gpu_heldout.sh
# 1. the suite study (SUITE and its M=1/64 decode shapes, 16 trials each) and its store;
# 2. dispatch from that store on the held-out shapes: our kernel alone, default, cuBLAS,
#    dispatch (autotune compare);
# 3. a study of the held-out shapes and its store; autotune compare on them (our kernel vs
#    cuBLAS, and the study's reported time vs compare's);
# 4. autotune compare on the suite with its store.
# Studies run with --sampler random, whose proposals do not depend on the times: a --compile-only
# run of the same command filled the index. Results: $OUT/results.tgz.
source scripts/gpu_env.sh
IDX=$SCRATCH/artifacts && mkdir -p $IDX && tar -xJf .bundle/artifacts.tar.xz -C $IDX
export AUTOTUNE_ARTIFACTS=$IDX
R=$SCRATCH/results && rm -rf $R && mkdir -p $R
HELD=$(sed -n '/As a command-line list/,$p' studies/heldout_gemm_2026-11-23.md | grep -E '^ +[0-9]' | tr '\n' ' ')
SUITE=$(python3 -c "
from autotune.spaces.gemm_sm90 import SUITE, LLAMA3_8B_NK
print(' '.join(SUITE + tuple(f'{m}x{n}x{k}' for m in (1, 64) for n, k in LLAMA3_8B_NK)))")
STUDY="--trials 16 --sampler random --seed 0 --artifacts $IDX --gpus 0 --compile-workers 4 --no-progress"
trials_csv() {  # every trial of every study in a storage, one CSV
  python3 -c "
import sys, optuna, pandas as pd
from autotune.study import trials_table
s = sys.argv[1]
pd.concat([trials_table(optuna.load_study(study_name=n, storage=s)).assign(study=n)
           for n in optuna.get_all_study_names(s)]).to_csv(sys.argv[2], index=False)" "$@"
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
timeout ${SUITE_S:-210} autotune tune gemm_sm90 --shapes $SUITE $STUDY --storage sqlite:///$R/suite.db 2>&1 | tail -n 100 > $R/suite_study.log
python3 -m autotune.store export --space gemm_sm90 --storage sqlite:///$R/suite.db --out $R/store.json
timeout 120 autotune compare gemm --store $R/store.json --shapes $HELD --subset "M<=256" --rounds 5 --block --out $R/heldout_dispatch 2>&1 | tail -n 24
timeout ${HELD_S:-150} autotune tune gemm_sm90 --shapes $HELD $STUDY --storage sqlite:///$R/heldout.db 2>&1 | tail -n 60 > $R/heldout_study.log
python3 -m autotune.store export --space gemm_sm90 --storage sqlite:///$R/heldout.db --out $R/heldout_store.json
timeout 120 autotune compare gemm --store $R/heldout_store.json --shapes $HELD --subset "M<=256" --rounds 5 --block --out $R/heldout_tuned 2>&1 | tail -n 24
timeout ${SUITE_COMPARE_S:-90} autotune compare gemm --store $R/store.json --rounds 3 --out $R/suite 2>&1 | tail -n 36
trials_csv sqlite:///$R/suite.db $R/suite_trials.csv
trials_csv sqlite:///$R/heldout.db $R/heldout_trials.csv
rm -f $R/*.db
tar czf $OUT/results.tgz -C $R .
