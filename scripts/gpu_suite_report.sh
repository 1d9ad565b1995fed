#!/usr/bin/env bash
# After scripts/gpu_suite_study.sh, in two device calls (each fits the 10-minute limit):
#   bash scripts/gpu_suite_report.sh bench  # export the tuned configs; benchmark default, tuned,
#                                           # the space's seed configs and cuBLAS over the suite
#                                           # (ROUNDS interleaved timing rounds, default 3)
#   bash scripts/gpu_suite_report.sh use    # what users run on the store: the comparison report,
#                                           # the decoder block, dispatch overhead, custom-op tests
# Each call's outputs land in $OUT/results-<step>.tgz (a device call returns at most 8 files).
source scripts/gpu_env.sh
DB=sqlite:///$SCRATCH/suite.db
R=$SCRATCH/results-$1 && rm -rf $R && mkdir -p $R
export AUTOTUNE_ARTIFACTS=$SCRATCH/dispatch
if [ "$1" = bench ]; then
  python3 -m autotune.store export --space gemm_sm90 --storage $DB --root $SCRATCH/configs 2>&1 | tail -n 3
  STORE=$(ls $SCRATCH/configs/gemm_sm90/*.json | head -1)
  cp $STORE $R/
  timeout ${BENCH_TIMEOUT:-480} autotune bench gemm_sm90 --store $STORE --rounds ${ROUNDS:-3} \
    --compile-workers $(nproc) --out $R/bench 2>&1 | tail -n 30
else
  STORE=${STORE:-$(ls $SCRATCH/configs/gemm_sm90/*.json | head -1)}  # or a store file you name
  python3 -m autotune.dispatch prebuild --store $STORE --out $SCRATCH/dispatch --procs $(nproc) \
    > $R/prebuild.log 2>&1  # the kernels compare times, compiled on every core
  timeout 300 autotune compare gemm --store $STORE --artifacts $SCRATCH/dispatch --out $R/report 2>&1 | tail -n 40
  timeout 240 python3 examples/llama_block.py --store $STORE --artifacts $SCRATCH/dispatch --out $R/llama_block 2>&1 | tail -n 16
  timeout 60 python3 -m autotune.bench.dispatch_overhead --shape 2048x4096x4096 --store $STORE --artifacts $SCRATCH/dispatch --out $R/dispatch_overhead.json 2>&1 | tail -n 10
  timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_dispatch_gpu.py 2>&1 | tail -n 8 | tee $R/test_dispatch_gpu.log
fi
tar czf $OUT/results-$1.tgz -C $R .
