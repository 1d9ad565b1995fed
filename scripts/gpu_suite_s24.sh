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
# pingpong: the ping-pong schedule (schedule='pingpong', kernels/gemm/sm90.py: two consumers
# take the CTA's tiles in turn, so one's epilogue overlaps the other's mainloop) held busy
# beside the default at M > 1024: list s26 (studies/unseen_gemm_2026-11-28-s26.md, committed before
# measuring: the rule judged is "the default's tiles, ping-pong", written down before any
# ping-pong kernel ran) and three seen shapes; per shape the default, the default's tiles
# ping-pong, 128x128 ping-pong tiles (two m64 atoms each); kernels built here by
#   AUTOTUNE_ARTIFACTS=$PWD/build/idx27 python scripts/check_configs.py --build-only \
#     --procs 2 --variants $S24/pingpong/variants.txt
#   bash scripts/gpu_suite_s24.sh pingpong  # carry build/idx27
# probe: list s25's two worst shapes after its study, held busy, kernels built alike from
# $S24/probe/ into build/idx28: 185x2048x5504 (96 CTAs of 64x64 tiles, K = 5504; no trial split
# K) split 2 and 4, 64x48 tiles in one wave, stream-K, swapped tiles covering M split 4;
# 3114x2048x11264 (cuBLAS: 128x200 in 2x1 pairs) 128x256, 128x224/208/192 in 2x1 pairs, 256x128
#   bash scripts/gpu_suite_s24.sh probe     # carry build/idx28
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
set +e  # a failed part is recorded in run.log; the rest and the results still come back
LIST=studies/unseen_gemm_2026-11-28-s25.md
case $1 in
study) source scripts/gpu_env.sh; study_unseen $LIST s25 ;;
after) source scripts/gpu_env.sh; after_unseen $LIST s25 540 ;;
pingpong) cp studies/2026-11-28-h200-gemm-s24/pingpong/variants.txt variants.txt
  rm -rf idx && cp -r build/idx27 idx && HELD_BUSY_UNTIL=540 shared_step power ;;
probe) cp studies/2026-11-28-h200-gemm-s24/probe/variants.txt variants.txt
  rm -rf idx && cp -r build/idx28 idx && shared_step power ;;
*) echo "usage: gpu_suite_s24.sh stage|study|after|pingpong|probe" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
