#!/usr/bin/env bash
# Session 15 on the GPU machine (issue 18: 192-row tiles for medium shapes), one step per call
# (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s15.sh power   # no TVM: variants.txt's kernels prebuilt in ./idx
#   bash scripts/gpu_suite_s15.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s15.sh site    # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s15.sh judge4  # carry .bundle/tvm-b (and study, after, tests, suite)
# power: each line of variants.txt (a shape, then JSON configs) checked against the reference
#   (scripts/check_configs.py), then held busy with cuBLAS (scripts/power.py); the kernels come
#   from the artifact index ./idx, built here by `AUTOTUNE_ARTIFACTS=idx scripts/check_configs.py
#   --build-only`; then the kernels cuBLAS runs at those shapes (scripts/cublas_kernels.py).
# judge4: studies/unseen_gemm_2026-11-24-s15.md (committed before measuring), compare from the
#   committed store with first use on (4); study: an 8-trial study of each of those shapes;
#   after: compare with its store; tests: the GPU tests (gpu_suite_common.sh); suite: the
#   23-shape suite from the committed store; judge4b: the second list,
#   studies/unseen_gemm_2026-11-24-s15b.md, as judge4; studyb: an 8-trial study of each of its
#   shapes (its final round times the default and cuBLAS beside the winner).
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
case $1 in
judge0|judge4|study|after)
  source scripts/gpu_env.sh
  unseen_step $1 studies/unseen_gemm_2026-11-24-s15.md s15
  ;;
judge4b)
  source scripts/gpu_env.sh
  sha256sum $STORE | tee $R/store.sha256
  judge_unseen studies/unseen_gemm_2026-11-24-s15b.md s15b 4 460
  ;;
studyb)
  source scripts/gpu_env.sh
  study_unseen studies/unseen_gemm_2026-11-24-s15b.md s15b
  ;;
suite)
  source scripts/gpu_env.sh
  sha256sum $STORE | tee $R/store.sha256
  suite_compare
  ;;
tests)
  source scripts/gpu_env.sh
  gpu_tests
  ;;
power)
  held_busy
  variants_vendor
  ;;
*) echo "usage: gpu_suite_s15.sh stage|site|power|judge4|study|after|tests|suite|judge4b|studyb" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
