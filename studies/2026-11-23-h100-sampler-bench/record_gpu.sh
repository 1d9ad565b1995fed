#!/usr/bin/env bash
# Record three gemm_sm90 shapes on one lent GPU machine in one command (README "GPU machines":
# after the call that staged .bundle/tvm-a): each shape's plan (default, seeds, the default's
# neighbourhood, a uniform sample) compiled on the machine's cores while the GPU measures the
# previous shape, then the neighbourhood of each shape's fastest config, compiled and measured.
#   bash record_gpu.sh SECONDS   # stop measuring SECONDS after the start (measure resumes)
# SAMPLE (uniform draws per shape, default 250), WARM (ms of untimed replays before each
# timing, default 50), JOBS (compile processes, default 15: one core is the GPU's).
# Writes $OUT/record.tar.xz: per shape the bundle's plan (bundle.json, jobs.jsonl) and its
# measurements, for `autotune record-ingest`; and the logs.
source scripts/gpu_env.sh
T0=$(date +%s); END=$((T0 + ${1:-450}))
SHAPES=(4096x4096x4096 8192x28672x4096 1024x4096x4096)
S=$SCRATCH/rec; mkdir -p $S
log() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
rec() {  # shape index, extra `autotune record` options
  autotune record gemm_sm90 --shapes ${SHAPES[$1]} --sample ${SAMPLE:-250} --seed 0 \
    --bundle $S/b$1 --processes ${JOBS:-15} "${@:2}" >>$S/compile$1.log 2>&1
  log "compiled ${SHAPES[$1]} $2: $(wc -l < $S/b$1/jobs.jsonl) jobs"
}
meas() {  # shape index; a poisoned CUDA context exits 3: start again
  for try in 1 2 3; do
    python -m autotune.record.measure $S/b$1 $S/m$1 --rounds 3 --warm-ms ${WARM:-50} \
      --deadline-s $(( END - $(date +%s) )) >>$S/measure$1.log 2>&1
    [ $? -eq 3 ] || break
  done
  log "measured ${SHAPES[$1]}: $(wc -l < $S/m$1/measure.jsonl) results"
}
nproc; nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
rec 0
meas 0 & P=$!
rec 1
rec 2
wait $P; meas 1 & P=$!
rec 0 --centre-best=$S/m0
wait $P; { meas 2; meas 0; } & P=$!
rec 1 --centre-best=$S/m1
wait $P; meas 1 & P=$!
rec 2 --centre-best=$S/m2
wait $P; meas 2
cd $S && tar -cJf $OUT/record.tar.xz b?/bundle.json b?/jobs.jsonl m? *.log
log "done"
