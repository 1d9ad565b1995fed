#!/usr/bin/env bash
# Session 24 on the GPU machine (issue 18; only H200s were lent): list s25
# (studies/unseen_gemm_2026-11-28-s25.md, committed before measuring; judged from the committed
# H100 store in session 23) studied on the H200, then compared with the study's store; one step
# per call to one warm machine (the calls back to back: the machine goes back after 30 s idle
# and the staged parts with it):
#   bash scripts/gpu_suite_s24.sh stage   # once each carrying .bundle/tvm-a, tvm-b, tvm-c
#   bash scripts/gpu_suite_s24.sh study   # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s24.sh after   # carry .bundle/device-site.tar.xz
# study: an 8-trial study of each of its 12 shapes; after: compare with that store, kernels built
# there (our kernel alone after a study, each study winner's recorded time beside compare's).
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
set +e  # a failed part is recorded in run.log; the rest and the results still come back
LIST=studies/unseen_gemm_2026-11-28-s25.md
case $1 in
study) source scripts/gpu_env.sh; study_unseen $LIST s25 ;;
after) source scripts/gpu_env.sh; after_unseen $LIST s25 540 ;;
*) echo "usage: gpu_suite_s24.sh stage|study|after" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
