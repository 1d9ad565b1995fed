#!/usr/bin/env bash
# Session 27 on the GPU machine (issue 18; H200), one step per call:
# placement: which tile each SM computes, with the launch unchanged (a 1x1 grid of our default's
# 64-row tiles): the tile orders of other launches (raster n, pairs in raster m, pairs along N in
# groups of 8) transplanted SM by SM, and synthetic ones grouping the SMs that share a weight
# column by GPC, at 217x3840x15360 and 200x2048x5632, held busy beside cuBLAS, then Nsight
# Compute's L2/DRAM counters at 217x3840x15360. Built here with the diag patch of
# studies/2026-11-29-h200-gemm-s27/README.md (the tile of each CTA from a table; `group`
# selects the table) and AUTOTUNE_DIAG_PERM=$S27/placement/perms.json by
#   AUTOTUNE_ARTIFACTS=$PWD/build/idx40 python scripts/check_configs.py --build-only \
#     --procs 2 --variants $S27/placement/variants.txt
#   python scripts/ncu_gemm.py build build/ncu40 217x3840x15360 --config 'g5={"group":5}' ...
#   bash scripts/gpu_suite_s27.sh placement   # carry build/idx40 build/ncu40
# clusterlaunch: the same 1x1 kernels (no cluster instruction in their code) launched in
# clusters of 2 (artifact.json's launch.cluster set to [2, 1, 1] after the build, CLUSTER_LAUNCHED
# in $S27/placement/make_perms.py): the natural order, the pairs' tiles on their SMs, the 1x1
# launch's tiles on their SMs, one GPC per weight column, spread over GPCs; beside the 1x1
# launch of the default, the pairs' tiles and one GPC per column; into build/idx41 and
# build/ncu41 as above:  bash scripts/gpu_suite_s27.sh clusterlaunch  # carry both
# gpcorder: cluster configs with the committed template whose tile order keeps a weight
# column's clusters 8 or 16 cluster ids apart (raster 'n', group 8 / 16: in one GPC in the
# launches measured) beside the default and '2x1' in its default order, at 9 seen shapes
# ($S27/gpcorder/variants.txt, built as above into build/idx42), then where clusters of the
# grids those configs launch land (scripts/cluster_launch_probe.cu):
#   bash scripts/gpu_suite_s27.sh gpcorder   # carry build/idx42
# pairsncu: Nsight Compute at 217x3840x15360 of those pairs, a four ('2x1', multicast 4), and
# swapped 64x112 tiles (cuBLAS's), beside the default and cuBLAS, built here by
#   python scripts/ncu_gemm.py build build/ncu43 217x3840x15360 --config \
#     'p2x1n16={"cluster":"2x1","raster":"n","group":16}' ... (tags in the README)
#   bash scripts/gpu_suite_s27.sh pairsncu   # carry build/ncu43
# swapclusters: cuBLAS's layouts at skinny M (swapped tiles: the weights on the 64/128-row side,
# M in 1-3 tiles; clusters of 4 along N multicasting the activation tile) in our template:
# swapped tiles alone, in '2x1' pairs and fours (multicast 4), raster 'm' (a weight tile's
# clusters 8 apart) and 'n', beside the default, at 6 seen shapes, built into build/idx44 by
#   AUTOTUNE_ARTIFACTS=$PWD/build/idx44 python scripts/check_configs.py --build-only \
#     --procs 2 --variants $S27/swapclusters/variants.txt
#   bash scripts/gpu_suite_s27.sh swapclusters   # carry build/idx44
# winncu: Nsight Compute where swapped tiles won (266x5120x12288: 128x96, alone, fours raster
# 'm' / 'n', pairs; 200x2048x5632: 64x80 alone and paired, 64x112), beside the default and
# cuBLAS, built by `python scripts/ncu_gemm.py build build/ncu45 SHAPE --config TAG=JSON ...`
# (tags in the README):  bash scripts/gpu_suite_s27.sh winncu   # carry build/ncu45
# judge28: list s28 (studies/unseen_gemm_2026-11-28-s28.md, committed before): the default,
# the candidate (swapped 128-row tiles, fours along N, raster 'm') and its tiles alone, held
# busy beside cuBLAS, built by `check_configs.py --build-only --variants
# $S27/judge28/variants.txt` into build/idx46:
#   bash scripts/gpu_suite_s27.sh judge28   # carry build/idx46
# judge29: list s29 (studies/unseen_gemm_2026-11-28-s29.md, committed before): the same
# beside SWAPPED_FOURS carried to M in two columns, into build/idx47 as for judge28:
#   bash scripts/gpu_suite_s27.sh judge29   # carry build/idx47
# Results: $OUT/<step>.tgz.
source scripts/gpu_suite_common.sh "$1"
set +e  # a failed part is recorded in run.log; the rest and the results still come back
S27=studies/2026-11-29-h200-gemm-s27
case $1 in
placement)
  held_busy_from $S27/placement/variants.txt build/idx40
  OUT=$R timeout 240 bash scripts/ncu_gemm.sh build/ncu40 217x3840x15360 > $R/ncu.log 2>&1
  echo "ncu rc=$? at $SECONDS s" | tee -a $R/run.log; tail -n 40 $R/ncu.log ;;
clusterlaunch)
  held_busy_from $S27/clusterlaunch/variants.txt build/idx41
  OUT=$R timeout 240 bash scripts/ncu_gemm.sh build/ncu41 217x3840x15360 > $R/ncu.log 2>&1
  echo "ncu rc=$? at $SECONDS s" | tee -a $R/run.log; tail -n 12 $R/ncu.log ;;
gpcorder)
  held_busy_from $S27/gpcorder/variants.txt build/idx42
  nvcc -arch=sm_90a -o $SCRATCH/probe scripts/cluster_launch_probe.cu
  for grid in 100 108 126 168; do
    timeout 30 $SCRATCH/probe $grid 200000 50 > $R/launch_g$grid.csv
  done
  echo "probe rc=$? at $SECONDS s" | tee -a $R/run.log ;;
pairsncu)
  OUT=$R timeout 300 bash scripts/ncu_gemm.sh build/ncu43 217x3840x15360 > $R/ncu.log 2>&1
  echo "ncu rc=$? at $SECONDS s" | tee -a $R/run.log; tail -n 12 $R/ncu.log ;;
swapclusters) held_busy_from $S27/swapclusters/variants.txt build/idx44 ;;
winncu)
  for shape in 266x5120x12288 200x2048x5632; do
    OUT=$R timeout 200 bash scripts/ncu_gemm.sh build/ncu45 $shape > $R/ncu-$shape.log 2>&1
    echo "ncu $shape rc=$? at $SECONDS s" | tee -a $R/run.log
  done ;;
judge28) held_busy_from $S27/judge28/variants.txt build/idx46 ;;
judge29) held_busy_from $S27/judge29/variants.txt build/idx47 ;;
*) echo "usage: gpu_suite_s27.sh placement|clusterlaunch|gpcorder|pairsncu|swapclusters|" \
     "winncu|judge28|judge29" >&2
   exit 2 ;;
esac
echo "$1 done at $SECONDS s" | tee -a $R/run.log
tar czf $OUT/$1.tgz -C $R .
