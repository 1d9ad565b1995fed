#!/usr/bin/env bash
# Session 4's measurements for issue 19, in one command on one lent GPU machine (README "GPU
# machines": after the call that staged .bundle/tvm-a), each config validated and timed under
# the protocol with its own warm-up (measure.py's default, 200 ms) in 3 rotated rounds, cuBLAS
# beside:
#   1. ring 1 of the three new recordings (n0-n2: the recorded best and its legal one-knob
#      neighbours) and the wide shape's configs within 30% of its best (w1);
#   2. the decode recording's ring 1 (n3) and the rest of the wide shape's configs (w) for 40 s
#      while ring 2 compiles here: where ring 1's fastest is not the centre, that config's
#      neighbourhood (not for the decode shape);
#   3. ring 2, then the decode ring and the wide shape's rest until the deadline.
# Everything but ring 2 was compiled on the CPU (s4.tar.xz: bundles n0-n3, w1, w).
#   bash record_gpu_s4.sh SECONDS   # stop measuring SECONDS after the start (measure resumes)
# Writes $OUT/s4.tar.xz (the bundles' plans and the measurements, for `autotune record-ingest`).
T0=$(date +%s); END=$((T0 + ${1:-300}))
S=${TMPDIR:-/tmp}/s4; mkdir -p $S && tar -xJf s4.tar.xz -C $S
SHAPES=(4096x4096x4096 8192x28672x4096 1024x4096x4096 64x28672x4096)
log() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { echo $(( END - $(date +%s) )); }
meas() {  # deadline (s from now), BUNDLE OUT pairs; a poisoned CUDA context exits 3: again
  local until=$(( $(date +%s) + $1 )); shift
  for try in 1 2 3; do
    PYTHONPATH=$PWD PYTHONUNBUFFERED=1 python3 -m autotune.record.measure "$@" --rounds 3 \
      --deadline-s $(( until - $(date +%s) )) >>$S/measure.log 2>&1
    [ $? -eq 3 ] || break
  done
  log "measured $*"
}
rec() {  # shape index, bundle, `autotune record` options (resumes the bundle)
  autotune record gemm_sm90 --shapes ${SHAPES[$1]} --sample 0 --no-start --bundle $S/$2 \
    "${@:3}" >>$S/compile-$2.log 2>&1
  log "compiled $2: $(wc -l < $S/$2/jobs.jsonl) jobs"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
meas $(left) $S/n0 $S/m0 $S/n1 $S/m1 $S/n2 $S/m2 $S/w1 $S/mw & P=$!
source scripts/gpu_env.sh >$S/env.log 2>&1 || { log "env failed"; cat $S/env.log; }
log "TVM ready"
wait $P
meas 40 $S/n3 $S/m3 $S/w $S/mw & P=$!
C=()
for i in 0 1 2; do
  rec $i n$i --centre "$(cat $S/best$i.json)" --centre-best $S/m$i --processes 5 & C+=($!)
done
wait ${C[@]}
wait $P
meas $(left) $S/n0 $S/m0 $S/n1 $S/m1 $S/n2 $S/m2 $S/n3 $S/m3 $S/w $S/mw
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cd $S && tar -cJf $OUT/s4.tar.xz n?/bundle.json n?/jobs.jsonl w*/bundle.json w*/jobs.jsonl m? mw *.log
log "done"
