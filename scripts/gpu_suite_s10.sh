#!/usr/bin/env bash
# Session 10 on the GPU machine (issue 18: one timing truth), one step per call, the machine
# kept warm between them (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s10.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s10.sh site    # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s10.sh probe   # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s10.sh skip    # carry .bundle/tvm-b and ../s10 (this commit's parent)
#   bash scripts/gpu_suite_s10.sh judge   # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s10.sh study   # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s10.sh after   # carry .bundle/tvm-b; right after study (its store)
#   bash scripts/gpu_suite_s10.sh tests   # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s10.sh wide    # carry .bundle/tvm-b
# probe: why a study's winner time and compare's disagree on large GEMMs (session 9: 5 of 16
#   unseen shapes, all reading our kernel slower in compare): the study's picks and cuBLAS timed
#   in interleaved rounds, with 100 timed replays, after 3 s idle, on re-allocated inputs and
#   held busy, each with the temperature and SM clock (scripts/timing_probe.py). Four misses
#   and one shape that agreed (2816x9216x36864).
# skip: consumers whose rows all lie past M skip their wgmmas (TMA zero-fills their operand
#   rows, so they only multiplied zeros). The default config of five shapes with such consumers,
#   validated (poisoned outputs), then held busy under this template and under the one before
#   (../s10, staged from the parent commit), cuBLAS beside in each: tree after tree, per shape.
# judge: studies/unseen_gemm_2026-11-24-s10.md (committed before measuring): compare from the
#   committed store with first use off (dispatch, default, cuBLAS), then on (4 configs).
# study: an 8-trial study of each of those shapes (final rounds: 5), its store, every trial.
# after: compare with that store, 10 rounds: our kernel alone after a study, and the study's
#   winner time beside compare's. study and after ran twice: at c3a7baa, then again once studies
#   enqueued their seeds best estimate first (results study_ranked/, after_ranked/).
# tests: the GPU tests of dispatch (GEMM and attention: the artifact index now keys on the
#   template hash) and of the isolated runner, on the merged H100 store.
# wide: cuBLAS runs 256x144 tiles in 1x2 pairs at 3669x2560x2048 (ncu/). On the four large-M,
#   small-N shapes of the s10 list where our kernel lost most, 256-row tiles 144-176 wide in 1x2
#   pairs beside dispatch's pick (the merged store), validated, then held busy, cuBLAS beside.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
source scripts/gpu_env.sh
case $1 in
probe)
  STORE=studies/2026-11-24-h100-gemm-s9/study/s9_store.json
  SHAPES="168x15872x14848 4146x5120x25600 421x51200x5120 1236x5376x21504 2816x9216x36864"
  prebuild_picks probe $STORE $SHAPES
  sample_clocks $R/clocks.csv
  timeout 480 python3 scripts/timing_probe.py $STORE $R/probe.csv $SHAPES 2>&1 | tail -40
  kill %1
  ;;
skip)
  SHAPES="168x15872x14848 421x51200x5120 1300x43008x14336 3100x8192x22016 4146x5120x25600"
  python3 scripts/check_configs.py --procs 15 --shapes $SHAPES --configs '{}' > $R/check.log 2>&1
  echo "check rc=$? at $SECONDS s" | tee -a $R/run.log; tail -8 $R/check.log | cut -c1-200
  (cd ../s10 && PYTHONPATH=$SITE:$PWD:$PWD/tests python3 -m autotune.dispatch prebuild \
    --space gemm_sm90 --shapes $SHAPES --no-stored --procs 15 > $R/prebuild_before.log 2>&1)
  echo "prebuild (before) rc=$? at $SECONDS s" | tee -a $R/run.log
  sample_clocks $R/clocks.csv
  for shape in $SHAPES; do
    (cd ../s10 && PYTHONPATH=$SITE:$PWD:$PWD/tests timeout 60 python3 scripts/power.py $shape \
      $R/before_$shape.csv '{}' 2>&1 | tail -3)
    timeout 60 python3 scripts/power.py $shape $R/after_$shape.csv '{}' 2>&1 | tail -3
  done
  kill %1
  ;;
judge)
  STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
  sha256sum $STORE | tee $R/store.sha256
  judge_unseen studies/unseen_gemm_2026-11-24-s10.md s10
  ;;
study)
  LIST=$(unseen_list studies/unseen_gemm_2026-11-24-s10.md)
  sample_clocks $R/clocks.csv
  short_study s10 8 560 $LIST
  echo "study at $SECONDS s" | tee -a $R/run.log; tail -20 $R/s10_study.log
  kill %1
  ;;
after)
  LIST=$(unseen_list studies/unseen_gemm_2026-11-24-s10.md)
  cp $SCRATCH/results/study/s10_store.json $R/
  sample_clocks $R/clocks.csv
  timeout 560 autotune compare gemm --store $R/s10_store.json --shapes $LIST --subset "M<=256" \
    --subset "M>1024" --rounds 10 --out $R/after > $R/after.log 2>&1
  echo "after rc=$? at $SECONDS s" | tee -a $R/run.log; grep -v "^measured" $R/after.log | tail -5
  kill %1
  ;;
tests)
  timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_dispatch_gpu.py \
    tests/test_attention_dispatch_gpu.py tests/test_runner_gpu_faults.py > $R/tests.log 2>&1
  echo "tests rc=$? at $SECONDS s" | tee -a $R/run.log; tail -5 $R/tests.log
  ;;
wide)
  SHAPES="3669x2560x2048 5464x3584x14336 3339x4544x18176 1948x5120x14336"
  VARIANTS=('{"consumers": 2, "wg_m": 128, "blk_n": 144, "stages": 4, "cluster": "1x2"}'
            '{"consumers": 2, "wg_m": 128, "blk_n": 160, "stages": 4, "cluster": "1x2"}'
            '{"consumers": 2, "wg_m": 128, "blk_n": 176, "stages": 4, "cluster": "1x2"}')
  python3 scripts/check_configs.py --procs 15 --shapes $SHAPES --configs "${VARIANTS[@]}" \
    > $R/check.log 2>&1
  echo "check rc=$? at $SECONDS s" | tee -a $R/run.log; tail -14 $R/check.log | cut -c1-120
  sample_clocks $R/clocks.csv
  for shape in $SHAPES; do
    timeout 100 python3 scripts/power.py $shape $R/wide_$shape.csv pick "${VARIANTS[@]}" \
      2>&1 | tail -6
  done
  kill %1
  ;;
*) echo "usage: gpu_suite_s10.sh stage|site|probe|skip|judge|study|after|tests|wide" >&2
  exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
