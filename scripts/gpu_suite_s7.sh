#!/usr/bin/env bash
# Session 7 on the GPU machine: TVM staged in two parts and the optuna/ray site in a third
# (together over the 64 MiB a call carries), then one step per call, machine kept warm:
#   bash scripts/gpu_suite_s7.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s7.sh site    # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s7.sh seen    # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s7.sh judge   # carry .bundle/tvm-b (a second machine: stage, site again)
#   bash scripts/gpu_suite_s7.sh study   # carry .bundle/tvm-b (the same machine)
#   bash scripts/gpu_suite_s7.sh after   # carry .bundle/tvm-b (the same machine)
#   bash scripts/gpu_suite_s7.sh ab      # carry .bundle/tvm-b (a third machine: stage, site again)
#   bash scripts/gpu_suite_s7.sh judge2  # carry .bundle/tvm-b (a fourth machine: stage, site again)
#   bash scripts/gpu_suite_s7.sh block   # carry .bundle/tvm-b (a fifth machine: stage, site again)
#   bash scripts/gpu_suite_s7.sh power   # carry .bundle/tvm-b (a sixth machine: stage, site again)
#   bash scripts/gpu_suite_s7.sh attn    # carry .bundle/tvm-b (a seventh machine: stage, site again)
#   bash scripts/gpu_suite_s7.sh decode  # carry .bundle/tvm-b (an eighth machine: stage, site again)
# seen: (issue 18) 192-row tiles (three consumers) on 16 seen large shapes beside the default and
#   cuBLAS (studies/2026-11-23-h100-gemm-s7/c3*.json, made by its make_stores.py).
# judge: the unseen list of session 7 from the committed store (dispatch, default, cuBLAS); the
#   old default (a store of it, made before the rule change) beside the new.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
source scripts/gpu_env.sh
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
S7=studies/2026-11-23-h100-gemm-s7
sha256sum $STORE $S7/*.json | tee $R/stores.sha256
compare() {  # $1 name, $2 seconds, $3 store, then shapes
  local name=$1 secs=$2 store=$3; shift 3
  timeout $secs autotune compare gemm --store $store --shapes "$@" --subset "M<=256" \
    --subset "M>1024" --rounds ${ROUNDS:-3} --out $R/$name > $R/$name.log 2>&1
  echo "$name rc=$? at $SECONDS s" | tee -a $R/run.log; grep -v "^measured" $R/$name.log | tail -24
}
case $1 in
seen)
  SEEN="2900x12288x3072 2200x49152x3072 6000x3072x24576 1500x3072x4096 4600x16384x3072
        3300x3072x3072 1900x65536x5120 5200x5120x32768 2600x3584x3584 3800x1536x8960
        2500x5120x17920 1800x4096x11008 3100x8192x22016 1536x5120x4096 4096x4096x4096
        2048x4096x14336"
  compare c3 ${C3_S:-300} $S7/c3.json $SEEN
  compare c3_192 ${C3_S:-200} $S7/c3_192.json 2200x49152x3072 4600x16384x3072 3300x3072x3072 \
    5200x5120x32768 2600x3584x3584 3800x1536x8960 1800x4096x11008 1536x5120x4096 4096x4096x4096
  ;;
judge)
  LIST=$(unseen_list studies/unseen_gemm_2026-11-23-s7.md)
  compare unseen ${UNSEEN_S:-330} $STORE $LIST
  compare old_unseen ${OLD_S:-240} $S7/old_default_unseen.json 3000x6144x2560 2300x19456x2560 \
    4500x2560x9728 5000x6144x2048 3600x25600x4096 1100x45056x8192 1400x24576x8192 \
    2500x27392x4096 1800x4096x13696 3300x4608x4096
  ;;
study)  # an 8-trial study of each unseen shape (killed at its limit, it keeps what it measured)
  LIST=$(unseen_list studies/unseen_gemm_2026-11-23-s7.md)
  short_study unseen 8 ${STUDY_S:-540} $LIST
  echo "study done at $SECONDS s" | tee -a $R/run.log; tail -n 30 $R/unseen_study.log
  ;;
after)  # the study's store (same machine, after the study step): its winners beside cuBLAS
  LIST=$(unseen_list studies/unseen_gemm_2026-11-23-s7.md)
  compare after ${AFTER_S:-540} $SCRATCH/results/study/unseen_store.json $LIST
  ;;
ab)  # the old default beside the new on 6 shapes where seen and unseen disagreed, 9 rounds, in
  # two processes one after the other: is the gap the shape's or the run's?
  AB="1800x4096x11008 1800x4096x13696 1500x3072x4096 5000x6144x2048 2500x27392x4096 1100x45056x8192"
  sample_clocks $R/clocks.csv
  ROUNDS=9 compare ab1 ${AB_S:-270} $S7/old_default_ab.json $AB
  ROUNDS=9 compare ab2 ${AB_S:-270} $S7/old_default_ab.json $AB
  kill %1
  ;;
judge2)  # the narrowed rule on the second unseen list: the committed store (dispatch, default,
  # cuBLAS), then the default before this session beside the new one (old_default_s7b.json)
  LIST=$(unseen_list studies/unseen_gemm_2026-11-23-s7b.md)
  sample_clocks $R/clocks.csv
  ROUNDS=5 compare unseen2 ${UNSEEN_S:-300} $STORE $LIST
  ROUNDS=5 compare old_unseen2 ${OLD_S:-270} $S7/old_default_s7b.json $LIST
  kill %1
  ;;
block)  # (issue 20) the decoder block's prefill GEMMs studied again now that 192-row tiles are in
  # the space (the seeds offer them), merged into a copy of the committed store (the faster entry
  # per shape), then the block at prefill on it, SM clocks sampled
  short_study block 8 ${BLOCK_STUDY_S:-200} 4096x28672x4096 4096x6144x4096 4096x4096x14336
  python3 -m autotune.store merge $STORE $R/block_store.json --out $R/merged_store.json
  echo "block study done at $SECONDS s" | tee -a $R/run.log; grep -E "best|vendor" $R/block_study.log | tail -9
  sample_clocks $R/clocks.csv
  timeout ${BLOCK_S:-330} python3 examples/llama_block.py --decode --prefill 512 2048 4096 \
    --rounds 7 --store $R/merged_store.json --out $R/llama_block_prefill > $R/block_prefill.log 2>&1
  echo "prefill block rc=$? at $SECONDS s" | tee -a $R/run.log; tail -8 $R/block_prefill.log
  kill %1
  ;;
power)  # clock, power and energy per FLOP of the default, 192-row tiles and cuBLAS held busy
  for shape in ${POWER_SHAPES:-2500x27392x4096 1500x3072x4096}; do
    timeout 150 python3 scripts/power.py $shape $R/power_$shape.csv \
      '{"consumers": 2, "blk_n": 256, "stages": 4}' '{"consumers": 3, "blk_n": 192, "stages": 3}' \
      '{"consumers": 3, "blk_n": 160, "stages": 4}' '{"consumers": 3, "blk_n": 128, "stages": 4}' \
      2>&1 | tail -6
  done
  ;;
attn)  # (issue 20) the attention benchmark a third time (built here), SM clock and power sampled
  timeout ${BENCH_BUILD_S:-120} python3 -m autotune.bench.attention build $SCRATCH/bench --jobs 15 \
    > $R/bench_build.log 2>&1; echo "bench build rc=$? at $SECONDS s" | tee -a $R/run.log
  sample_clocks $R/clocks.csv
  timeout ${BENCH_S:-300} python3 -m autotune.bench.attention run $SCRATCH/bench $R \
    > $R/bench.log 2>&1; echo "bench rc=$? at $SECONDS s" | tee -a $R/run.log
  kill %1; tail -n 30 $R/bench.log
  ;;
decode)  # (issue 20) the decoder block at decode on the committed stores, clocks sampled
  sample_clocks $R/clocks.csv
  timeout ${BLOCK_S:-300} python3 examples/llama_block.py --decode 1 8 32 64 --prefill --rounds 7 \
    --out $R/llama_block_decode > $R/block_decode.log 2>&1
  echo "decode block rc=$? at $SECONDS s" | tee -a $R/run.log; kill %1; tail -10 $R/block_decode.log
  ;;
*) echo "usage: gpu_suite_s7.sh stage|site|seen|judge|study|after|ab|judge2|block|power|attn|decode" >&2; exit 2 ;;
esac
tar czf $OUT/$1.tgz -C $R .
