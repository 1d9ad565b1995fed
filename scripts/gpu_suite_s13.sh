#!/usr/bin/env bash
# Session 13 on the GPU machine (issue 18: where our kernel loses to cuBLAS on large shapes),
# one step per call (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s13.sh ncu     # no TVM: the artifacts come prebuilt in ./ncu
#   bash scripts/gpu_suite_s13.sh source  # the same, with the stall samples per SASS instruction
#   bash scripts/gpu_suite_s13.sh power   # no TVM: variants.txt's kernels prebuilt in ./idx
# ncu: Nsight Compute (scripts/ncu_gemm.sh) over every shape folder in ./ncu, built here by
#   `scripts/ncu_gemm.py build ncu SHAPE --config TAG=JSON ...`: each config beside cuBLAS.
# source: ncu's SourceCounters (where in the SASS the warps wait) over ./ncu_source likewise.
# power: each line of variants.txt (a shape, then JSON configs) checked against the reference
#   (scripts/check_configs.py), then held busy with cuBLAS (scripts/power.py); the kernels come
#   from the artifact index ./idx, built here by `AUTOTUNE_ARTIFACTS=idx scripts/check_configs.py
#   --build-only`.
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
  python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . > $R/pip.log 2>&1
  export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 AUTOTUNE_ARTIFACTS=$PWD/idx
  cp variants.txt $R/
  while read -r line; do
    shape=${line%% *}; eval "VARIANTS=(${line#* })"
    python3 scripts/check_configs.py --shapes $shape --configs "${VARIANTS[@]}" \
      > $R/check_$shape.log 2>&1
    echo "check $shape rc=$? at $SECONDS s" | tee -a $R/run.log; grep -c ": ok" $R/check_$shape.log
    timeout 100 python3 scripts/power.py $shape $R/power_$shape.csv "${VARIANTS[@]}" 2>&1 \
      | tail -n $((${#VARIANTS[@]} + 2)) | cut -c1-60,190-
  done < variants.txt
  ;;
*) echo "usage: gpu_suite_s13.sh ncu|source|power" >&2; exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
