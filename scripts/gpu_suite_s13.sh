#!/usr/bin/env bash
# Session 13 on the GPU machine (issue 18: where our kernel loses to cuBLAS on large shapes),
# one step per call (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s13.sh ncu     # no TVM: the artifacts come prebuilt in ./ncu
# ncu: Nsight Compute (scripts/ncu_gemm.sh) over every shape folder in ./ncu, built here by
#   `scripts/ncu_gemm.py build ncu SHAPE --config TAG=JSON ...`: each config beside cuBLAS.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
case $1 in
ncu)
  ncu --query-metrics --chip gh100 > $R/metrics.txt 2>&1 || true
  for d in ncu/*/; do
    shape=$(basename $d)
    OUT=$R timeout 200 bash scripts/ncu_gemm.sh ncu $shape > $R/ncu-$shape.log 2>&1
    echo "ncu $shape rc=$? at $SECONDS s" | tee -a $R/run.log; tail -n 40 $R/ncu-$shape.log
  done
  ;;
*) echo "usage: gpu_suite_s13.sh stage|site|ncu" >&2; exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
