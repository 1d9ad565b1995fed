#!/usr/bin/env bash
# Session 5 on one warm GPU machine, four calls back to back (TVM staged in two parts, the
# optuna/ray site in a third: together they are over the 64 MiB a call carries):
#   bash scripts/gpu_suite_s5.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s5.sh site    # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s5.sh attn    # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s5.sh gemm    # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s5.sh bench   # carry .bundle/tvm-b (a second machine: stage, site again)
#   bash scripts/gpu_suite_s5.sh final   # carry .bundle/tvm-b (a third machine: stage, site again)
#   bash scripts/gpu_suite_s5.sh block   # carry .bundle/tvm-b (a fourth machine: stage, site again)
#   bash scripts/gpu_suite_s5.sh judge   # carry .bundle/tvm-b (a fifth machine: stage, site again)
#   NCU_SHAPES=... bash scripts/gpu_suite_s5.sh ncu   # carry .bundle/tvm-b (a sixth machine)
# attn: (issue 20) the strided-q/k/v GPU tests; a short study of the decoder block's three
#   prefill GEMM shapes the committed store lacks, merged into a copy of it; the decoder block
#   at decode and prefill on that store.
# bench: the attention benchmark (built here); stream-K in 2x1 clusters (the kernel changed after
#   the gemm step) beside the tiled twin on 8 ragged or long-K shapes.
# gemm: (issue 18) session 4's stream-K rework on 13 seen shapes: the best tiled config, it as
#   stream-K with evict-first and evict-normal L2 loads (studies/2026-11-23-h100-gemm-s5/*.json);
#   Nsight Compute of ours (default and stored config) vs cuBLAS on two ragged long-K shapes.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
source scripts/gpu_env.sh
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
S5=studies/2026-11-23-h100-gemm-s5
sha256sum $STORE studies/configs/fa4_sm90/*.json | tee $R/stores.sha256
ncu_shapes() {
  for shape in $NCU_SHAPES; do
    python3 scripts/ncu_gemm.py build $SCRATCH/ncu $shape --store $STORE > $R/ncu_build.log 2>&1
    OUT=$R timeout 120 bash scripts/ncu_gemm.sh $SCRATCH/ncu $shape 2>&1 | tail -n 40
    echo "ncu $shape done at $SECONDS s" | tee -a $R/run.log
  done
}
case $1 in
attn)
  timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_strided_tma_gpu.py \
    tests/test_tirx_launch_gpu.py tests/test_attention_dispatch_gpu.py 2>&1 | tail -15 \
    | tee $R/gpu_tests.txt
  BLOCK_GEMM="4096x28672x4096 4096x6144x4096 4096x4096x14336"
  short_study block 8 ${BLOCK_STUDY_S:-130} $BLOCK_GEMM
  python3 -m autotune.store merge $STORE $R/block_store.json --out $SCRATCH/merged_store.json
  echo "block study done at $SECONDS s" | tee -a $R/run.log
  timeout ${BLOCK_S:-110} python3 examples/llama_block.py --decode 1 8 32 64 --prefill --rounds 5 \
    --store $SCRATCH/merged_store.json --out $R/llama_block_decode 2>&1 | tail -12
  timeout ${BLOCK_S:-150} python3 examples/llama_block.py --decode --prefill 512 2048 4096 \
    --rounds 7 --profile --store $SCRATCH/merged_store.json --out $R/llama_block_prefill 2>&1 | tail -14
  echo "block done at $SECONDS s" | tee -a $R/run.log
  ;;
bench)  # the attention benchmark (built here), then stream-K in 2x1 clusters beside its twin
  timeout ${BENCH_BUILD_S:-100} python3 -m autotune.bench.attention build $SCRATCH/bench --jobs 15 \
    > $R/bench_build.log 2>&1; echo "bench build rc=$? at $SECONDS s" | tee -a $R/run.log
  timeout ${BENCH_S:-180} python3 -m autotune.bench.attention run $SCRATCH/bench $R \
    > $R/bench.log 2>&1; echo "bench rc=$? at $SECONDS s" | tee -a $R/run.log
  SK2="3100x8192x22016 2500x5120x17920 1800x4096x11008 700x6144x16384 600x5120x13824
       1200x2304x5760 450x22016x4096 333x18432x2304"
  for v in sk_2x1 tiled; do
    timeout ${SK_S:-130} autotune compare gemm --store $S5/$v.json --shapes $SK2 --rounds 3 \
      --out $R/sk2_$v 2>&1 | grep -v '^measured' | tail -n 14
    echo "stream-K $v done at $SECONDS s" | tee -a $R/run.log
  done
  ;;
gemm)
  SK="2500x5120x17920 600x5120x13824 1200x2304x5760 333x18432x2304 512x4096x4096 512x4096x14336
      512x28672x4096 700x6144x16384 160x9216x8192 3100x8192x22016 200x2048x5632 1800x4096x11008
      450x22016x4096"
  for v in tiled sk_first sk_normal; do
    timeout ${SK_S:-100} autotune compare gemm --store $S5/$v.json --shapes $SK --rounds 3 \
      --out $R/sk_$v 2>&1 | tail -n 18
    echo "stream-K $v done at $SECONDS s" | tee -a $R/run.log
  done
  NCU_SHAPES=${NCU_SHAPES:-3100x8192x22016 1800x4096x11008} ncu_shapes
  ;;
ncu)  # Nsight Compute of ours (default, stored config) vs cuBLAS on NCU_SHAPES
  ncu_shapes
  ;;
final)  # what timed out in attn and bench: the decode block; stream-K in 2x1 clusters
  timeout ${BLOCK_S:-200} python3 examples/llama_block.py --decode 1 8 32 64 --prefill --rounds 5 \
    --out $R/llama_block_decode > $R/block_decode.log 2>&1
  echo "decode block rc=$? at $SECONDS s" | tee -a $R/run.log; tail -12 $R/block_decode.log
  SK2="3100x8192x22016 2500x5120x17920 1800x4096x11008 700x6144x16384 600x5120x13824
       1200x2304x5760 450x22016x4096 333x18432x2304"
  timeout ${SK_S:-300} autotune compare gemm --store $S5/sk_2x1.json --shapes $SK2 --rounds 3 \
    --out $R/sk2_sk_2x1 > $R/sk2_sk_2x1.log 2>&1
  echo "stream-K sk_2x1 rc=$? at $SECONDS s" | tee -a $R/run.log; grep -E "^measured|Error|error" $R/sk2_sk_2x1.log | cut -c1-240
  ;;
block)  # the decoder block at prefill again, on the committed store (attn's study merged), longer
  timeout ${BLOCK_S:-400} python3 examples/llama_block.py --decode --prefill 512 2048 4096 \
    --rounds 15 --out $R/llama_block_prefill > $R/block_prefill.log 2>&1
  echo "prefill block rc=$? at $SECONDS s" | tee -a $R/run.log; tail -8 $R/block_prefill.log
  ;;
judge)  # issue 18 on studies/unseen_gemm_2026-11-23-s5.md with the many-wave BLK_N rule: the
  # committed store (dispatch, our kernel, default, cuBLAS), then the old default beside the new
  # where the rule changed it (old_default_*.json, made before the change), unseen and seen
  LIST=$(unseen_list studies/unseen_gemm_2026-11-23-s5.md)
  timeout ${UNSEEN_S:-260} autotune compare gemm --store $STORE --shapes $LIST --subset "M<=256" \
    --subset "M>1024" --rounds 3 --out $R/unseen > $R/unseen.log 2>&1
  echo "unseen rc=$? at $SECONDS s" | tee -a $R/run.log; grep -v "^measured" $R/unseen.log | tail -22
  timeout ${OLD_S:-120} autotune compare gemm --store $S5/old_default_unseen.json --rounds 3 \
    --shapes 6000x3072x24576 3300x3072x3072 2600x3584x3584 --out $R/old_unseen > $R/old_unseen.log 2>&1
  echo "old default, unseen rc=$? at $SECONDS s" | tee -a $R/run.log; grep -v "^measured" $R/old_unseen.log | tail -6
  timeout ${OLD_S:-120} autotune compare gemm --store $S5/old_default_dev.json --rounds 3 \
    --shapes 2500x5120x17920 3100x8192x22016 --out $R/old_dev > $R/old_dev.log 2>&1
  echo "old default, seen rc=$? at $SECONDS s" | tee -a $R/run.log; grep -v "^measured" $R/old_dev.log | tail -5
  ;;
*) echo "usage: gpu_suite_s5.sh stage|site|attn|gemm|bench|final|block|judge|ncu" >&2; exit 2 ;;
esac
tar czf $OUT/$1.tgz -C $R .
