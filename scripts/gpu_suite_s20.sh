#!/usr/bin/env bash
# Session 20 on the GPU machine (issue 18: the rest of list s18's judgement, the GPU tests), one
# step per call to one warm machine (the tree is ~31 MiB, so TVM's parts travel one a call):
#   bash scripts/gpu_suite_s20.sh judge4  # carry build/idx4 build/idxv build/variants.txt
#   bash scripts/gpu_suite_s20.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s20.sh stage   # carry .bundle/tvm-b (bundles cut since: a call a part)
#   bash scripts/gpu_suite_s20.sh study   # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s20.sh after   # carry nothing (TVM and the site unpacked by study)
#   bash scripts/gpu_suite_s20.sh power   # no TVM: ./variants.txt's configs prebuilt into ./idx
# judge4: studies/unseen_gemm_2026-11-25-s18.md (committed before measuring) through `python -m
#   autotune.compare` from the committed store with first use on (4 configs), no TVM: every
#   kernel prebuilt here into build/idx4 (`python -m autotune.dispatch prebuild --no-stored
#   --first-use 4`), then holds busy build/variants.txt's
#   configs beside cuBLAS (built here into build/idxv by `AUTOTUNE_ARTIFACTS=build/idxv
#   scripts/check_configs.py --build-only`: variants at 91x2880x4096, list s18's one shape
#   under 0.9x cuBLAS in session 19). study: an 8-trial study of each of those
#   shapes; after: compare with its store, then the GPU tests (gpu_suite_common.sh's gpu_tests).
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
set +e  # a failed part is recorded in run.log; the rest and the results still come back
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
LIST=studies/unseen_gemm_2026-11-25-s18.md
case $1 in
judge4)
  judge_prebuilt $LIST s18 $PWD/build/idx4 4 480
  cp build/variants.txt variants.txt && rm -rf idx && cp -r build/idxv idx
  if [ $SECONDS -lt 470 ]; then HELD_BUSY_UNTIL=500 held_busy; variants_vendor; fi
  ;;
study)
  source scripts/gpu_env.sh
  study_unseen $LIST s18
  ;;
after)
  source scripts/gpu_env.sh
  after_unseen $LIST s18 240
  gpu_tests $((560 - SECONDS))
  ;;
suite|tests|power) shared_step $1 ;;
*) echo "usage: gpu_suite_s20.sh judge4|stage|study|after|suite|tests|power" >&2; exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
