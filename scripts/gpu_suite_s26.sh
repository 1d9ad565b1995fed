#!/usr/bin/env bash
# Session 26 on the GPU machine (issue 18; H200), one step per call:
# alongm: clusters along M, sharing the weights' (B) tile among all of a column's M tiles, at
# seen shapes with exactly 2 or 4 M tiles (the cluster covers M: consecutive clusters walk N,
# each cluster's CTAs sit together, the order our fast 1x1 tiles have): each shape's default,
# its tiles in '2x1' pairs and (4 M tiles) '2x1' fours, held busy beside cuBLAS
# (studies/2026-11-28-h200-gemm-s26/alongm/variants.txt), kernels built here by
#   AUTOTUNE_ARTIFACTS=$PWD/build/idx35 python scripts/check_configs.py --build-only \
#     --procs 2 --variants $S26/alongm/variants.txt
#   bash scripts/gpu_suite_s26.sh alongm   # carry build/idx35
# columns: the new schedule='columns' (two consumers share a 64-row tile, each its own half of
# the columns: cuBLAS's 384-thread layout at skinny shapes) beside each shape's default, held
# busy at 16 seen shapes ($S26/columns/variants.txt), built as above into build/idx36:
#   bash scripts/gpu_suite_s26.sh columns  # carry build/idx36
# (a layout written for this measurement and not kept, described in $S26/README.md; the
# kernels of idx36 are found only from a working tree holding it)
# swaporder: swapped tiles (the weights on the 64-row side, M in two tiles or one) where the
# two CTAs sharing a weight tile are consecutive (raster 'n'), apart (raster 'm'), or a pair
# ('1x2'), beside the default, at 9 seen shapes of 129 <= M <= 300, into build/idx37:
#   bash scripts/gpu_suite_s26.sh swaporder  # carry build/idx37
# judge27: that candidate (swapped 64 x 16*ceil(M/32), M in two tiles, raster 'm') beside the
# default and cuBLAS on list s27 (studies/unseen_gemm_2026-11-28-s27.md, committed before),
# into build/idx38:  bash scripts/gpu_suite_s26.sh judge27  # carry build/idx38
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
set +e  # a failed part is recorded in run.log; the rest and the results still come back
S26=studies/2026-11-28-h200-gemm-s26
case $1 in
alongm) held_busy_from $S26/alongm/variants.txt build/idx35 ;;
columns) held_busy_from $S26/columns/variants.txt build/idx36 ;;
swaporder) held_busy_from $S26/swaporder/variants.txt build/idx37 ;;  # (run without the
  # cuBLAS kernel names: swaporder/ has no cublas_kernels.json)
judge27) held_busy_from $S26/judge27/variants.txt build/idx38 ;;
*) echo "usage: gpu_suite_s26.sh alongm|columns|swaporder|judge27" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
