#!/usr/bin/env bash
# On a GPU machine (torch + cuda-bindings, no TVM): where each kernel's warps wait, instruction by
# instruction. Nsight Compute's SourceCounters of every config `scripts/ncu_gemm.py build` made
# for a shape, one kernel a pass, then of cuBLAS's kernel at it: the SASS with each line's
# executed warp-instructions and stall samples -> $OUT/sass_<shape>_<tag>.csv (tag cublas last),
# and the wgmma, barrier, TMA and sleep lines of each -> stdout. cuBLAS's alone at a shape:
# scripts/cublas_sass.sh.
#   bash scripts/ncu_sass.sh build/ncu50 185x2048x5504
set -e
export PYTHONPATH=$PWD
# the order `ncu_gemm.py run` launches them in: its tags sorted, then cuBLAS
tags=($(cd "$1/$2" && ls -d */ | tr -d / | LC_ALL=C sort) cublas)
for i in "${!tags[@]}"; do
  tag=${tags[$i]} rep=$OUT/sass_$2_${tags[$i]}
  ncu --kernel-name regex:'gemm_kernel|nvjet' --launch-skip $i --launch-count 1 \
    --section SourceCounters -f -o $rep python3 scripts/ncu_gemm.py run "$1" "$2" \
    > $rep.log 2>&1
  ncu -i $rep.ncu-rep --page source --csv --print-source sass > $rep.csv 2>> $rep.log
  rm -f $rep.ncu-rep
  echo "== $2 $tag: $(wc -l < $rep.csv) lines"
  grep -E "HGMMA|WARPGROUP|SYNCS|UTMA|NANOSLEEP|BAR\." $rep.csv | cut -c1-160 | head -n 60
done
