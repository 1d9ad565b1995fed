#!/usr/bin/env bash
# Session 22 on the GPU machine (issue 18), prepared by session 21, one step per call to one warm
# machine; `exact` needs no TVM there, its kernels built here:
#   AUTOTUNE_ARTIFACTS=$PWD/build/idx22 .venv/bin/python scripts/check_configs.py --build-only \
#     --procs 2 --variants studies/2026-11-28-h100-gemm-s21/next22/variants.txt
# then
#   bash scripts/gpu_suite_s22.sh exact   # carry build/idx22 (~4 GPU minutes)
#   bash scripts/gpu_suite_s22.sh rule    # carry build/idx22b, built alike from rule22b/
#   python -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE --no-stored \
#     --first-use 4 --shapes <list s23> --out $PWD/build/idx23 --procs 2
#   bash scripts/gpu_suite_s22.sh judge   # carry build/idx23
#   bash scripts/gpu_suite_s22.sh m300    # carry build/idx22c, built alike from m300/
#   bash scripts/gpu_suite_s22.sh m300sw  # carry build/idx22d, built alike from m300sw/
#   bash scripts/gpu_suite_s22.sh m300c   # carry build/idx22e, built alike from m300c/
#   bash scripts/gpu_suite_s22.sh padded  # carry build/idx24, built alike from next24/
#   bash scripts/gpu_suite_s22.sh stage   # once each carrying .bundle/tvm-a, tvm-b, tvm-c
#   bash scripts/gpu_suite_s22.sh study   # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s22.sh after   # the study's store; then the GPU tests
#   bash scripts/gpu_suite_s22.sh suite   # the 23-shape suite from the committed store
# exact: list s22 (studies/unseen_gemm_2026-11-28-s22.md, committed before measuring), held
#   busy: the default, 64-row tiles in one wave (TMA-store and register epilogues), cuBLAS;
# rule: list s22b (studies/unseen_gemm_2026-11-28-s22b.md, committed before measuring), held
#   busy: the default before the exact-width rule, the rule's tiles, cuBLAS;
# judge: list s23 (studies/unseen_gemm_2026-11-28-s23.md, committed before measuring) from the
#   committed store $STORE, first use off then on (the exact-width rule in the default);
# m300: 257 < M <= 384 at long K (128-row tiles pad M by up to 50%), 5 training shapes held
#   busy: the default, 64-row one-consumer tiles (one wave; 64x256), the default split 2;
# m300sw: the same shapes, the default against swapped tiles of 64, 128 and 192 rows of N
#   splitting M into equal widths that fill one wave (cuBLAS's tiles there, m300/);
# m300c: list s22c (studies/unseen_gemm_2026-11-28-s22c.md, committed before measuring), held
#   busy: the default, exact-width 64-row tiles in one wave, swapped 128-row tiles, cuBLAS;
# padded: list s24 (studies/unseen_gemm_2026-11-28-s24.md, committed before measuring), held
#   busy: the default before EXACT_NARROW_PADDED_M, the rule's tiles, cuBLAS;
# study: an 8-trial study of each shape of list s21 (studies/unseen_gemm_2026-11-27-s21.md,
#   its compare from the store run in session 21); after: compare with that store.
# Results: $OUT/<step>.tgz.
case $1 in  # list s21's study, after, the suite and staging: as session 21 prepared them
  stage|study|after|suite) exec bash scripts/gpu_suite_s21.sh "$1" ;;
esac
source scripts/gpu_suite_common.sh "$1"
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
set +e  # a failed part is recorded in run.log; the rest and the results still come back
S22=studies/2026-11-28-h100-gemm-s22
held() {  # $1 a folder with variants.txt, $2 its kernels built here: held busy beside cuBLAS
  cp $1/variants.txt variants.txt
  rm -rf idx && cp -r $2 idx
  shared_step power
}
case $1 in
exact) held studies/2026-11-28-h100-gemm-s21/next22 build/idx22 ;;
rule) held $S22/rule22b build/idx22b ;;
judge) judge_prebuilt studies/unseen_gemm_2026-11-28-s23.md s23 $PWD/build/idx23 "0 4" ;;
m300) held $S22/m300 build/idx22c ;;
m300sw) held $S22/m300sw build/idx22d ;;
m300c) held $S22/m300c build/idx22e ;;
padded) held $S22/next24 build/idx24 ;;
*) echo "usage: gpu_suite_s22.sh exact|rule|judge|m300|m300sw|m300c|padded|stage|study|after|" \
     "suite" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
