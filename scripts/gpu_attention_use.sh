#!/usr/bin/env bash
# Attention in use on a Hopper GPU machine (no TVM there): the dispatched custom op's GPU tests,
# `autotune compare attention` (our kernel vs cuDNN and FlashAttention-2) and the decoder block
# vs torch's, from kernels prebuilt on a CPU machine into .dispatch:
#   python -m autotune.dispatch prebuild --space fa4_sm90 --no-stored --out .dispatch \
#       --shapes $ATTENTION_SHAPES $(python examples/llama_block.py --list-shapes attention ...)
#   python -m autotune.dispatch prebuild --space gemm_sm90 --device "NVIDIA H100 80GB HBM3" \
#       --no-stored --out .dispatch \
#       --shapes $(python examples/llama_block.py --list-shapes gemm ...)
# Usage: scripts/gpu_attention_use.sh OUT_DIR. Env: DECODE, PREFILL (the block's M values),
# ROUNDS (the block's timing rounds), PROFILE (non-empty: the block's graphs profiled kernel by
# kernel too, <run>_profile.md), ATTENTION_SHAPES (compare's; empty: none), TESTS_K (pytest -k),
# TESTS_S/COMPARE_S/BLOCK_S (time limits), AUTOTUNE_ARTIFACTS (default ./.dispatch).
OUT=${1:?usage: scripts/gpu_attention_use.sh OUT_DIR}
ATTENTION_SHAPES=${ATTENTION_SHAPES-"4x4096/16/128 4x4096/16/128/causal \
  1x4096/32:8/128/causal 64x4x1025/8/128"}
SCRATCH=${TMPDIR:-/tmp}  # what does not come back (a call returns at most 8 files of $OUT)
python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . > $SCRATCH/pip.log 2>&1 \
  || { echo "installing the project failed:"; tail -5 $SCRATCH/pip.log; }
export PYTHONPATH=$PWD:$PWD/tests AUTOTUNE_ARTIFACTS=${AUTOTUNE_ARTIFACTS:-$PWD/.dispatch} \
  PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -c "import torch as t; print('torch', t.__version__, 'cuDNN', t.backends.cudnn.version())" \
  | tee -a $OUT/gpu.txt
timeout ${TESTS_S:-60} python3 -m pytest -q -p no:cacheprovider ${TESTS_K:+-k "$TESTS_K"} \
  tests/test_attention_dispatch_gpu.py 2>&1 | tail -12 | tee $OUT/gpu_tests.txt
# Each part alone under its own time limit: a hung kernel ends that part, not the others.
for mask in full causal; do
  shapes=$(for s in $ATTENTION_SHAPES; do case $s in */causal) [ $mask = causal ] && echo $s;;
           *) [ $mask = full ] && echo $s;; esac; done)
  [ -n "$shapes" ] && timeout ${COMPARE_S:-60} python3 -m autotune.compare attention \
    --shapes $shapes --rounds 5 --out $SCRATCH/compare_$mask 2>&1 | tail -8
  cp $SCRATCH/compare_$mask/report.md $OUT/compare_$mask.md 2>/dev/null
done
timeout ${BLOCK_S:-90} python3 examples/llama_block.py --decode ${DECODE:-1 8 32 64} --prefill \
  --rounds ${ROUNDS:-3} ${PROFILE:+--profile} --out $OUT/llama_block_decode 2>&1 | tail -16
timeout ${BLOCK_S:-90} python3 examples/llama_block.py --decode --prefill ${PREFILL:-512 2048 4096} \
  --rounds ${ROUNDS:-3} ${PROFILE:+--profile} --out $OUT/llama_block_prefill 2>&1 | tail -14
