#!/usr/bin/env bash
# The Hopper attention's checks on a GPU machine (no TVM there), from binaries prebuilt on a CPU
# machine and carried in .prebuilt:
#   python -m autotune.bench.attention build .prebuilt/fa4_sm90_bench --jobs N
#   python tests/fa4_sm90_kernels.py .prebuilt/fa4_sm90
# runs the benchmark (autotune.bench.attention: the shapes and the decoder block's) and
# writes the store it makes (studies/configs/fa4_sm90/), then the GPU correctness tests
# (tests/gpu_fa4_sm90.sh: the defaults' matrix and the sampled sweep).
# Usage: scripts/gpu_fa4_sm90_checks.sh OUT. Env: BENCH_S, TESTS_S (time limits).
OUT=${1:?usage: scripts/gpu_fa4_sm90_checks.sh OUT}
SCRATCH=${TMPDIR:-/tmp}  # what does not come back (a call returns at most 8 files of $OUT)
export PYTHONPATH=$PWD:$PWD/tests PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/run.log
timeout ${BENCH_S:-300} python3 -m autotune.bench.attention run .prebuilt/fa4_sm90_bench $OUT \
  > $SCRATCH/bench.log 2>&1; echo "bench rc=$? at $SECONDS s" | tee -a $OUT/run.log
python3 -m autotune.bench.attention store $OUT/attention_sm90_bench.jsonl --root $SCRATCH \
  2>&1 | tail -1 | tee -a $OUT/run.log
cp $SCRATCH/fa4_sm90/*.json $OUT/
timeout ${TESTS_S:-200} bash tests/gpu_fa4_sm90.sh $SCRATCH/gpu_tests > /dev/null 2>&1
tail -15 $SCRATCH/gpu_tests/pytest.log | tee $OUT/gpu_tests.txt
cat $SCRATCH/gpu_tests/hung.txt >> $OUT/gpu_tests.txt
echo "done at $SECONDS s" | tee -a $OUT/run.log
