#!/usr/bin/env bash
# Session 19 on the GPU machine (issue 18), one call with no TVM there (7.5 minutes of GPU time
# were left): every kernel comes prebuilt here into ./idx (`AUTOTUNE_ARTIFACTS=idx
# scripts/check_configs.py --build-only` for ./variants.txt's configs, `python -m
# autotune.dispatch prebuild --no-stored --out idx` for list s18's). Carry nothing:
#   bash scripts/gpu_suite_s19.sh judge
# judge: list s18b (studies/unseen_gemm_2026-11-25-s18b.md, committed before measuring) held busy,
#   the swapped skinny default before and after session 18's revision beside cuBLAS
#   (./variants.txt); then list s18 (studies/unseen_gemm_2026-11-25-s18.md) through `python -m
#   autotune.compare` from the committed store, first use off; then the kernels cuBLAS ran at
#   s18b.
# Results: $OUT/judge.tgz.
source scripts/gpu_suite_common.sh "$1"
set +e  # a failed part is recorded in run.log; the rest and the results still come back
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
case $1 in
judge|judge0)
  # judge0: list s18 alone (the first call's compare needed optuna through the `autotune` CLI)
  # (the project installed, offline, for its `autotune.spaces` entry points)
  [ $1 = judge ] && HELD_BUSY_UNTIL=280 held_busy ||
    python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . > $R/pip.log 2>&1
  export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 AUTOTUNE_ARTIFACTS=$PWD/idx
  sha256sum $STORE | tee $R/store.sha256
  export AUTOTUNE_CACHE=$SCRATCH/s18-cache
  sample_clocks $R/clocks.csv
  timeout $((440 - SECONDS)) python3 -m autotune.compare gemm --store $STORE --artifacts $PWD/idx \
    --shapes $(unseen_list studies/unseen_gemm_2026-11-25-s18.md) --subset "M<=256" \
    --subset "M>1024" --first-use 0 --out $R/first_use_0 > $R/first_use_0.log 2>&1
  echo "first use 0 rc=$? at $SECONDS s" | tee -a $R/run.log
  grep -v "^measured" $R/first_use_0.log | tail -5
  kill %1
  [ $1 = judge ] && [ $SECONDS -lt 420 ] && variants_vendor
  ;;
*) echo "usage: gpu_suite_s19.sh judge|judge0" >&2; exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
