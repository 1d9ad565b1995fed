#!/usr/bin/env bash
# On a GPU machine (torch + cuda-bindings, no TVM): Nsight Compute over scripts/ncu_gemm.py run,
# for the artifacts `scripts/ncu_gemm.py build` made: our kernels and cuBLAS's, each profiled
# cold (caches flushed) at the GPU's own clocks (METHOD.md: leave them alone; each row reports
# its SM frequency). The report lands in $OUT/ncu-<shape>.ncu-rep, with its details and raw
# pages as CSV (every collected metric, the stall reasons among them).
#   bash scripts/ncu_gemm.sh .gpu/ncu 512x6144x4096
set -e
export PYTHONPATH=$PWD
ncu --target-processes all --cache-control all --clock-control none -f \
  --kernel-name regex:'gemm_kernel|nvjet' \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
  --section MemoryWorkloadAnalysis_Tables \
  -o "$OUT/ncu-$2" python3 scripts/ncu_gemm.py run "$1" "$2"
ncu -i "$OUT/ncu-$2.ncu-rep" --csv --page details > "$OUT/ncu-$2.csv"
ncu -i "$OUT/ncu-$2.ncu-rep" --csv --page raw > "$OUT/ncu-$2-raw.csv"
grep -E '"(Duration|SM Frequency|DRAM Throughput|L2 Cache Throughput|L2 Hit Rate|Compute \(SM\) Throughput|Registers Per Thread|Grid Size|Cluster Size|Issued Warp Per Scheduler|No Eligible)"' "$OUT/ncu-$2.csv" \
  | awk -F'","' '{printf "%-50.50s %-30s %s %s\n", $5, $13, $15, $16}' | sed 's/"//g'
