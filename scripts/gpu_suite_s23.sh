#!/usr/bin/env bash
# Session 23 on the GPU machine (issue 18): list s23 (studies/unseen_gemm_2026-11-28-s23.md,
# committed before measuring; judged from the committed store in session 22) studied, then
# compared with the study's store; one step per call to one warm machine (the calls back to back:
# the machine goes back after 30 s idle and the staged parts with it):
#   bash scripts/gpu_suite_s23.sh stage   # once each carrying .bundle/tvm-a, tvm-b, tvm-c
#   bash scripts/gpu_suite_s23.sh study   # carry .bundle/device-site.tar.xz
# The machine went back after the study, and TVM's parts with it: the compare with the study's
# store and the 23-shape suite from the committed store ran from kernels built here (no TVM
# there), built by
#   python -m autotune.dispatch prebuild --space gemm_sm90 --store $S23/study/s23_store.json \
#     --shapes <list s23> --out $PWD/build/idx23s --procs 2
#   python -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE --no-stored \
#     --shapes <SUITE> --out $PWD/build/idxsuite --procs 2
#   bash scripts/gpu_suite_s23.sh afterp  # carry build/idx23s
#   bash scripts/gpu_suite_s23.sh suitep  # carry build/idxsuite
# judge25: list s25 (studies/unseen_gemm_2026-11-28-s25.md, committed before measuring) from the
# committed store, first use on (4; the GPU time left fits no run with it off), kernels built by
#   python -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE --no-stored \
#     --first-use 4 --shapes <list s25> --out $PWD/build/idx25 --procs 2
#   bash scripts/gpu_suite_s23.sh judge25 # carry build/idx25
# rows256 (prepared for session 24): M > 1024 at short K (640-2048), where cuBLAS runs 256-row
# cooperative tiles 120-160 wide in 2x1/1x2 clusters (nvjet 256x152, 256x160: cublas_kernels.json
# of earlier sessions) and our 128-row default loses 4-6%: held busy, the default beside
# 256x160 tiles (two 128-row consumers) alone and in both pairs, 256x128 and 256x192 in 2x1
# pairs;
# seen shapes (lists s23, s25, the store), kernels built alike from $S23/next26/ into build/idx26
#   bash scripts/gpu_suite_s23.sh rows256 # carry build/idx26
# study: an 8-trial study of each of its 12 shapes; afterp: compare with that store (our kernel
# alone after a study, and each study winner's recorded time beside compare's).
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
set +e  # a failed part is recorded in run.log; the rest and the results still come back
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
LIST=studies/unseen_gemm_2026-11-28-s23.md
case $1 in
study) source scripts/gpu_env.sh; study_unseen $LIST s23 ;;
afterp) STORE=studies/2026-11-28-h100-gemm-s23/study/s23_store.json
  judge_prebuilt $LIST s23after $PWD/build/idx23s 0 ;;
suitep) SUITE=$(python3 -c 'from autotune.spaces.gemm_sm90 import SUITE; print(*SUITE)')
  judge_prebuilt "$SUITE" suite $PWD/build/idxsuite 0 ;;
judge25) judge_prebuilt studies/unseen_gemm_2026-11-28-s25.md s25 $PWD/build/idx25 4 400 ;;
rows256) cp studies/2026-11-28-h100-gemm-s23/next26/variants.txt variants.txt
  rm -rf idx && cp -r build/idx26 idx && shared_step power ;;
*) echo "usage: gpu_suite_s23.sh stage|study|afterp|suitep|judge25|rows256" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
