#!/usr/bin/env bash
# Session 10 on the GPU machine (issue 18: one timing truth), one step per call, the machine
# kept warm between them (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s10.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s10.sh site    # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s10.sh probe   # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s10.sh skip    # carry .bundle/tvm-b and ../s10 (this commit's parent)
# probe: why a study's winner time and compare's disagree on large GEMMs (session 9: 5 of 16
#   unseen shapes, all reading our kernel slower in compare): the study's picks and cuBLAS timed
#   in interleaved rounds, with 100 timed replays, after 3 s idle, on re-allocated inputs and
#   held busy, each with the temperature and SM clock (scripts/timing_probe.py). Four misses
#   and one shape that agreed (2816x9216x36864).
# skip: consumers whose rows all lie past M skip their wgmmas (TMA zero-fills their operand
#   rows, so they only multiplied zeros). The default config of five shapes with such consumers,
#   validated (poisoned outputs), then held busy under this template and under the one before
#   (../s10, staged from the parent commit), cuBLAS beside in each: tree after tree, per shape.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
source scripts/gpu_env.sh
case $1 in
probe)
  STORE=studies/2026-11-24-h100-gemm-s9/study/s9_store.json
  SHAPES="168x15872x14848 4146x5120x25600 421x51200x5120 1236x5376x21504 2816x9216x36864"
  export AUTOTUNE_ARTIFACTS=$SCRATCH/probe-idx
  python3 -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE --shapes $SHAPES \
    --no-stored --out $AUTOTUNE_ARTIFACTS --procs 15 > $R/prebuild.log 2>&1
  echo "prebuild rc=$? at $SECONDS s" | tee -a $R/run.log
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
*) echo "usage: gpu_suite_s10.sh stage|site|probe|skip" >&2
  exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
