#!/usr/bin/env bash
# Session 21 on the GPU machine (issue 18), prepared by session 20, one step per call to one warm
# machine; the first two need no TVM there, their kernels built here:
#   for each line of studies/2026-11-27-h100-gemm-s20/next/variants.txt (README there):
#     AUTOTUNE_ARTIFACTS=$PWD/build/idxnext scripts/check_configs.py --build-only ...
#   python -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE --no-stored \
#     --first-use 4 --shapes <list s21> --out $PWD/build/idx21
# then
#   bash scripts/gpu_suite_s21.sh power   # carry build/idxnext
#   bash scripts/gpu_suite_s21.sh judge   # carry build/idx21
#   bash scripts/gpu_suite_s21.sh fill    # carry build/idxfill (studies/2026-11-28-h100-gemm-s21/)
#   bash scripts/gpu_suite_s21.sh fill2   # carry build/idxfill2 (.../fill2)
#   bash scripts/gpu_suite_s21.sh judgeb  # carry build/idx21b (.../judgeb; list s21b)
#   bash scripts/gpu_suite_s21.sh stage   # once each carrying .bundle/tvm-a, tvm-b, tvm-c
#   bash scripts/gpu_suite_s21.sh study   # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s21.sh after   # the study's store; then the GPU tests
#   bash scripts/gpu_suite_s21.sh suite   # the 23-shape suite from the committed store
# power: the default beside swapped 256xW tiles (cuBLAS's choice at M > 256) held busy at 6
#   seen shapes (s20/next/variants.txt); judge: studies/unseen_gemm_2026-11-27-s21.md
#   (committed before measuring) from the committed store, first use off then on; study: an
#   8-trial study of each of its shapes (its seeds ranked with the cost model's pair factor);
#   after: compare with that store.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
set +e  # a failed part is recorded in run.log; the rest and the results still come back
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
LIST=studies/unseen_gemm_2026-11-27-s21.md
case $1 in
power)
  cp studies/2026-11-27-h100-gemm-s20/next/variants.txt variants.txt
  rm -rf idx && cp -r build/idxnext idx
  shared_step power
  ;;
fill)  # added in session 21: few-tile shapes (M > 256, long K), carry build/idxfill
  cp studies/2026-11-28-h100-gemm-s21/fill/variants.txt variants.txt
  rm -rf idx && cp -r build/idxfill idx
  shared_step power
  ;;
fill2)  # then 128-row tiles, the narrowest width in one wave (cuBLAS's 128x72-80 there)
  cp studies/2026-11-28-h100-gemm-s21/fill2/variants.txt variants.txt
  rm -rf idx && cp -r build/idxfill2 idx
  shared_step power
  ;;
judgeb)  # the few-tile rule on list s21b: held busy against the default before it at the 7
  # shapes it changes, then the list from the committed store; carry build/idx21b
  cp studies/2026-11-28-h100-gemm-s21/judgeb/variants.txt variants.txt
  rm -rf idx && cp -r build/idx21b idx
  HELD_BUSY_UNTIL=200 held_busy; variants_vendor
  judge_prebuilt studies/unseen_gemm_2026-11-28-s21b.md s21b $PWD/build/idx21b 0 430
  ;;
judge)
  judge_prebuilt $LIST s21 $PWD/build/idx21 "0 4"
  ;;
study)
  source scripts/gpu_env.sh
  study_unseen $LIST s21
  ;;
after)
  source scripts/gpu_env.sh
  after_unseen $LIST s21 240
  gpu_tests $((560 - SECONDS))
  ;;
suite) shared_step suite ;;
*) echo "usage: gpu_suite_s21.sh power|judge|fill|fill2|judgeb|stage|study|after|suite" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
