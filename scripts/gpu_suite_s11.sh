#!/usr/bin/env bash
# Session 11 on the GPU machine (issue 18: one timing truth), one step per call, the machine
# kept warm between them (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s11.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s11.sh site    # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s11.sh steady  # carry .bundle/tvm-b
# steady: how long a kernel must be held busy before its time repeats (scripts/steady_probe.py):
#   dispatch's pick (session 9's store) and cuBLAS on a decode shape and four of the shapes whose
#   study and compare times parted in sessions 9-10, each held 6 s three times (after 3 s idle,
#   then back to back in turn and in reverse), every ~5 ms replay timed.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
source scripts/gpu_env.sh
case $1 in
steady)
  STORE=studies/2026-11-24-h100-gemm-s9/study/s9_store.json
  SHAPES="46x8192x5376 168x15872x14848 421x51200x5120 4146x5120x25600 2816x9216x36864"
  export AUTOTUNE_ARTIFACTS=$SCRATCH/steady-idx
  python3 -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE --shapes $SHAPES \
    --no-stored --out $AUTOTUNE_ARTIFACTS --procs 15 > $R/prebuild.log 2>&1
  echo "prebuild rc=$? at $SECONDS s" | tee -a $R/run.log
  sample_clocks $R/clocks.csv
  timeout 420 python3 scripts/steady_probe.py $STORE $R/steady.csv $SHAPES 2>&1 | tail -40
  kill %1
  ;;
*) echo "usage: gpu_suite_s11.sh stage|site|steady" >&2
  exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
