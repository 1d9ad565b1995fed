#!/usr/bin/env bash
# Session 13 on the GPU machine (issue 18: where our kernel loses to cuBLAS on large shapes),
# one step per call (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s13.sh ncu     # no TVM: the artifacts come prebuilt in ./ncu
#   bash scripts/gpu_suite_s13.sh source  # the same, with the stall samples per SASS instruction
#   bash scripts/gpu_suite_s13.sh power   # no TVM: variants.txt's kernels prebuilt in ./idx
#   bash scripts/gpu_suite_s13.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s13.sh site    # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s13.sh judge0  # carry .bundle/tvm-b (and judge4, study, after, tests)
# ncu: Nsight Compute (scripts/ncu_gemm.sh) over every shape folder in ./ncu, built here by
#   `scripts/ncu_gemm.py build ncu SHAPE --config TAG=JSON ...`: each config beside cuBLAS.
# source: ncu's SourceCounters (where in the SASS the warps wait) over ./ncu_source likewise.
# power: each line of variants.txt (a shape, then JSON configs) checked against the reference
#   (scripts/check_configs.py), then held busy with cuBLAS (scripts/power.py); the kernels come
#   from the artifact index ./idx, built here by `AUTOTUNE_ARTIFACTS=idx scripts/check_configs.py
#   --build-only`.
# judge0, judge4: studies/unseen_gemm_2026-11-24-s13.md (committed before measuring), compare
#   from the committed store with first use off, then on (4); study: an 8-trial study of each of
#   those shapes; after: compare with its store; tests: the GPU tests (gpu_suite_common.sh).
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
case $1 in
judge0|judge4|study|after)
  source scripts/gpu_env.sh
  unseen_step $1 studies/unseen_gemm_2026-11-24-s13.md s13
  ;;
tests)
  source scripts/gpu_env.sh
  gpu_tests
  ;;
ncu)
  ncu --query-metrics --chip gh100 > $R/metrics.txt 2>&1 || true
  for d in ncu/*/; do
    shape=$(basename $d)
    OUT=$R timeout 200 bash scripts/ncu_gemm.sh ncu $shape > $R/ncu-$shape.log 2>&1
    echo "ncu $shape rc=$? at $SECONDS s" | tee -a $R/run.log; tail -n 40 $R/ncu-$shape.log
  done
  ;;
source)
  export PYTHONPATH=$PWD
  for d in ncu_source/*/; do
    shape=$(basename $d)
    timeout 200 ncu --target-processes all --cache-control all --clock-control none -f \
      --kernel-name regex:'gemm_kernel|nvjet' --section SourceCounters --section WarpStateStats \
      -o $R/src-$shape python3 scripts/ncu_gemm.py run ncu_source $shape > $R/src-$shape.log 2>&1
    echo "source $shape rc=$? at $SECONDS s" | tee -a $R/run.log
    ncu -i $R/src-$shape.ncu-rep --csv --page source --print-source sass > $R/src-$shape-sass.csv 2>&1
    echo "sass page rc=$?" | tee -a $R/run.log; head -c 600 $R/src-$shape-sass.csv
  done
  ;;
power)
  held_busy
  ;;
*) echo "usage: gpu_suite_s13.sh stage|site|ncu|source|power|judge0|judge4|study|after|tests" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
