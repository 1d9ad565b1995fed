#!/usr/bin/env bash
# Issue 6 on a GPU machine: tune the Llama-3-8B projection shapes briefly on every GPU, export
# the config store, then compare (tuned vs default vs cuBLAS), the decoder-block example and the
# dispatch-overhead benchmark on that store. Writes under $OUT.
source scripts/gpu_env.sh
DB=sqlite:///$OUT/usage.db
SHAPES="64x6144x4096 64x4096x4096 64x28672x4096 64x4096x14336 2048x6144x4096 2048x4096x4096 2048x28672x4096 2048x4096x14336"
timeout 240 autotune tune gemm_sm90 --shapes $SHAPES --trials ${TRIALS:-12} --gpus 0,1 --storage $DB --seed 0 --no-progress 2>&1 | tail -12
python3 -m autotune.store export --space gemm_sm90 --storage $DB --root $OUT/configs 2>&1 | tail -3
STORE=$(ls $OUT/configs/gemm_sm90/*.json | head -1)
timeout 150 autotune compare gemm --store $STORE --artifacts $SCRATCH/dispatch --out $OUT/report 2>&1 | tail -16
timeout 150 python3 examples/llama_block.py --store $STORE --artifacts $SCRATCH/dispatch --out $OUT/llama_block 2>&1 | tail -16
timeout 60 python3 -m autotune.bench.dispatch_overhead --shape 2048x4096x4096 --store $STORE --artifacts $SCRATCH/dispatch --out $OUT/dispatch_overhead.json 2>&1 | tail -10
