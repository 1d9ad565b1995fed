#!/usr/bin/env bash
# Session 25 on the GPU machine (issue 18; only H200s were lent), one step per call:
# four: clusters of four (multicast=4: kernels/gemm/sm90.py, each CTA loading a quarter of the
# shared tile for all four; cuBLAS's kind at M <= 300) held busy beside each shape's default and
# its pair, on 8 seen shapes of M <= 266 (studies/2026-11-28-h200-gemm-s25/four/variants.txt),
# kernels built here by
#   AUTOTUNE_ARTIFACTS=$PWD/build/idx29 python scripts/check_configs.py --build-only \
#     --procs 2 --variants $S25/four/variants.txt
#   bash scripts/gpu_suite_s25.sh four   # carry build/idx29 and build/ncu25
# then ncu in the same call: Nsight Compute over build/ncu25, built here by
#   python scripts/ncu_gemm.py build build/ncu25 4128x16384x1024 \
#     --config 'pair2x1={"cluster": "2x1"}' --config 'pair1x2={"cluster": "1x2"}'
#   python scripts/ncu_gemm.py build build/ncu25 185x2048x5504 \
#     --config 'four1x4={"cluster": "1x2", "multicast": 4}'
# (our default's 128x256 tiles alone and in pairs where cuBLAS runs pairs; 64x64 alone and in
# fours where cuBLAS runs fours).
# diag: why our clusters lose. Held busy at 4 seen shapes: the default, its tiles in pairs and
# fours, and at 217x3840x15360 also evict-normal loads and 6 stages beside the pair; then the
# same clusters built with each CTA loading the whole shared tile itself (no multicast, the
# cluster's barriers kept: a diagnostic build, AUTOTUNE_DIAG_NOMC=1 on a local patch of
# kernels/gemm/sm90.py that is not committed) -> nomc/. Kernels built here by the loop above
# from $S25/diag/variants.txt into build/idx30 and, patched, variants_nomc.txt into
# build/idx30nomc; carry both.
# wait: the same diagnostic patch, AUTOTUNE_DIAG_WAIT=empty (the producer's empty-barrier wait a
# try_wait loop at cluster scope, no suspend-time hint) into build/idx31e and =both (the
# consumers' full-barrier waits too) into build/idx31b, from $S25/diag/variants_wait.txt.
# fwd: a third diagnostic patch, AUTOTUNE_DIAG_FWD=1: in clusters, the consumers release a stage
# on a local barrier only, and an idle producer warp forwards it to every CTA's empty barrier
# (the remote arrivals off the consumers' path), from $S25/diag/variants_fwd.txt into
# build/idx32.
# solo: a fourth, AUTOTUNE_DIAG_SOLO=1: launched as clusters, each CTA runs alone (its own
# loads, its own consumers' releases only: no barrier across the cluster but the first and
# last), from $S25/diag/variants_solo.txt into build/idx33.
# policy: scripts/cluster_launch_probe.cu (where 120 CTAs of 200 KB land, alone and in clusters
# of 2 and 4) under the cluster scheduling policies default/spread/load-balancing, then
# four/'s kernels (build/idx29) at three shapes held busy under each (AUTOTUNE_CLUSTER_POLICY, a
# local patch of tirx/launch.py adding the launch attribute).
# raster: a launch fills a GPC with consecutive clusters, so with raster 'm' a GPC's pairs read
# the same B tiles at once; raster 'n' (group 8 and 16) spreads them: the default and its
# tiles in pairs, each both ways, from $S25/diag/variants_raster.txt into build/idx34 (the
# committed template). Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
set +e  # a failed part is recorded in run.log; the rest and the results still come back
case $1 in
four) cp studies/2026-11-28-h200-gemm-s25/four/variants.txt variants.txt
  rm -rf idx ncu && cp -r build/idx29 idx && cp -r build/ncu25 ncu
  shared_step power; shared_step ncu ;;
diag) S=studies/2026-11-28-h200-gemm-s25/diag  # held busy, then the clusters' own loads again
  cp $S/variants.txt variants.txt && rm -rf idx && cp -r build/idx30 idx && held_busy
  R0=$R && R=$R0/nomc && mkdir -p $R && cp $S/variants_nomc.txt variants.txt
  rm -rf idx && cp -r build/idx30nomc idx && held_busy
  R=$R0 && cp $S/variants.txt variants.txt && variants_vendor ;;
wait) S=studies/2026-11-28-h200-gemm-s25/diag  # the producers' empty waits (e), and the
  # consumers' full waits too (b), as try_wait loops at cluster scope without a time hint
  R0=$R && cp $S/variants_wait.txt variants.txt
  for tag in e b; do
    R=$R0/$tag && mkdir -p $R && rm -rf idx && cp -r build/idx31$tag idx && held_busy
  done
  R=$R0 ;;  # (as run on 2026-11-28 without this line, only b/ came back: e/ is in its log)
fwd) cp studies/2026-11-28-h200-gemm-s25/diag/variants_fwd.txt variants.txt
  rm -rf idx && cp -r build/idx32 idx && held_busy ;;
solo) cp studies/2026-11-28-h200-gemm-s25/diag/variants_solo.txt variants.txt
  rm -rf idx && cp -r build/idx33 idx && held_busy ;;
policy) export PATH=$PATH:/usr/local/cuda/bin  # where the cluster CTAs land, and its cost
  nvcc -arch=sm_90a -o $SCRATCH/probe scripts/cluster_launch_probe.cu
  for p in 0 1 2; do $SCRATCH/probe 120 200000 50 $p > $R/launch_g120_policy$p.csv; done
  cp studies/2026-11-28-h200-gemm-s25/diag/variants_policy.txt variants.txt
  rm -rf idx && cp -r build/idx29 idx && R0=$R
  for p in default spread balance; do
    R=$R0/$p && mkdir -p $R && AUTOTUNE_CLUSTER_POLICY=$p held_busy
  done
  R=$R0 ;;
raster) cp studies/2026-11-28-h200-gemm-s25/diag/variants_raster.txt variants.txt
  rm -rf idx && cp -r build/idx34 idx && held_busy ;;
*) echo "usage: gpu_suite_s25.sh four|diag|wait|fwd|solo|policy|raster" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
