#!/usr/bin/env bash
# The Hopper attention's checks on a GPU machine (no TVM there), from binaries prebuilt on a CPU
# machine and carried in .prebuilt:
#   python -m autotune.bench.attention build .prebuilt/fa4_sm90_bench --jobs N
#   python tests/fa4_sm90_kernels.py .prebuilt/fa4_sm90 [NAMES...]
# runs the GPU correctness tests (tests/gpu_fa4_sm90.sh: the defaults' matrix, the second Q
# stage, the sampled sweep; TESTS_K selects some with pytest -k), then the benchmark
# (autotune.bench.attention: the shapes and the decoder block's) and writes the store
# it makes (studies/configs/fa4_sm90/), then profiles the candidates named in NCU_LABELS (at
# NCU_SHAPE) with ncu.
# Usage: scripts/gpu_fa4_sm90_checks.sh OUT. Env: BENCH_S, TESTS_S (time limits), TESTS_K,
# NCU_LABELS, NCU_SHAPE.
OUT=${1:?usage: scripts/gpu_fa4_sm90_checks.sh OUT}
SCRATCH=${TMPDIR:-/tmp}  # what does not come back (a call returns at most 8 files of $OUT)
export PYTHONPATH=$PWD:$PWD/tests PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/run.log
timeout ${TESTS_S:-200} bash tests/gpu_fa4_sm90.sh $SCRATCH/gpu_tests ${TESTS_K:+-k "$TESTS_K"} \
  > /dev/null 2>&1
tail -15 $SCRATCH/gpu_tests/pytest.log | tee $OUT/gpu_tests.txt
cat $SCRATCH/gpu_tests/hung.txt >> $OUT/gpu_tests.txt
echo "tests done at $SECONDS s" | tee -a $OUT/run.log
timeout ${BENCH_S:-300} python3 -m autotune.bench.attention run .prebuilt/fa4_sm90_bench $OUT \
  > $SCRATCH/bench.log 2>&1; echo "bench rc=$? at $SECONDS s" | tee -a $OUT/run.log
python3 -m autotune.bench.attention store $OUT/attention_sm90_bench.jsonl --root $SCRATCH \
  2>&1 | tail -1 | tee -a $OUT/run.log
cp $SCRATCH/fa4_sm90/*.json $OUT/
for label in ${NCU_LABELS:-}; do
  timeout 90 ncu --clock-control none -k regex:attention --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
    --section InstructionStats --section MemoryWorkloadAnalysis --print-details all --csv \
    --page details python3 -m autotune.bench.attention launch .prebuilt/fa4_sm90_bench \
    $label ${NCU_SHAPE:-16x1024/16/128/causal} > $OUT/ncu_$label.csv 2>&1
  echo "ncu $label rc=$? at $SECONDS s" | tee -a $OUT/run.log
done
echo "done at $SECONDS s" | tee -a $OUT/run.log
