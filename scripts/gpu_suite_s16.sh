#!/usr/bin/env bash
# Session 16 on the GPU machine (issue 18: judging the 128 < M <= 192 rule), one step per call
# (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s16.sh power   # no TVM: variants.txt's kernels prebuilt in ./idx
#   bash scripts/gpu_suite_s16.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s16.sh site    # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s16.sh judge4  # carry .bundle/tvm-b (and study, after, tests, suite)
# power: each line of variants.txt (a shape, then JSON configs) checked against the reference
#   (scripts/check_configs.py), then held busy with cuBLAS (scripts/power.py); the kernels come
#   from the artifact index ./idx, built here by `AUTOTUNE_ARTIFACTS=idx scripts/check_configs.py
#   --build-only`; then the kernels cuBLAS runs at those shapes (scripts/cublas_kernels.py).
# judge4: studies/unseen_gemm_2026-11-24-padded-m.md (committed before measuring), compare from
#   the committed store with first use on (4); study: an 8-trial study of each of those shapes;
#   after: compare with its store; tests: the GPU tests (gpu_suite_common.sh);
#   suite: the 23-shape suite from the committed store; retime1..3: `autotune compare` of a
#   third of the committed store's shapes each (its config, today's default, cuBLAS), the
#   tables `python -m autotune.store retime` makes the store's times the protocol's from.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
case $1 in
judge4|study|after)
  source scripts/gpu_env.sh
  unseen_step $1 studies/unseen_gemm_2026-11-24-padded-m.md padded-m
  ;;
retime1|retime2|retime3)  # a third of the committed store's shapes each
  source scripts/gpu_env.sh
  sha256sum $STORE | tee $R/store.sha256
  retime_part $STORE ${1#retime} 3
  ;;
suite|tests|power) shared_step $1 ;;
*) echo "usage: gpu_suite_s16.sh stage|site|power|judge4|study|after|tests|suite|retime1..3" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
