#!/usr/bin/env bash
# The Hopper attention's checks on a GPU machine with TVM staged (README "Running on a GPU
# machine": a call that staged .bundle/tvm-a, then these, carrying .bundle), its CPU cores
# compiling every binary (none is carried). Two back-to-back calls (a command has 10 minutes):
#   scripts/gpu_fa4_sm90_checks.sh OUT bench    the benchmark's binaries, then the benchmark
#       (autotune.bench.attention) and the store it makes while the GPU tests' binaries and the
#       compile sweep record (in $TMPDIR, resumable) compile; leaves the tree, store and
#       binaries included, in $TMPDIR/work for the next call
#   (cd $TMPDIR/work && scripts/gpu_fa4_sm90_checks.sh OUT block)    dispatch's kernels for
#       the decoder block (that store's configs) and scripts/gpu_attention_use.sh, the GPU
#       correctness tests (tests/gpu_fa4_sm90.sh), the rest of the compile sweep record
# Env: BENCH_S, TESTS_S, SWEEP_S (time limits).
OUT=${1:?usage: scripts/gpu_fa4_sm90_checks.sh OUT bench|block}
SCRATCH=${TMPDIR:-/tmp}
RECORD=$SCRATCH/fa4_sm90_compile_sweep.jsonl
LOG=$OUT/$([ "$2" = bench ] && echo run.log || echo gpu_fa4_sm90_tests.txt)  # 8 files come back
source scripts/gpu_env.sh
sweep() {  # compile what the record lacks, in $1 processes, for at most $2 seconds
  timeout $2 python3 - $1 $RECORD >> $SCRATCH/sweep.log 2>&1 <<'PY'
import sys
from pathlib import Path
from fa4_sm90_kernels import ARCH, build_config, identity, sweep_configs
from tirx import sweep
rows = sweep.run(sweep_configs(), build_config, ARCH, Path(sys.argv[2]), identity(),
                 int(sys.argv[1]))
print(f"{len(rows)}/{len(sweep_configs())} recorded, {len(sweep.bad_rows(rows))} bad")
PY
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $LOG
if [ "$2" = bench ]; then
  python3 -m autotune.bench.attention build .prebuilt/fa4_sm90_bench --jobs 14 >> $OUT/run.log 2>&1
  echo "bench binaries: $(ls .prebuilt/fa4_sm90_bench | wc -l) at $SECONDS s" | tee -a $OUT/run.log
  python3 tests/fa4_sm90_kernels.py .prebuilt/fa4_sm90 > $SCRATCH/tests_build.log 2>&1 &
  sweep 8 ${SWEEP_S:-400} &
  timeout ${BENCH_S:-300} python3 -m autotune.bench.attention run .prebuilt/fa4_sm90_bench $OUT \
    > $SCRATCH/bench.log 2>&1; echo "bench rc=$? at $SECONDS s" | tee -a $OUT/run.log
  python3 -m autotune.bench.attention store $OUT/attention_sm90_bench.jsonl \
    --root studies/configs 2>&1 | tail -1 | tee -a $OUT/run.log
  cp studies/configs/fa4_sm90/*.json $OUT/
  wait
  rm -rf $SCRATCH/work && mkdir -p $SCRATCH/work && cp -r . $SCRATCH/work/
else
  sweep 6 ${SWEEP_S:-420} &
  H100="NVIDIA H100 80GB HBM3"
  for space in fa4_sm90 gemm_sm90; do
    op=$([ $space = fa4_sm90 ] && echo attention || echo gemm)
    python3 -m autotune.dispatch prebuild --space $space --device "$H100" --out .dispatch \
      --procs 8 --no-stored --shapes $(python3 examples/llama_block.py --list-shapes $op \
      --decode 1 8 32 64 --prefill 512 2048 4096) 2>&1 | tail -1
  done
  python3 -m autotune.dispatch prebuild --space fa4_sm90 --device "$H100" --no-stored \
    --out .dispatch --shapes 4x4096/16/128 4x4096/16/128/causal 64x4x1025/8/128 2>&1 | tail -1
  ATTENTION_SHAPES="" bash scripts/gpu_attention_use.sh $OUT  # the bench compared attention
  timeout ${TESTS_S:-150} bash tests/gpu_fa4_sm90.sh $SCRATCH/gpu_tests > /dev/null 2>&1
  tail -15 $SCRATCH/gpu_tests/pytest.log >> $LOG
  cat $SCRATCH/gpu_tests/hung.txt >> $LOG
fi
wait
tail -2 $SCRATCH/sweep.log | tee -a $LOG
cp $RECORD $OUT/
