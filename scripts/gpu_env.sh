# Source on a GPU machine (no TVM/optuna/ray, no network) in a call that carries
# .bundle/device-site.tar.xz (optuna, ray); with TVM, after the call that carried .bundle/tvm-a
# (copied to $TMPDIR/stage) and with .bundle/tvm-b carried too: see README. Without TVM every
# kernel must come prebuilt (an artifact index, --artifacts). Scratch lives under $TMPDIR
# (default /tmp): the machine is disposable, nothing is kept.
set -e
SCRATCH=${TMPDIR:-/tmp}
SITE=$SCRATCH/site
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p $SITE
[ -d $SITE/optuna ] || tar -xJf .bundle/device-site.tar.xz -C $SITE
# TVM's second part, carried in this call or staged by an earlier one (the tree with both
# parts and the site is over one call's 64 MiB once studies/ passed ~27 MiB)
PART_B=.bundle/tvm-b/part && [ -f $PART_B ] || PART_B=$SCRATCH/stage/tvm.part-b
if [ -f $PART_B ] && [ ! -d $SITE/tvm ]; then
  # The first part was copied here by an earlier call; it is gone if the machine went back idle.
  [ -f $SCRATCH/stage/tvm.part-a ] || { echo "gpu_env.sh: $SCRATCH/stage/tvm.part-a is missing:" \
    "the machine was given back since the call that staged it; stage .bundle/tvm-a again" >&2; exit 3; }
  cat $SCRATCH/stage/tvm.part-a $PART_B | tar -xJ -C $SITE
fi
# Install this project (offline) so that its `autotune.spaces` entry points are registered.
python3 -m pip install -q --no-deps --no-index --no-build-isolation -e .
export PYTHONPATH=$SITE:$PWD:$PWD/tests CUDA_PATH=${CUDA_PATH:-/usr/local/cuda} PYTHONUNBUFFERED=1
export AUTOTUNE_CACHE=$SCRATCH/autotune-cache
set +e
