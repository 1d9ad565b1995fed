#!/usr/bin/env bash
# GPU tests of the Hopper attention kernel that survive hangs: a hung launch ends pytest (its
# watchdog records the test), and pytest starts again past every finished or hung test.
#   tests/gpu_fa4_sm90.sh LOGDIR [pytest args...]     (on the GPU machine, repository root)
set -u
log=${1:?LOGDIR}; shift
mkdir -p "$log"
export FA4_GPU_DONE=$log/done.txt FA4_GPU_HUNG=$log/hung.txt
: >"$FA4_GPU_DONE"; : >"$FA4_GPU_HUNG"
for attempt in 1 2 3 4 5 6; do
  skip=(); while read -r t; do skip+=(--deselect "$t"); done < <(cat "$FA4_GPU_DONE" "$FA4_GPU_HUNG")
  PYTHONPATH=.:tests python3 -m pytest --noconftest -q -rfE -p no:cacheprovider \
    tests/test_fa4_sm90_gpu.py "${skip[@]}" "$@" 2>&1 | tee -a "$log/pytest.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" = 3 ] || break
done
echo "hung: $(wc -l <"$FA4_GPU_HUNG"); finished: $(wc -l <"$FA4_GPU_DONE"); last rc: $rc"
