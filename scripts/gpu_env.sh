# Source on a GPU machine (no TVM/optuna/ray, no network) after the calls that carried
# .bundle/tvm-a (copied to /tmp/stage) and .bundle/{tvm-b,device-site.tar.xz}: see README.
set -e
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ ! -d /tmp/site/tvm ]; then
  mkdir -p /tmp/site
  cat /tmp/stage/tvm.part-a .bundle/tvm-b/part | tar -xJ -C /tmp/site
  tar -xJf .bundle/device-site.tar.xz -C /tmp/site
fi
# Install this project (offline) so that its `autotune.spaces` entry points are registered.
python3 -m pip install -q --no-deps --no-index --no-build-isolation -e .
export PYTHONPATH=/tmp/site:$PWD:$PWD/tests CUDA_PATH=${CUDA_PATH:-/usr/local/cuda} PYTHONUNBUFFERED=1
export AUTOTUNE_CACHE=/tmp/autotune-cache
set +e
