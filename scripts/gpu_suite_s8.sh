#!/usr/bin/env bash
# Session 8 on the GPU machine (issue 18: first-use tuning in dispatch), one step per call, the
# machine kept warm between them (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s8.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s8.sh site    # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s8.sh before  # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s8.sh first   # carry .bundle/tvm-b (the same machine)
#   bash scripts/gpu_suite_s8.sh tests   # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s8.sh stages  # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s8.sh power   # carry .bundle/tvm-b (the same machine)
#   bash scripts/gpu_suite_s8.sh suite   # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s8.sh attn    # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s8.sh block   # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s8.sh decode  # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s8.sh energy  # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s8.sh warm    # carry .bundle/tvm-b (the same machine)
#   bash scripts/gpu_suite_s8.sh fublock # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s8.sh profile # carry .bundle/tvm-b (the same machine)
#   bash scripts/gpu_suite_s8.sh tiles   # carry .bundle/tvm-b (the same machine)
#   bash scripts/gpu_suite_s8.sh vendor  # carry .bundle/tvm-b
# before: kernels for studies/unseen_gemm_2026-11-24-s8.md built (the dispatcher's pick, the
#   default, and the 4 configs first use times), then compare from the committed store without
#   first use: dispatch, default, cuBLAS.
# first: compare with first use on (4 configs and cuBLAS timed per shape, its store file fresh),
#   then again in a second process that reads that file back (nothing is timed twice).
# tests: the GPU tests of dispatch (torch.compile, CUDA graphs, first use).
# stages (commit 1885559, reverted after: see the study README): 192x192 tiles with a 4th ring stage (one epilogue buffer per consumer), then the default
#   where the default takes 192x192, beside the 3-stage ones (two buffers) of the template before,
#   9 rounds, on the 3 seen shapes whose default changed; power: both beside 128x256 and cuBLAS,
#   each held busy (scripts/power.py).
# suite: issue 18's 23-shape suite from the committed store: our kernel alone beside cuBLAS.
# attn, block, decode (issue 20): the attention benchmark, and the decoder block at prefill and
#   at decode on the committed stores, as session 7 ran them, SM clocks sampled.
# energy (issue 20): the prefill-4096 block's ops each held busy (one graph replayed), dispatch's pick beside the
#   vendor op: time, clock, power, TFLOP per joule (the block runs at the power cap).
# warm: the protocol's reading of those GEMMs with 200, 1000 and 3000 ms of warm-up
#   (scripts/warm_probe.py), clocks sampled.
# fublock: the decoder block at decode with first use off, then on (4 configs): the GEMM shapes
#   the store lacks tuned on their first call (first use's candidates prebuilt first).
# profile: the block at prefill 4096, each graph profiled kernel by kernel (--profile).
# tiles: energy per FLOP held busy of cuBLAS's tile shape (256x128: two 128-row consumers) and
#   its 1x2 cluster beside our 128x256 at two of the block's shapes.
# vendor: the block at prefill 4096 on the committed store, then on a copy whose entries for the
#   three GEMMs ours serves there record cuBLAS as faster (so dispatch routes them to it).
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
source scripts/gpu_env.sh
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
LIST=$(unseen_list studies/unseen_gemm_2026-11-24-s8.md)
IDX=$SCRATCH/s8-idx FIRST=4
export AUTOTUNE_CACHE=$SCRATCH/s8-cache  # the first-use store file lives under it
sha256sum $STORE | tee $R/store.sha256
compare() {  # $1 name, $2 seconds, then compare's options
  local name=$1 secs=$2; shift 2
  timeout $secs autotune compare gemm --store $STORE --artifacts $IDX --shapes $LIST \
    --subset "M<=256" --subset "M>1024" --rounds 5 --out $R/$name "$@" > $R/$name.log 2>&1
  echo "$name rc=$? at $SECONDS s" | tee -a $R/run.log; grep -v "^measured" $R/$name.log | tail -26
}
case $1 in
before)
  timeout 330 python3 -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE --shapes $LIST \
    --no-stored --first-use $FIRST --out $IDX --procs 15 > $R/prebuild.log 2>&1
  echo "prebuild rc=$? at $SECONDS s" | tee -a $R/run.log; grep -c built $R/prebuild.log
  grep FAILED $R/prebuild.log | head
  sample_clocks $R/clocks.csv
  compare before 240
  kill %1
  ;;
first)
  rm -rf $AUTOTUNE_CACHE
  sample_clocks $R/clocks.csv
  compare first 400 --first-use $FIRST
  compare again 130 --first-use $FIRST
  kill %1
  cp -r $AUTOTUNE_CACHE/first-use $R/first_use_store
  ;;
tests)
  timeout 500 python3 -m pytest -q -m gpu tests/test_dispatch_gpu.py -p no:cacheprovider \
    > $R/tests.log 2>&1; echo "tests rc=$? at $SECONDS s" | tee -a $R/run.log; tail -5 $R/tests.log
  ;;
stages)
  STAGES3=$R/three_stages.json  # the 3-stage 192x192 configs as "tuned" entries
  python3 -c "
import sys
from autotune.spaces import get_space
from autotune.store import ConfigStore, Entry
space, store = get_space('gemm_sm90'), ConfigStore.read(sys.argv[1])
out = ConfigStore(store.header)
for shape in sys.argv[3:]:
    p = space.parse_problem(shape)
    out.add(Entry(p.key, {**space.default_config(p), 'stages': 3}, 1.0, source='3-stage 192x192'))
out.write(sys.argv[2])" $STORE $STAGES3 1100x45056x8192 1500x3072x4096 1900x65536x5120
  sample_clocks $R/clocks.csv
  timeout 400 autotune compare gemm --store $STAGES3 --shapes 1100x45056x8192 1500x3072x4096 \
    1900x65536x5120 --rounds 9 --out $R/stages > $R/stages.log 2>&1
  echo "stages rc=$? at $SECONDS s" | tee -a $R/run.log; grep -v "^measured" $R/stages.log | tail -8
  kill %1
  ;;
power)
  for shape in 4096x4096x4096 8192x28672x4096 1500x3072x4096; do
    timeout 170 python3 scripts/power.py $shape $R/power_$shape.csv \
      '{"consumers": 2, "blk_n": 256, "stages": 4}' '{"consumers": 3, "blk_n": 192, "stages": 3}' \
      '{"consumers": 3, "blk_n": 192, "stages": 4}' 2>&1 | tail -5
  done
  ;;
suite)
  SUITE=$(python3 -c "from autotune.spaces.gemm_sm90 import SUITE; print(*SUITE)")
  timeout 200 python3 -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE --shapes $SUITE \
    --no-stored --out $IDX --procs 15 > $R/prebuild.log 2>&1
  echo "prebuild rc=$? at $SECONDS s" | tee -a $R/run.log
  sample_clocks $R/clocks.csv
  timeout 360 autotune compare gemm --store $STORE --artifacts $IDX --shapes $SUITE \
    --subset "M<=256" --subset "M>1024" --rounds 5 --out $R/suite > $R/suite.log 2>&1
  echo "suite rc=$? at $SECONDS s" | tee -a $R/run.log; grep -v "^measured" $R/suite.log | tail -4
  kill %1
  ;;
attn)
  attention_bench 330
  ;;
block)
  decoder_block llama_block_prefill block_prefill 400 --decode --prefill 512 2048 4096 --rounds 7
  ;;
decode)
  decoder_block llama_block_decode block_decode 330 --decode 1 8 32 64 --prefill --rounds 7
  ;;
energy)
  timeout 200 python3 scripts/power.py --kernel attention 1x4096/32:8/128/causal \
    $R/energy_attention.csv pick 2>&1 | tail -3
  for shape in 4096x6144x4096 4096x4096x4096 4096x28672x4096 4096x4096x14336; do
    timeout 90 python3 scripts/power.py $shape $R/energy_$shape.csv pick 2>&1 | tail -3
  done
  ;;
warm)
  sample_clocks $R/clocks.csv
  timeout 500 python3 scripts/warm_probe.py $R/warm.csv 4096x6144x4096 4096x4096x4096 \
    4096x28672x4096 4096x4096x14336 > $R/warm.log 2>&1
  echo "warm rc=$? at $SECONDS s" | tee -a $R/run.log; kill %1; tail -14 $R/warm.log
  ;;
fublock)
  SHAPES=$(python3 examples/llama_block.py --list-shapes gemm --decode 1 8 32 64 --prefill)
  timeout 200 python3 -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE --shapes $SHAPES \
    --no-stored --first-use $FIRST --out $IDX --procs 15 > $R/prebuild.log 2>&1
  echo "prebuild rc=$? at $SECONDS s" | tee -a $R/run.log
  for fu in 0 $FIRST; do
    timeout 170 python3 examples/llama_block.py --decode 1 8 32 64 --prefill --rounds 7 \
      --artifacts $IDX --first-use $fu --out $R/decode_first_use_$fu > $R/decode_$fu.log 2>&1
    echo "decode first use $fu rc=$? at $SECONDS s" | tee -a $R/run.log; tail -9 $R/decode_$fu.log
  done
  ;;
profile)
  timeout 400 python3 examples/llama_block.py --decode --prefill 4096 --rounds 7 --profile \
    --out $R/prefill_4096 > $R/profile.log 2>&1
  echo "profile rc=$? at $SECONDS s" | tee -a $R/run.log; tail -6 $R/profile.log
  ;;
tiles)
  for shape in 4096x4096x4096 4096x6144x4096; do
    timeout 170 python3 scripts/power.py $shape $R/tiles_$shape.csv \
      '{"consumers": 2, "wg_m": 64, "blk_n": 256, "stages": 4, "cluster": "2x1"}' \
      '{"consumers": 2, "wg_m": 128, "blk_n": 128, "stages": 3, "cluster": "1x2"}' \
      '{"consumers": 2, "wg_m": 128, "blk_n": 128, "stages": 3, "cluster": "2x1"}' 2>&1 | tail -5
  done
  ;;
vendor)
  python3 -c "
import dataclasses, sys
from autotune.store import ConfigStore
store = ConfigStore.read(sys.argv[1])
for key in ('M=4096,N=6144,K=4096,dtype=bfloat16', 'M=4096,N=4096,K=4096,dtype=bfloat16',
            'M=4096,N=4096,K=14336,dtype=bfloat16'):
    e = store.entries[key]
    store.entries[key] = dataclasses.replace(e, vendor_ms=0.9 * e.time_ms)
store.write(sys.argv[2])" $STORE $R/vendor_store.json
  for store in $STORE $R/vendor_store.json; do
    name=$(basename $store .json)
    timeout 200 python3 examples/llama_block.py --decode --prefill 4096 --rounds 9 --store $store \
      --out $R/prefill_4096_$name > $R/$name.log 2>&1
    echo "$name rc=$? at $SECONDS s" | tee -a $R/run.log; tail -3 $R/$name.log
  done
  ;;
*) echo "usage: gpu_suite_s8.sh stage|site|before|first|tests|stages|power|suite|attn|block|decode|energy|warm|fublock|profile|tiles|vendor" >&2
  exit 2 ;;
esac
tar czf $OUT/$1.tgz -C $R .
