#!/usr/bin/env bash
# The Hopper attention's checks on a GPU machine with TVM staged (README "Running on a GPU
# machine": a call that staged .bundle/tvm-a, then these, carrying .bundle and .prebuilt), its
# CPU cores compiling what is not prebuilt. Two back-to-back calls (one command is 10 minutes):
#   scripts/gpu_fa4_sm90_checks.sh OUT          the compile sweep record (in the background),
#       the sampled GPU correctness sweep's and the benchmark's binaries; the benchmark and the
#       store it makes (autotune.bench.attention), the GPU correctness tests
#       (tests/gpu_fa4_sm90.sh); leaves a copy of the tree, store included, in $TMPDIR/work
#   (cd $TMPDIR/work && scripts/gpu_fa4_sm90_checks.sh OUT block)    dispatch's kernels for the
#       decoder block (that store's configs), then scripts/gpu_attention_use.sh
# Env: SWEEP_JOBS, BENCH_S, TESTS_S (time limits).
OUT=${1:?usage: scripts/gpu_fa4_sm90_checks.sh OUT [block]}
SCRATCH=${TMPDIR:-/tmp}
STORE=studies/configs/fa4_sm90
source scripts/gpu_env.sh
if [ "${2:-}" = block ]; then
  H100="NVIDIA H100 80GB HBM3"
  for space in fa4_sm90 gemm_sm90; do
    op=$([ $space = fa4_sm90 ] && echo attention || echo gemm)
    python3 -m autotune.dispatch prebuild --space $space --device "$H100" --no-stored \
      --out .dispatch --procs 12 --shapes $(python3 examples/llama_block.py --list-shapes $op \
      --decode 1 8 32 64 --prefill 512 2048 4096) 2>&1 | tail -2
  done
  python3 -m autotune.dispatch prebuild --space fa4_sm90 --no-stored --out .dispatch \
    --shapes 4x4096/16/128 4x4096/16/128/causal 64x4x1025/8/128 2>&1 | tail -1
  bash scripts/gpu_attention_use.sh $OUT
  exit
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/run.log
python3 - ${SWEEP_JOBS:-8} $OUT/fa4_sm90_compile_sweep.jsonl > $SCRATCH/sweep.log 2>&1 <<'PY' &
import sys
from pathlib import Path
from fa4_sm90_kernels import ARCH, build_config, identity, sweep_configs
from tirx import sweep
rows = sweep.run(sweep_configs(), build_config, ARCH, Path(sys.argv[2]), identity(),
                 int(sys.argv[1]))
print(f"{len(rows)}/{len(sweep_configs())} recorded, {len(sweep.bad_rows(rows))} bad")
PY
SWEEP=$!
names=$(python3 -c "import fa4_sm90_kernels as K; print(' '.join(n for n in K.KERNELS
  if not (K.PREBUILT / n / 'artifact.json').exists()))")
echo "to build: $(echo $names | wc -w) test binaries" | tee -a $OUT/run.log
echo $names | xargs -n 4 -P 6 python3 tests/fa4_sm90_kernels.py .prebuilt/fa4_sm90 >> $OUT/run.log 2>&1
python3 -m autotune.bench.attention build .prebuilt/fa4_sm90_bench --jobs 6 >> $OUT/run.log 2>&1
timeout ${BENCH_S:-240} python3 -m autotune.bench.attention run .prebuilt/fa4_sm90_bench $OUT \
  > $SCRATCH/bench.log 2>&1; echo "bench rc=$?" | tee -a $OUT/run.log
python3 -m autotune.bench.attention store $OUT/attention_sm90_bench.jsonl --root $SCRATCH/configs \
  2>&1 | tail -1
mkdir -p $STORE && cp $SCRATCH/configs/fa4_sm90/*.json $STORE/ && cp $STORE/*.json $OUT/
rm -rf $SCRATCH/work && mkdir -p $SCRATCH/work && cp -r . $SCRATCH/work/
timeout ${TESTS_S:-150} bash tests/gpu_fa4_sm90.sh $SCRATCH/gpu_tests > /dev/null 2>&1
tail -15 $SCRATCH/gpu_tests/pytest.log | tee $OUT/gpu_tests.txt
cat $SCRATCH/gpu_tests/hung.txt >> $OUT/gpu_tests.txt
wait $SWEEP; tail -2 $SCRATCH/sweep.log | tee -a $OUT/run.log
