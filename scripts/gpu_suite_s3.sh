#!/usr/bin/env bash
# Issue 18, session 3, on one warm GPU machine in three calls back to back
# (studies/2026-11-23-h100-gemm-s3/README.md has the exact calls):
#   bash scripts/gpu_suite_s3.sh stage     # carry .bundle/tvm-a: stages TVM's first part
#   bash scripts/gpu_suite_s3.sh retune    # carry .bundle/tvm-b, .bundle/device-site.tar.xz
#   bash scripts/gpu_suite_s3.sh unseen    # the same carry, next
# retune: a study (TRIALS, 6) of each suite shape and of the four Llama-3-8B (N, K) at M=1 and
#   M=64, exported under graph-warm into store.json on top of the previous held-out studies'
#   store; compare on the suite with it (the study's time beside compare's); the decode probe.
# unseen: the shapes of studies/unseen_gemm_2026-11-23-s3.md: compare with the committed store
#   (dispatch, default, cuBLAS), a study (TRIALS, 12) of each, its
#   store, compare with that store (the study's time beside compare's), every trial as CSV.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
case $1 in
retune)
  source scripts/gpu_env.sh
  SUITE=$(python3 -c "from autotune.spaces.gemm_sm90 import SUITE; print(' '.join(SUITE))")
  DECODE="1x6144x4096 1x4096x4096 1x28672x4096 1x4096x14336 64x6144x4096 64x4096x4096 64x28672x4096 64x4096x14336"
  rm -f $SCRATCH/retune.db && DB=sqlite:///$SCRATCH/retune.db
  timeout ${STUDY_S:-300} autotune tune gemm_sm90 --shapes $SUITE $DECODE --trials ${TRIALS:-6} \
    --gpus 0 --compile-workers 15 --storage $DB --seed 0 --no-progress 2>&1 | tail -n 200 > $R/study.log
  cp studies/2026-11-23-h100-gemm-heldout/after/heldout_store.json $R/store.json
  python3 -m autotune.store export --space gemm_sm90 --storage $DB --out $R/store.json
  sha256sum $R/store.json | tee $R/store.sha256
  trials_csv $DB $R/trials.csv
  timeout 150 autotune compare gemm --store $R/store.json --shapes $SUITE $DECODE --subset "M<=256" \
    --rounds 3 --out $R/suite 2>&1 | tail -n 40
  timeout 80 python3 studies/2026-11-23-h100-gemm-s3/probe_decode.py $R \
    1x4096x4096 16x6144x4096 2>&1 | tail -n 20
  ;;
unseen)
  source scripts/gpu_env.sh
  unseen studies/unseen_gemm_2026-11-23-s3.md ${TRIALS:-12} ${STUDY_S:-240}
  ;;
*) echo "usage: gpu_suite_s3.sh stage|retune|unseen" >&2; exit 2 ;;
esac
tar czf $OUT/$1.tgz -C $R .
