#!/usr/bin/env bash
# What cuBLAS's kernel does with its warpgroups at a GEMM shape (on the GPU machine): Nsight
# Compute's per-instruction counts of the kernel torch.matmul runs (A @ B^T, bf16), its SASS
# with the executed-instruction count of each line -> $OUT/sass_<shape>.csv, and a summary of
# the wgmma (HGMMA), barrier and warpgroup-register lines -> stdout.
#   bash scripts/cublas_sass.sh 185x2048x5504 217x3840x15360
set -e
export PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-${TMPDIR:-/tmp}}
for shape in "$@"; do
  IFS=x read -r M N K <<< "$shape"
  cat > $OUT/mm.py <<PY
import torch
a = torch.randn($M, $K, device="cuda", dtype=torch.bfloat16)
b = torch.randn($N, $K, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    c = a @ b.T
torch.cuda.synchronize()
PY
  ncu --kernel-name regex:nvjet --launch-skip 2 --launch-count 1 --section SourceCounters \
    -f -o $OUT/nvjet_$shape python3 $OUT/mm.py > $OUT/ncu_$shape.log 2>&1
  ncu -i $OUT/nvjet_$shape.ncu-rep --page source --csv --print-source sass \
    > $OUT/sass_$shape.csv 2>> $OUT/ncu_$shape.log
  rm -f $OUT/nvjet_$shape.ncu-rep $OUT/mm.py
  echo "== $shape: $(wc -l < $OUT/sass_$shape.csv) lines"
  head -n 1 $OUT/sass_$shape.csv | cut -c1-400
  grep -E "HGMMA|WARPGROUP|SETMAXREG|BAR\.|SYNCS|UTMA|STSM|REDUX" $OUT/sass_$shape.csv \
    | cut -c1-220 | head -n 70
done
