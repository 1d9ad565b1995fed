#!/usr/bin/env bash
# Session 4's measurements (record_gpu_s4.sh's s4.tar.xz, unpacked in $1) merged into copies of
# the earlier recordings: a config measured again takes its new times (and keeps its source),
# new neighbourhoods are numbered after the old. The wide shape: the re-timing first, then the
# rings, so that a ring's 3 rounds win over a one-round re-timing of the same config.
set -e
S=${1:?the unpacked s4.tar.xz}; R=studies/2026-11-23-h100-sampler-bench; N=$R-s4
for r in recording recording-4096x4096x4096 recording-8192x28672x4096 recording-1024x4096x4096; do
  mkdir -p $N/$r && cp $R/$r/recording.csv $R/$r/recording.json $N/$r/
done
RING="Session 4, same H100 kind: the neighbourhood of the recorded best (ring 1: it and its legal\
 one-knob neighbours), then that of ring 1's fastest where it was another config (ring 2), each\
 validated (2 draws) and timed with the protocol's own warm-up (200 ms) in 3 rotated rounds,\
 cuBLAS beside (record_gpu_s4.sh)."
autotune record-ingest $S/w $S/mw --out $N/recording-8192x28672x4096 --merge --note "Session 4,\
 same H100 kind: the recorded configs timed again with the protocol's own warm-up (200 ms),\
 fastest first: the 24 within 30% of the recorded best in 3 rotated rounds, then 187 more in one\
 round before the deadline (the 71 slowest, 3.5x the best or more, keep their 50 ms round)."
autotune record-ingest $S/n1 $S/m1 --out $N/recording-8192x28672x4096 --merge --note "$RING"
autotune record-ingest $S/n0 $S/m0 --out $N/recording-4096x4096x4096 --merge --note "$RING"
autotune record-ingest $S/n2 $S/m2 --out $N/recording-1024x4096x4096 --merge --note "$RING"
autotune record-ingest $S/n3 $S/m3 --out $N/recording --merge --note "Session 4, same H100 kind:\
 ring 1 only (the recorded best, a uniform config, and its legal one-knob neighbours; no ring 2:\
 the best did not move), validated and timed with the protocol's own warm-up (200 ms) in 3\
 rotated rounds, cuBLAS beside. The rows recorded before it had no warm-up (warm_ms 0)."
# the bundles' paths as one scratch folder, not the machines' own
sed -i "s#$S/#\$TMPDIR/s4/#g; s#[^ \"]*/s4/#\$TMPDIR/s4/#g" $N/recording*/recording.json
