#!/bin/bash
# lead, session 4: the block's decode with the KV cache written in place vs the torch.cat version
# (same tree b5cce2b otherwise, same prebuilt kernels), interleaved in one call
cd "$(dirname "$0")/tree"
export AUTOTUNE_ARTIFACTS=$(cd .. && pwd)/.dispatch PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 100 python3 examples/llama_block.py --decode 1 8 32 64 --prefill --rounds 5 --profile \
  --out $OUT/decode_inplace 2>&1 | tail -8
timeout 100 python3 examples/llama_block_cat.py --decode 1 8 32 64 --prefill --rounds 5 \
  --out $OUT/decode_cat 2>&1 | tail -8
