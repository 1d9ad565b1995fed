#!/usr/bin/env bash
# Issue 4 + 6 on a GPU machine: tune gemm_sm90 over the issue-4 suite plus the decoder block's
# decode extremes (M=1, 64; DECODE=0 leaves them out), resumably, in slices that fit one call:
#   bash scripts/gpu_suite_study.sh 1 2   # slice 1 of 2, then 2 of 2, back to back
# Env: TRIALS (16), BUDGET (420 s), FINAL_TOP (3), FINAL_ROUNDS (3).
# The study database stays under $TMPDIR between calls and is copied to $OUT after each.
source scripts/gpu_env.sh
DB=$SCRATCH/suite.db
SHAPES=$(python3 -c "
from autotune.spaces.gemm_sm90 import SUITE, LLAMA3_8B_NK
extra = tuple(f'{m}x{n}x{k}' for m in (1, 64) for n, k in LLAMA3_8B_NK) if ${DECODE:-1} else ()
shapes = SUITE + extra
print(' '.join(shapes[$1 - 1::$2]))")
echo "slice $1/$2: $SHAPES"
timeout ${BUDGET:-420} autotune tune gemm_sm90 --shapes $SHAPES --trials ${TRIALS:-16} --gpus 0 \
  --final-top ${FINAL_TOP:-3} --final-rounds ${FINAL_ROUNDS:-3} \
  --storage sqlite:///$DB --seed 0 --compile-workers 15 --no-progress 2>&1 | tail -n 40
autotune results --storage sqlite:///$DB 2>&1 | tail -n 40
cp $DB $OUT/
