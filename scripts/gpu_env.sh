# Source on a GPU machine (no TVM/optuna/ray, no network) once each part of TVM and the site,
# .bundle/stage-a, stage-b, ..., has been carried, one a call (scripts/gpu_stage.sh; the last
# may come with this call), or, without TVM, carrying .bundle/device-site.tar.xz (optuna, ray)
# where it fits beside the tree: see README. Without TVM every kernel must come prebuilt (an
# artifact index, --artifacts). Scratch lives under $TMPDIR (default /tmp): the machine is
# disposable, nothing is kept.
set -e
SCRATCH=${TMPDIR:-/tmp}
SITE=$SCRATCH/site
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p $SITE
STAGE=$SCRATCH/stage
if [ ! -d $SITE/tvm ] && bash scripts/gpu_stage.sh > /dev/null && [ -f $STAGE/stage.count ]; then
  PARTS=$(ls $STAGE/stage-*.part | sort)
  [ $(echo $PARTS | wc -w) = $(cat $STAGE/stage.count) ] || {
    echo "gpu_env.sh: $(echo $PARTS | wc -w) of the $(cat $STAGE/stage.count) parts of TVM and" \
      "the site staged ($PARTS): the machine went back idle since a part was staged, or one" \
      "was never carried; carry each .bundle/stage-* once" >&2; exit 3; }
  cat $PARTS | tar -xJ -C $SITE
fi
[ -d $SITE/optuna ] || tar -xJf .bundle/device-site.tar.xz -C $SITE
# Install this project (offline) so that its `autotune.spaces` entry points are registered.
python3 -m pip install -q --no-deps --no-index --no-build-isolation -e .
export PYTHONPATH=$SITE:$PWD:$PWD/tests CUDA_PATH=${CUDA_PATH:-/usr/local/cuda} PYTHONUNBUFFERED=1
export AUTOTUNE_CACHE=$SCRATCH/autotune-cache
set +e
