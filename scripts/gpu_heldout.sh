#!/usr/bin/env bash
# Issue 18's held-out measurement on one warm GPU machine (studies/2026-11-23-h100-gemm-heldout/
# README.md has the calls of its day, when TVM travelled in two parts):
#   bash scripts/gpu_heldout.sh dispatch   # carry .bundle/artifacts.tar.xz
#   bash scripts/gpu_stage.sh              # a call for each of .bundle/stage-a, -b, ... but the
#                                          # last (scripts/device_bundle.py --with-tvm)
#   bash scripts/gpu_heldout.sh study      # carry the last .bundle/stage-* part
# dispatch (no TVM there: every kernel comes prebuilt, `python -m autotune.dispatch prebuild`):
#   autotune compare on the held-out shapes with the committed store (our kernel alone, default,
#   cuBLAS, dispatch; and inside a decoder-like graph), then on the 23-shape suite.
# study (TVM and the site unpacked from the staged parts, scripts/gpu_env.sh): a study of each
#   held-out shape (TRIALS, 16), its store,
#   autotune compare with that store (the study's reported winner time beside compare's), and
#   every trial as CSV.
# Results: $OUT/<step>.tgz.
set -e
SCRATCH=${TMPDIR:-/tmp}
R=$SCRATCH/results/$1 && rm -rf $R && mkdir -p $R
HELD=$(sed -n '/As a command-line list/,$p' studies/heldout_gemm_2026-11-23.md | grep -E '^ +[0-9]' | tr '\n' ' ')
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
case $1 in
dispatch)
  IDX=$SCRATCH/artifacts && mkdir -p $IDX && tar -xJf .bundle/artifacts.tar.xz -C $IDX
  python3 -m pip install -q --no-deps --no-index --no-build-isolation -e .
  export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 AUTOTUNE_ARTIFACTS=$IDX
  SUITE=$(python3 -c "from autotune.spaces.gemm_sm90 import SUITE; print(' '.join(SUITE))")
  set +e
  timeout 150 autotune compare gemm --shapes $HELD --subset "M<=256" --rounds 5 --block \
    --out $R/heldout_dispatch 2>&1 | tail -n 24
  timeout 120 autotune compare gemm --shapes $SUITE --subset "M<=256" --rounds 5 \
    --out $R/suite 2>&1 | tail -n 30
  ;;
study)
  source scripts/gpu_env.sh
  rm -f $SCRATCH/heldout.db  # fresh studies: a warm machine keeps the last call's database
  DB=sqlite:///$SCRATCH/heldout.db
  timeout ${STUDY_S:-330} autotune tune gemm_sm90 --shapes $HELD --trials ${TRIALS:-16} --gpus 0 \
    --compile-workers 15 --storage $DB --seed 0 --no-progress 2>&1 | tail -n 80 > $R/study.log
  python3 -m autotune.store export --space gemm_sm90 --storage $DB --out $R/heldout_store.json
  timeout 150 autotune compare gemm --store $R/heldout_store.json --shapes $HELD --subset "M<=256" \
    --rounds 5 --block --out $R/heldout_tuned 2>&1 | tail -n 24
  python3 -c "
import sys, optuna, pandas as pd
from autotune.study import trials_table
s = sys.argv[1]
pd.concat([trials_table(optuna.load_study(study_name=n, storage=s)).assign(study=n)
           for n in optuna.get_all_study_names(s)]).to_csv(sys.argv[2], index=False)" $DB $R/trials.csv
  ;;
*) echo "usage: gpu_heldout.sh dispatch|study" >&2; exit 2 ;;
esac
tar czf $OUT/$1.tgz -C $R .
