#!/usr/bin/env bash
# Session 25 on the GPU machine (issue 18; only H200s were lent), one step per call:
# four: clusters of four (multicast=4: kernels/gemm/sm90.py, each CTA loading a quarter of the
# shared tile for all four; cuBLAS's kind at M <= 300) held busy beside each shape's default and
# its pair, on 8 seen shapes of M <= 266 (studies/2026-11-28-h200-gemm-s25/four/variants.txt),
# kernels built here by
#   while read -r line; do shape=${line%% *}; eval "V=(${line#* })"; \
#     AUTOTUNE_ARTIFACTS=$PWD/build/idx29 python scripts/check_configs.py --build-only \
#     --procs 2 --shapes $shape --configs "${V[@]}"; done < $S25/four/variants.txt
#   bash scripts/gpu_suite_s25.sh four   # carry build/idx29 and build/ncu25
# then ncu in the same call: Nsight Compute over build/ncu25, built here by
#   python scripts/ncu_gemm.py build build/ncu25 4128x16384x1024 \
#     --config 'pair2x1={"cluster": "2x1"}' --config 'pair1x2={"cluster": "1x2"}'
#   python scripts/ncu_gemm.py build build/ncu25 185x2048x5504 \
#     --config 'four1x4={"cluster": "1x2", "multicast": 4}'
# (our default's 128x256 tiles alone and in pairs where cuBLAS runs pairs; 64x64 alone and in
# fours where cuBLAS runs fours). Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
set +e  # a failed part is recorded in run.log; the rest and the results still come back
case $1 in
four) cp studies/2026-11-28-h200-gemm-s25/four/variants.txt variants.txt
  rm -rf idx ncu && cp -r build/idx29 idx && cp -r build/ncu25 ncu
  shared_step power; shared_step ncu ;;
*) echo "usage: gpu_suite_s25.sh four" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
