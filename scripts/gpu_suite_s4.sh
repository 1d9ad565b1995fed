#!/usr/bin/env bash
# Issue 18, session 4, on one warm GPU machine in two calls back to back
# (studies/2026-11-23-h100-gemm-s4/README.md has the exact calls):
#   bash scripts/gpu_suite_s4.sh stage     # carry .bundle/tvm-a: stages TVM's first part
#   bash scripts/gpu_suite_s4.sh run       # carry .bundle/tvm-b, .bundle/device-site.tar.xz
# run: (dev) the stream-K default beside session 3's study winners on its ragged long-K shapes
#   and beside the stored configs of the suite's M=512 shapes (all seen); (unseen) the shapes of
#   studies/unseen_gemm_2026-11-23-s4.md: compare with the committed store (dispatch, default,
#   cuBLAS), a study (TRIALS, 6) of each, its store, compare with that store, every trial as
#   CSV; (decode) a study of the five decode shapes the committed store lacks.
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
case $1 in
run)
  source scripts/gpu_env.sh
  STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
  S3=studies/2026-11-23-h100-gemm-s4/dev/s3_unseen_store.json  # session 3's study winners
  sha256sum $S3 | tee $R/store.sha256
  RAGGED="2500x5120x17920 600x5120x13824 1200x2304x5760 333x18432x2304"
  MID="512x4096x4096 512x4096x14336 512x28672x4096"
  timeout 120 autotune compare gemm --store $S3 --shapes $RAGGED --rounds 3 \
    --out $R/dev_ragged 2>&1 | tail -n 12
  timeout 90 autotune compare gemm --store $STORE --shapes $MID --rounds 3 \
    --out $R/dev_mid 2>&1 | tail -n 10
  unseen studies/unseen_gemm_2026-11-23-s4.md ${TRIALS:-6} ${STUDY_S:-200}
  DECODE="1x4096x14336 64x6144x4096 64x4096x4096 64x28672x4096 64x4096x14336"
  short_study decode 6 ${DECODE_S:-90} $DECODE
  ;;
*) echo "usage: gpu_suite_s4.sh stage|run" >&2; exit 2 ;;
esac
tar czf $OUT/$1.tgz -C $R .
