# no TVM: scripts/placement_probe.py, each shape in two processes (spacer seeds 0 and 1)
set -e
R=$OUT/probe && mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . > $R/pip.log 2>&1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 AUTOTUNE_ARTIFACTS=$PWD/idx
for s in 137x4864x896 165x5504x2048 5x13696x4096 134x8192x2048; do
  for seed in 0 1; do
    timeout 100 python3 scripts/placement_probe.py $s $R/probe_${s}_$seed.csv vendor '{}' \
      --seed $seed 2>&1 | tail -2
  done
done
echo "done at $SECONDS s"
