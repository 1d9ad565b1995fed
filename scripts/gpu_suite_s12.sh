#!/usr/bin/env bash
# Session 12 on the GPU machine (issue 18: our kernel alone against cuBLAS), one step per call,
# the machine kept warm between them (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s12.sh vendor  # carry .bundle/device-site.tar.xz (torch only)
#   bash scripts/gpu_suite_s12.sh suite   # carry .bundle/tvm-b after stage and site
# vendor: which kernel cuBLAS runs (tile, cluster, stages, split-K) on every shape of every
#   unseen list and the 23-shape suite (scripts/cublas_kernels.py), to read beside what our
#   kernel made of the same shapes.
# suite: the 23-shape suite from the committed store under the one-second window: dispatch, our
#   kernel alone, the default and cuBLAS (5 rounds).
# swap: swap-AB (weights on the 64-row wgmma side, tokens on the fine-grained wgmma N, as
#   cuBLAS's nvjet kernels do) at M > 128, where our tiles waste rows of ragged M: each line of
#   swap_variants.txt (copied to the stage: a shape, then JSON configs, the first the s11 study's
#   winner) validated (scripts/check_configs.py), then held busy with cuBLAS (scripts/power.py).
# swaptma: the same with swap-AB's TMA-store epilogue (stmatrix.trans), after a correctness check
#   of it on ragged shapes (swap_check.txt: the configs).
# judge0, judge4: studies/unseen_gemm_2026-11-24-s12.md (committed before measuring), compare
#   from the committed store (restamped to this template) with first use off, then on (4).
# study: an 8-trial study of each of those shapes (final rounds: 3); after: compare with its
#   store (our kernel alone after a study; the study's winner time beside compare's).
# tests: the GPU tests of dispatch (GEMM, attention), the isolated runner's faults and the GEMM
#   plugin's conformance kit (its timed check) on this template.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
source scripts/gpu_env.sh
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
case $1 in
vendor)
  SHAPES=$(for f in studies/unseen_gemm_*.md studies/heldout_gemm_2026-11-23.md; do unseen_list $f; done)
  SUITE=$(python3 -c "from autotune.spaces.gemm_sm90 import SUITE; print(*SUITE)")
  timeout 400 python3 scripts/cublas_kernels.py $R $SUITE $SHAPES > $R/vendor.log 2>&1
  echo "vendor rc=$? at $SECONDS s" | tee -a $R/run.log; tail -3 $R/vendor.log
  ;;
suite)
  suite_compare
  ;;
swap|swaptma)
  cp swap_variants.txt $R/
  if [ $1 = swaptma ]; then  # correctness first: ragged M, N, K, decode, every consumer layout
    eval "CHECK=($(cat swap_check.txt))"; cp swap_check.txt $R/
    python3 scripts/check_configs.py --procs 15 --shapes 77x1000x520 1x136x64 513x4104x1032 \
      3001x264x4096 --configs "${CHECK[@]}" > $R/check_ragged.log 2>&1
    echo "check ragged rc=$? at $SECONDS s" | tee -a $R/run.log; tail -4 $R/check_ragged.log | cut -c1-160
  fi
  while read -r line; do
    shape=${line%% *}; mapfile -t VARIANTS < <(echo "${line#* }" | grep -oE '\{[^}]*\}')
    python3 scripts/check_configs.py --procs 15 --shapes $shape --configs "${VARIANTS[@]}" \
      > $R/check_$shape.log 2>&1
    echo "check $shape rc=$? at $SECONDS s" | tee -a $R/run.log; tail -3 $R/check_$shape.log | cut -c1-160
    timeout 100 python3 scripts/power.py $shape $R/swap_$shape.csv "${VARIANTS[@]}" 2>&1 | tail -7 | cut -c1-220
  done < swap_variants.txt
  ;;
judge0|judge4|study|after)
  unseen_step $1 studies/unseen_gemm_2026-11-24-s12.md s12
  ;;
tests)
  gpu_tests
  ;;
*) echo "usage: gpu_suite_s12.sh stage|site|vendor|suite|swap|swaptma|judge0|judge4|study|after|tests" >&2; exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
