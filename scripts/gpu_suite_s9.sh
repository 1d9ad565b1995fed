#!/usr/bin/env bash
# Session 9 on the GPU machine (issue 18/20: wide tiles of two 128-row consumers), one step per
# call, the machine kept warm between them (stage and site as in gpu_suite_s7.sh):
#   bash scripts/gpu_suite_s9.sh stage   # carry .bundle/tvm-a
#   bash scripts/gpu_suite_s9.sh site    # carry .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s9.sh wide    # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s9.sh wide3   # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s9.sh ragged  # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s9.sh orient  # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s9.sh judge   # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s9.sh study   # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s9.sh deep    # carry .bundle/tvm-b
#   bash scripts/gpu_suite_s9.sh l2rows  # carry .bundle/tvm-b
# wide: 256x192 and 256x160 tiles (two consumers of two m64 atoms, 192/160 accumulators each,
#   legal since setmaxnreg's 232 registers were found to hold them) beside dispatch's pick and
#   cuBLAS on the block's prefill-4096 GEMMs and two large seen shapes: each validated once
#   (poisoned outputs), then held busy (scripts/power.py: time, SM clock, power, TFLOP/J).
# wide3: the same after 256-row tiles stage the epilogue through one buffer per consumer where
#   two do not fit beside the ring: 256x192 with 3 stages, 256x160 and 256x128 with 4.
# ragged: which kernels cuBLAS runs on the s8 unseen list's shapes where our kernel lost most
#   (scripts/cublas_kernels.py), and at 1300x43008x14336 (0.87 TFLOP/J against cuBLAS's 1.03)
#   192-row tiles (7 row tiles of 1300 instead of 11 of 128 rows) held busy beside the default.
# orient: on seen shapes whose tile rows are odd, the cluster pair along N (1x2, no padded tile
#   row) beside the pair along M (2x1, which runs one more tile row), for 128x256 and 192x192
#   tiles, held busy: the evidence for the default's choice of orientation.
# judge: studies/unseen_gemm_2026-11-24-s9.md (committed before measuring): compare from the
#   committed store with first use off (dispatch, default, cuBLAS), then on (4 configs).
# study: an 8-trial study of each of those shapes, its store, and compare with that store (our
#   kernel alone after a study, and the study's winner time beside compare's).
# deep: 32-trial studies of the five unseen shapes our kernel lost most on after the 8-trial
#   ones (is it the search or the template?), then compare with their store.
# l2rows: why 128x256 in 1x2 pairs stalls at 3100x8192x22016. A pair multicasts the operand it
#   shares, so a CTA loads 128 + 256/2 = 256 rows a K step in 2x1 pairs but 128/2 + 256 = 320
#   in 1x2 ones; 256x128 tiles turn that round. Held busy, the four: if the 320-row ones are
#   the slow ones, it is L2 traffic.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
source scripts/gpu_env.sh
STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
sha256sum $STORE | tee $R/store.sha256
case $1 in
wide|wide3)
  SHAPES="4096x4096x4096 4096x6144x4096 4096x28672x4096 4096x4096x14336 1300x43008x14336 8192x8192x8192"
  VARIANTS=('{"consumers": 2, "wg_m": 128, "blk_n": 192, "stages": 2, "cluster": "2x1"}'
            '{"consumers": 2, "wg_m": 128, "blk_n": 192, "stages": 2, "cluster": "1x2"}'
            '{"consumers": 2, "wg_m": 128, "blk_n": 160, "stages": 3, "cluster": "2x1"}'
            '{"consumers": 2, "wg_m": 128, "blk_n": 160, "stages": 3, "cluster": "1x2"}')
  [ $1 = wide3 ] && VARIANTS=(
    '{"consumers": 2, "wg_m": 128, "blk_n": 192, "stages": 3, "cluster": "2x1"}'
    '{"consumers": 2, "wg_m": 128, "blk_n": 192, "stages": 3, "cluster": "1x2"}'
    '{"consumers": 2, "wg_m": 128, "blk_n": 160, "stages": 4, "cluster": "1x2"}'
    '{"consumers": 2, "wg_m": 128, "blk_n": 128, "stages": 4, "cluster": "1x2"}')
  python3 scripts/check_configs.py --procs 15 --shapes $SHAPES --configs "${VARIANTS[@]}" \
    > $R/check.log 2>&1
  echo "check rc=$? at $SECONDS s" | tee -a $R/run.log; tail -30 $R/check.log
  sample_clocks $R/clocks.csv
  for shape in $SHAPES; do
    timeout 100 python3 scripts/power.py $shape $R/wide_$shape.csv pick "${VARIANTS[@]}" \
      2>&1 | tail -7
  done
  kill %1
  ;;
ragged)
  python3 scripts/cublas_kernels.py $R/cublas 1300x43008x14336 4100x2560x5120 1500x3840x1280 \
    729x4304x1152 200x7168x28672 900x21504x7168 2>&1 | tail -12
  V192=('{"consumers": 3, "wg_m": 64, "blk_n": 192, "stages": 3, "cluster": "2x1"}'
        '{"consumers": 3, "wg_m": 64, "blk_n": 192, "stages": 3, "cluster": "1x2"}'
        '{"consumers": 3, "wg_m": 64, "blk_n": 160, "stages": 3, "cluster": "1x2"}')
  python3 scripts/check_configs.py --procs 15 --shapes 1300x43008x14336 --configs "${V192[@]}" \
    > $R/check.log 2>&1
  echo "check rc=$? at $SECONDS s" | tee -a $R/run.log; tail -4 $R/check.log | cut -c1-60,300-
  sample_clocks $R/clocks.csv
  timeout 100 python3 scripts/power.py 1300x43008x14336 $R/rows192_1300x43008x14336.csv \
    '{}' "${V192[@]}" 2>&1 | tail -5
  kill %1
  ;;
orient)
  T128=('{"consumers": 2, "wg_m": 64, "blk_n": 256, "stages": 4, "cluster": "2x1"}'
        '{"consumers": 2, "wg_m": 64, "blk_n": 256, "stages": 4, "cluster": "1x2"}')
  T192=('{"consumers": 3, "wg_m": 64, "blk_n": 192, "stages": 3, "cluster": "2x1"}'
        '{"consumers": 3, "wg_m": 64, "blk_n": 192, "stages": 3, "cluster": "1x2"}')
  python3 scripts/check_configs.py --procs 15 --shapes 1300x43008x14336 1100x45056x8192 \
    4100x2560x5120 3100x8192x22016 --configs "${T128[@]}" "${T192[@]}" > $R/check.log 2>&1
  echo "check rc=$? at $SECONDS s" | tee -a $R/run.log; grep -vc " ok$" $R/check.log || true
  sample_clocks $R/clocks.csv
  for shape in 1300x43008x14336 1100x45056x8192; do
    timeout 100 python3 scripts/power.py $shape $R/orient_$shape.csv "${T128[@]}" "${T192[@]}" \
      2>&1 | tail -5 | cut -c1-20,60-
  done
  for shape in 4100x2560x5120 3100x8192x22016; do
    timeout 100 python3 scripts/power.py $shape $R/orient_$shape.csv "${T128[@]}" \
      2>&1 | tail -3 | cut -c1-20,60-
  done
  kill %1
  ;;
judge)
  judge_unseen studies/unseen_gemm_2026-11-24-s9.md s9
  ;;
study)
  LIST=$(unseen_list studies/unseen_gemm_2026-11-24-s9.md)
  sample_clocks $R/clocks.csv
  short_study s9 8 330 $LIST
  echo "study at $SECONDS s" | tee -a $R/run.log; tail -20 $R/s9_study.log
  timeout 200 autotune compare gemm --store $R/s9_store.json --shapes $LIST --subset "M<=256" \
    --subset "M>1024" --rounds 5 --out $R/after > $R/after.log 2>&1
  echo "after rc=$? at $SECONDS s" | tee -a $R/run.log; grep -v "^measured" $R/after.log | tail -5
  kill %1
  ;;
deep)
  WORST="71x5376x4096 168x15872x14848 465x10240x5120 2426x5120x8192 4146x5120x25600"
  sample_clocks $R/clocks.csv
  short_study deep 32 400 $WORST
  echo "study at $SECONDS s" | tee -a $R/run.log; grep -E "^M=|best|default|vendor" $R/deep_study.log | tail -20
  timeout 150 autotune compare gemm --store $R/deep_store.json --shapes $WORST --rounds 5 \
    --out $R/after > $R/after.log 2>&1
  echo "after rc=$? at $SECONDS s" | tee -a $R/run.log; grep -v "^measured" $R/after.log | tail -8
  kill %1
  ;;
l2rows)
  V=('{"consumers": 2, "wg_m": 64, "blk_n": 256, "stages": 4, "cluster": "2x1"}'
     '{"consumers": 2, "wg_m": 64, "blk_n": 256, "stages": 4, "cluster": "1x2"}'
     '{"consumers": 2, "wg_m": 128, "blk_n": 128, "stages": 4, "cluster": "1x2"}'
     '{"consumers": 2, "wg_m": 128, "blk_n": 128, "stages": 4, "cluster": "2x1"}')
  python3 scripts/check_configs.py --procs 15 --shapes 3100x8192x22016 4096x4096x4096 \
    --configs "${V[@]}" > $R/check.log 2>&1
  echo "check rc=$? at $SECONDS s" | tee -a $R/run.log; grep -vc " ok$" $R/check.log || true
  sample_clocks $R/clocks.csv
  for shape in 3100x8192x22016 4096x4096x4096; do
    timeout 100 python3 scripts/power.py $shape $R/l2rows_$shape.csv "${V[@]}" 2>&1 \
      | tail -5 | cut -c1-20,60-
  done
  kill %1
  ;;
*) echo "usage: gpu_suite_s9.sh stage|site|wide|wide3|ragged|orient|judge|study|deep|l2rows" >&2
  exit 2 ;;
esac
tar czf $OUT/$1.tgz -C $R .
