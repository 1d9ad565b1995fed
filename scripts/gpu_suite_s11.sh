#!/usr/bin/env bash
# Session 11 on the GPU machine (issue 18: one timing truth), one step per call, the machine
# kept warm between them (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s11.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s11.sh site    # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s11.sh steady  # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s11.sh judge0  # carry .bundle/tvm-b; judge4, study, after, block alike
# steady: how long a kernel must be held busy before its time repeats (scripts/steady_probe.py):
#   dispatch's pick (session 9's store) and cuBLAS on a decode shape and four of the shapes whose
#   study and compare times parted in sessions 9-10, each held 6 s three times (after 3 s idle,
#   then back to back in turn and in reverse), every ~5 ms replay timed.
# judge0, judge4: studies/unseen_gemm_2026-11-24-s11.md (committed before measuring), compare
#   from the committed store with first use off (judge0), then on (judge4, 4 configs), under the
#   protocol's one-second window.
# study: an 8-trial study of each of those shapes (final rounds: 3); a second call resumes it
#   while the machine is warm (the storage lives in $SCRATCH and comes back in the results).
# after: compare with that store: our kernel alone after a study, and the study's winner time
#   beside compare's.
# block (issue 20): the decoder block at prefill 512/2048/4096 (committed stores), every block
#   call timed under the one-second window: does prefill 4096 read steadily now? block2: again on
#   another machine, with decode (M = 1, 8, 32, 64) and prefill 4096.
# attn (issue 20): the attention benchmark (default, tuned, cuDNN, FlashAttention-2 through SDPA)
#   under the one-second window.
# tests: the GPU tests of dispatch (GEMM, attention), the isolated runner's faults and the GEMM
#   plugin's conformance kit, under the window protocol.
# splitk: the two small-N, long-K shapes of the s11 list where our kernel lost most (0.85-0.87x
#   cuBLAS, no split-K config among the study's 8 trials): split-K 2 and 4 and stream-K beside
#   the default, validated, then held busy (scripts/power.py), cuBLAS beside.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
source scripts/gpu_env.sh
case $1 in
steady)
  STORE=studies/2026-11-24-h100-gemm-s9/study/s9_store.json
  SHAPES="46x8192x5376 168x15872x14848 421x51200x5120 4146x5120x25600 2816x9216x36864"
  prebuild_picks steady $STORE $SHAPES
  sample_clocks $R/clocks.csv
  timeout 420 python3 scripts/steady_probe.py $STORE $R/steady.csv $SHAPES 2>&1 | tail -40
  kill %1
  ;;
judge0|judge4|study|after)
  STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
  unseen_step $1 studies/unseen_gemm_2026-11-24-s11.md s11
  ;;
block)
  decoder_block llama_block_prefill block_prefill 560 --decode --prefill 512 2048 4096 --rounds 5
  ;;
block2)
  decoder_block llama_block block 560 --decode 1 8 32 64 --prefill 4096 --rounds 5
  ;;
attn)
  attention_bench 420
  ;;
tests)
  gpu_tests
  ;;
splitk)
  for spec in '217x3840x15360 {"split_k": 2, "epilogue": "reg"} {"split_k": 4, "epilogue": "reg"} {"stream_k": true, "persistent": true}' \
              '695x2048x10944 {"split_k": 2, "epilogue": "reg", "persistent": false} {"split_k": 4, "epilogue": "reg", "persistent": false} {"stream_k": true}'; do
    shape=${spec%% *}; mapfile -t VARIANTS < <(echo "${spec#* }" | grep -oE '\{[^}]*\}')
    python3 scripts/check_configs.py --procs 15 --shapes $shape --configs "${VARIANTS[@]}" \
      > $R/check_$shape.log 2>&1
    echo "check $shape rc=$? at $SECONDS s" | tee -a $R/run.log; tail -4 $R/check_$shape.log | cut -c1-160
    timeout 100 python3 scripts/power.py $shape $R/splitk_$shape.csv '{}' "${VARIANTS[@]}" 2>&1 | tail -6
  done
  ;;
*) echo "usage: gpu_suite_s11.sh stage|site|steady|judge0|judge4|study|after|block|block2|attn|tests|splitk" >&2
  exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
