#!/usr/bin/env bash
# After scripts/gpu_suite_study.sh: export the tuned configs, benchmark default vs tuned vs cuBLAS
# over the suite (scripts/bench_gemm_sm90.py), then what users run on the store: the comparison
# report, the decoder-block example, the dispatch overhead and the custom-op GPU tests.
source scripts/gpu_env.sh
DB=sqlite:///$SCRATCH/suite.db
python3 -m autotune.store export --space gemm_sm90 --storage $DB --root $OUT/configs 2>&1 | tail -n 3
STORE=$(ls $OUT/configs/gemm_sm90/*.json | head -1)
python3 scripts/bench_gemm_sm90.py build $SCRATCH/bench --store $STORE --no-neighbours > $OUT/bench_build.log 2>&1
timeout 200 python3 scripts/bench_gemm_sm90.py run $SCRATCH/bench $OUT/bench 2>&1 | tail -n 30
export AUTOTUNE_ARTIFACTS=$SCRATCH/dispatch
timeout 120 autotune compare gemm --store $STORE --artifacts $SCRATCH/dispatch --out $OUT/report 2>&1 | tail -n 40
timeout 120 python3 examples/llama_block.py --store $STORE --artifacts $SCRATCH/dispatch --out $OUT/llama_block 2>&1 | tail -n 16
timeout 60 python3 scripts/bench_dispatch_overhead.py --shape 2048x4096x4096 --store $STORE --artifacts $SCRATCH/dispatch --out $OUT/dispatch_overhead.json 2>&1 | tail -n 10
cp $STORE studies/configs/gemm_sm90/ 2>/dev/null
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_dispatch_gpu.py 2>&1 | tail -n 8 | tee $OUT/test_dispatch_gpu.log
