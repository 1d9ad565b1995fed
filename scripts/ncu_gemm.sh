#!/usr/bin/env bash
# On a GPU machine (torch + cuda-bindings, no TVM): Nsight Compute over scripts/ncu_gemm.py run,
# for the artifacts `scripts/ncu_gemm.py build` made; the report lands in $OUT/ncu-<shape>.csv.
#   bash scripts/ncu_gemm.sh .gpu/ncu 512x6144x4096
set -e
export PYTHONPATH=$PWD
ncu --target-processes all --cache-control all --clock-control base \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
  --section LaunchStats --section WarpStateStats --section SchedulerStats \
  --csv --page details python3 scripts/ncu_gemm.py run "$1" "$2" > "$OUT/ncu-$2.csv"
grep -E '"(Duration|DRAM Throughput|Memory Throughput|L2 Hit Rate|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per Thread|Grid Size|Cluster Size|Dynamic Shared Memory Per Block|Issued Warp Per Scheduler|No Eligible)"' "$OUT/ncu-$2.csv" \
  | awk -F'","' '{printf "%-60.60s %-34s %s %s\n", $5, $13, $15, $16}' | sed 's/"//g'
