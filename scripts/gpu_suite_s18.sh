#!/usr/bin/env bash
# Session 18 on the GPU machine (issue 18: list s18 judged, the store grown), one step per call
# (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s18.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s18.sh site    # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s18.sh judge4  # carry .bundle/tvm-b (and every step below)
# judge4, judge0: studies/unseen_gemm_2026-11-25-s18.md (committed before measuring), compare
#   from the committed store with first use on (4) and off (0); study: an 8-trial study of each
#   of those shapes; after: compare with its store; grow1..grow3: `autotune compare` of a third
#   each of the 48 shapes sessions 14-16 studied and the store lacks (GROW: their study stores
#   merged), the tables `python -m autotune.store retime` gives them the protocol's times from
#   before they join the store; tests, suite, power: gpu_suite_common.sh's shared steps.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
GROW=studies/2026-11-25-h100-gemm-s17/grow/new48.json
case $1 in
judge0|judge4|study|after)
  source scripts/gpu_env.sh
  unseen_step $1 studies/unseen_gemm_2026-11-25-s18.md s18
  ;;
grow1|grow2|grow3)
  source scripts/gpu_env.sh
  sha256sum $GROW | tee $R/store.sha256
  retime_part $GROW ${1#grow} 3
  ;;
suite|tests|power) shared_step $1 ;;
*) echo "usage: gpu_suite_s18.sh stage|site|judge4|judge0|study|after|grow1|grow2|grow3|tests" \
     "|suite|power" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
