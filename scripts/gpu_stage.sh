#!/usr/bin/env bash
# On a GPU machine: keep the part this call carries of TVM and the site (.bundle/stage-a,
# stage-b, ...: written by scripts/device_bundle.py --with-tvm) under $TMPDIR/stage, where
# scripts/gpu_env.sh unpacks them once every part is there. One part a call fits beside the tree
# within the 64 MiB a call carries; the parts are gone once the machine goes back idle.
set -e
STAGE=${TMPDIR:-/tmp}/stage
mkdir -p $STAGE
for dir in .bundle/stage-*; do
  [ -f $dir/part ] || continue
  cp $dir/part $STAGE/$(basename $dir).part
  cp $dir/count $STAGE/stage.count
done
ls -la $STAGE
