# Sourced by the GPU suites (scripts/gpu_suite_s*.sh) with the step name as $1: a results
# folder $R for it with the GPU's description, the `stage` step (TVM's parts, then exit),
# the `site` step (optuna and ray, then exit), trials_csv, short_study, index_dir,
# unseen_list, sample_clocks, judge_unseen, judge_prebuilt, prebuild_picks, attention_bench,
# decoder_block, study_unseen, after_unseen, unseen_step, held_busy, variants_vendor,
# held_busy_from, suite_compare, retime_part, gpu_tests, ncu_shapes and shared_step.
set -e
SCRATCH=${TMPDIR:-/tmp}
R=$SCRATCH/results/$1 && rm -rf $R && mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
trials_csv() {  # every trial of every study in storage $1 -> $2
  python3 -c "
import sys, optuna, pandas as pd
from autotune.study import trials_table
s = sys.argv[1]
pd.concat([trials_table(optuna.load_study(study_name=n, storage=s)).assign(study=n)
           for n in optuna.get_all_study_names(s)]).to_csv(sys.argv[2], index=False)" $1 $2
}
short_study() {  # $1 name, $2 trials, $3 seconds, then shapes: a gemm_sm90 study of each shape
  # -> $R/<name>_study.log, its store <name>_store.json and every trial <name>_trials.csv
  local name=$1 trials=$2 secs=$3; shift 3
  rm -f $SCRATCH/$name.db; local DB=sqlite:///$SCRATCH/$name.db
  timeout $secs autotune tune gemm_sm90 --shapes "$@" --trials $trials --gpus 0 \
    --compile-workers 15 --storage $DB --seed 0 --no-progress 2>&1 | tail -n 60 > $R/${name}_study.log
  python3 -m autotune.store export --space gemm_sm90 --storage $DB --out $R/${name}_store.json
  trials_csv $DB $R/${name}_trials.csv
}
index_dir() {  # an artifact index's directory: $1 itself, or where its archive (.tar.xz)
  # unpacks
  case $1 in
  *.tar.xz) PYTHONPATH=$PWD python3 -m autotune.dispatch unpack $1 ;;
  *) realpath $1 ;;
  esac
}
unseen_list() {  # the shapes of an unseen list (studies/unseen_gemm_*.md), on one line; shapes
  # given instead of a file: those
  [ -f "$1" ] || { echo "$@"; return; }
  sed -n '/As a command-line list/,$p' $1 | grep -E '^ +[0-9]' | tr '\n' ' '
}
sample_clocks() {  # SM clock, power, temperature and throttle reasons of each GPU (its index
  # first: on a host of two, one may idle) every 250 ms -> $1, in the background until the
  # caller's stop_clocks. By its pid, not `kill %1`: a second sampler started before the shell
  # reaped the first is %2, and survived `kill %1` to hold the call's output open until its time
  # limit (session 35: 26 s of device time after the results)
  local q=index,timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu
  nvidia-smi --query-gpu=$q,clocks_throttle_reasons.active --format=csv -lms 250 > $1 2>/dev/null &
  CLOCKS_PID=$!
}
stop_clocks() { kill $CLOCKS_PID 2>/dev/null || true; wait $CLOCKS_PID 2>/dev/null || true; }
judge_unseen() {  # $1: an unseen list (studies/unseen_gemm_*.md), $2: a scratch name, $3: the
  # first-use counts to compare with (default "0 4"), $4: seconds per compare (default 200).
  # Prebuild (first use's 4 configs too) unless done, then compare from the committed store
  # $STORE: dispatch, the default and cuBLAS on shapes nothing was tuned on
  export AUTOTUNE_CACHE=$SCRATCH/$2-cache  # first use's store file lives under it
  local LIST=$(unseen_list $1) IDX=$SCRATCH/$2-idx
  if [ ! -d $IDX ]; then
    timeout 300 python3 -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE \
      --shapes $LIST --no-stored --first-use 4 --out $IDX --procs 15 > $R/prebuild.log 2>&1
    echo "prebuild rc=$? at $SECONDS s" | tee -a $R/run.log; grep -c built $R/prebuild.log || true
  fi
  sample_clocks $R/clocks.csv
  for fu in ${3:-0 4}; do
    timeout ${4:-200} autotune compare gemm --store $STORE --artifacts $IDX --shapes $LIST \
      --subset "M<=256" --subset "M>1024" --first-use $fu --out $R/first_use_$fu \
      > $R/first_use_$fu.log 2>&1
    echo "first use $fu rc=$? at $SECONDS s" | tee -a $R/run.log
    grep -v "^measured" $R/first_use_$fu.log | tail -5
  done
  stop_clocks
}
judge_prebuilt() {  # $1 an unseen list, $2 a scratch name, $3 an artifact index built where TVM
  # is, $4 first-use counts, $5 the step's deadline in seconds (default 560): compare from the
  # committed store $STORE through `python -m autotune.compare`, no TVM, Optuna or Ray needed
  python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . > $R/pip.log 2>&1
  export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 AUTOTUNE_ARTIFACTS=$3
  export AUTOTUNE_CACHE=$SCRATCH/$2-cache  # first use's store file lives under it
  sha256sum $STORE | tee $R/store.sha256
  sample_clocks $R/clocks.csv
  for fu in $4; do
    timeout $((${5:-560} - SECONDS)) python3 -m autotune.compare gemm --store $STORE \
      --artifacts $3 --shapes $(unseen_list $1) --subset "M<=256" --subset "M>1024" \
      --first-use $fu --out $R/first_use_$fu > $R/first_use_$fu.log 2>&1
    echo "first use $fu rc=$? at $SECONDS s" | tee -a $R/run.log
    grep -v "^measured" $R/first_use_$fu.log | tail -5
  done
  stop_clocks
}
prebuild_picks() {  # $1 scratch name, $2 a store, then shapes: the kernels dispatch picks for the
  # shapes from the store, built into an artifact index that $AUTOTUNE_ARTIFACTS then names
  local name=$1 store=$2; shift 2
  export AUTOTUNE_ARTIFACTS=$SCRATCH/$name-idx
  python3 -m autotune.dispatch prebuild --space gemm_sm90 --store $store --shapes "$@" \
    --no-stored --out $AUTOTUNE_ARTIFACTS --procs 15 > $R/prebuild.log 2>&1
  echo "prebuild rc=$? at $SECONDS s" | tee -a $R/run.log
}
attention_bench() {  # $1 seconds: the attention benchmark (autotune.bench.attention), built here
  timeout 120 python3 -m autotune.bench.attention build $SCRATCH/bench --jobs 15 \
    > $R/bench_build.log 2>&1; echo "bench build rc=$? at $SECONDS s" | tee -a $R/run.log
  sample_clocks $R/clocks.csv
  timeout $1 python3 -m autotune.bench.attention run $SCRATCH/bench $R \
    > $R/bench.log 2>&1; echo "bench rc=$? at $SECONDS s" | tee -a $R/run.log
  stop_clocks; tail -n 30 $R/bench.log
}
decoder_block() {  # $1 report stem, $2 log name, $3 seconds, then examples/llama_block.py's
  # arguments: the decoder block through dispatch beside torch's -> $R/$1.{md,json}, $R/$2.log
  local out=$1 log=$2 secs=$3; shift 3
  sample_clocks $R/clocks.csv
  timeout $secs python3 examples/llama_block.py "$@" --out $R/$out > $R/$log.log 2>&1
  echo "$log rc=$? at $SECONDS s" | tee -a $R/run.log; stop_clocks; tail -10 $R/$log.log
}
study_unseen() {  # $1: an unseen list, $2: a name: an 8-trial (TRIALS) study of each of its
  # shapes (final rounds: 3; $ARTIFACTS: from that index, no TVM) on GPU 0 (GPUS: e.g. 0,1 on a two-GPU machine, as gpu_scaling.sh
  # ran) in $SCRATCH/<name>.db (kept: a second call resumes it) -> $R/<name>_study.log, its
  # store <name>_store.json and every trial <name>_trials.csv
  local LIST=$(unseen_list $1) DB=sqlite:///$SCRATCH/$2.db
  sample_clocks $R/clocks.csv
  timeout ${STUDY_S:-540} autotune tune gemm_sm90 --shapes $LIST --trials ${TRIALS:-8} \
    --gpus ${GPUS:-0} --compile-workers 15 --storage $DB --seed 0 --no-progress \
    ${ARTIFACTS:+--artifacts $ARTIFACTS} 2>&1 \
    | tail -n 60 > $R/$2_study.log
  echo "study rc=$? at $SECONDS s" | tee -a $R/run.log; tail -12 $R/$2_study.log
  python3 -m autotune.store export --space gemm_sm90 --storage $DB --out $R/$2_store.json
  trials_csv $DB $R/$2_trials.csv
  stop_clocks
}
after_unseen() {  # $1: an unseen list, $2: the study's name, $3 seconds (default 560): compare
  # with its store (carried in as <name>_store.json on a fresh machine, else the study step's):
  # our kernel alone after a study, and the study's winner time beside compare's; then the
  # kernels cuBLAS ran
  local LIST=$(unseen_list $1)
  cp $2_store.json $R/ 2>/dev/null || cp $SCRATCH/results/study/$2_store.json $R/
  sample_clocks $R/clocks.csv
  timeout ${3:-560} autotune compare gemm --store $R/$2_store.json --shapes $LIST --subset "M<=256" \
    --subset "M>1024" --out $R/after > $R/after.log 2>&1
  echo "after rc=$? at $SECONDS s" | tee -a $R/run.log; grep -v "^measured" $R/after.log | tail -5
  stop_clocks
  # which kernels cuBLAS ran there (-> $R/cublas_kernels.json): where a study fell short of it,
  # the tiles to try next (session 33 spent a call learning them)
  timeout 60 python3 scripts/cublas_kernels.py $R $LIST > $R/cublas.log 2>&1
  echo "cublas rc=$? at $SECONDS s" | tee -a $R/run.log
}
unseen_step() {  # $1 a step (judge0, judge4, study, after), $2 an unseen list, $3 a name: the
  # judgement of an unseen list, from the committed store $STORE
  case $1 in
  judge*) sha256sum $STORE | tee $R/store.sha256; judge_unseen $2 $3 ${1#judge} 420 ;;
  study) study_unseen $2 $3 ;;
  after) after_unseen $2 $3 ;;
  esac
}
held_busy() {  # no TVM: each line of ./variants.txt (a shape, then JSON configs) checked against
  # the reference (scripts/check_configs.py), then held busy beside cuBLAS (scripts/power.py);
  # (a check that hangs is cut at 90 s); the kernels come from the artifact index ./idx, built
  # where TVM is by
  # `AUTOTUNE_ARTIFACTS=idx scripts/check_configs.py --build-only`; no shape starts after
  # $HELD_BUSY_UNTIL seconds of the step (unset: all of them)
  python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . > $R/pip.log 2>&1
  export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 AUTOTUNE_ARTIFACTS=$PWD/idx
  cp variants.txt $R/
  while read -r line; do
    [ $SECONDS -lt ${HELD_BUSY_UNTIL:-86400} ] || { echo "held busy: out of time at $SECONDS s" \
      "before ${line%% *}" | tee -a $R/run.log; break; }
    shape=${line%% *}; eval "VARIANTS=(${line#* })"
    timeout 90 python3 scripts/check_configs.py --shapes $shape --configs "${VARIANTS[@]}" \
      > $R/check_$shape.log 2>&1
    echo "check $shape rc=$? at $SECONDS s" | tee -a $R/run.log; grep -c ": ok" $R/check_$shape.log
    timeout 100 python3 scripts/power.py $shape $R/power_$shape.csv "${VARIANTS[@]}" 2>&1 \
      | tail -n $((${#VARIANTS[@]} + 2)) | cut -c1-60,190-
  done < variants.txt
}
variants_vendor() {  # the kernels cuBLAS runs at ./variants.txt's shapes -> $R/cublas_kernels.json
  timeout 60 python3 scripts/cublas_kernels.py $R $(cut -d' ' -f1 variants.txt) > $R/cublas.log 2>&1
  echo "cublas rc=$? at $SECONDS s" | tee -a $R/run.log
}
held_busy_from() {  # $1 a variants file, $2 an artifact index built from it: held busy beside
  # cuBLAS (held_busy), then the kernels cuBLAS ran (variants_vendor)
  cp "$1" variants.txt && rm -rf idx && cp -r "$2" idx && held_busy && variants_vendor
}
suite_compare() {  # the 23-shape suite (gemm_sm90's SUITE) from the committed store $STORE:
  # our kernel alone, the default, cuBLAS and dispatch -> $R/suite
  SUITE=$(python3 -c "from autotune.spaces.gemm_sm90 import SUITE; print(*SUITE)")
  IDX=$SCRATCH/suite-idx
  timeout 200 python3 -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE \
    --shapes $SUITE --no-stored --out $IDX --procs 15 > $R/prebuild.log 2>&1
  echo "prebuild rc=$? at $SECONDS s" | tee -a $R/run.log
  sample_clocks $R/clocks.csv
  timeout 380 autotune compare gemm --store $STORE --artifacts $IDX --shapes $SUITE \
    --subset "M<=256" --subset "M>1024" --out $R/suite > $R/suite.log 2>&1
  echo "suite rc=$? at $SECONDS s" | tee -a $R/run.log; grep -v "^measured" $R/suite.log | tail -4
  stop_clocks
}
retime_part() {  # $1 a store, $2 k of $3 parts: compare on every $3-th of its shapes from the
  # k-th (its config, today's default, the vendor op) -> $R/retime_$2 (table.csv)
  # (one `local` per name: a `local` line expands all its words before it assigns any, so
  # a second name's $(...) would still read the caller's $STORE, the committed store)
  local STORE=$1
  local IDX=$SCRATCH/retime-idx
  local SHAPES=$(python3 -c "
import sys; from autotune.store import ConfigStore
keys = sorted(ConfigStore.read(sys.argv[1]).entries)[int(sys.argv[2]) - 1::int(sys.argv[3])]
print(*('x'.join(f.split('=')[1] for f in k.split(',')[:3]) for k in keys))" $STORE $2 $3)
  timeout 200 python3 -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE \
    --shapes $SHAPES --no-stored --out $IDX --procs 15 > $R/prebuild.log 2>&1
  echo "prebuild rc=$? at $SECONDS s" | tee -a $R/run.log
  sample_clocks $R/clocks.csv
  timeout $((560 - SECONDS)) autotune compare gemm --store $STORE --artifacts $IDX \
    --shapes $SHAPES --out $R/retime_$2 > $R/retime_$2.log 2>&1
  echo "compare rc=$? at $SECONDS s" | tee -a $R/run.log
  grep -v "^measured" $R/retime_$2.log | tail -3
  stop_clocks
}
gpu_tests() {  # the GPU tests of dispatch (GEMM, attention) and the isolated runner's faults, and
  # the GEMM plugin's conformance kit, its timed check; $1: seconds for both (default 560)
  timeout $((${1:-560} - 120)) python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_dispatch_gpu.py \
    tests/test_attention_dispatch_gpu.py tests/test_runner_gpu_faults.py > $R/tests.log 2>&1
  echo "tests rc=$? at $SECONDS s" | tee -a $R/run.log; tail -5 $R/tests.log
  timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_sm90_conformance.py \
    -k default_config_validates > $R/conformance.log 2>&1
  echo "conformance rc=$? at $SECONDS s" | tee -a $R/run.log; tail -3 $R/conformance.log
}
ncu_shapes() {  # $1 an index built here by `scripts/ncu_gemm.py build INDEX SHAPE --config
  # TAG=JSON ...` (default ./ncu), then shapes (default: every shape folder in it): Nsight Compute
  # (scripts/ncu_gemm.sh) of each shape's configs beside cuBLAS, $NCU_TIMEOUT seconds a shape
  # (default 200); the raw page (every metric of every kernel, megabytes) is dropped unless
  # $NCU_KEEP_RAW is set
  local idx=${1:-ncu}; shift $(($# > 0))
  local shapes=("$@")
  [ ${#shapes[@]} -gt 0 ] || shapes=($(cd $idx && ls -d */ | tr -d /))
  for shape in "${shapes[@]}"; do
    OUT=$R timeout ${NCU_TIMEOUT:-200} bash scripts/ncu_gemm.sh $idx $shape > $R/ncu-$shape.log 2>&1
    echo "ncu $shape rc=$? at $SECONDS s" | tee -a $R/run.log; tail -n 40 $R/ncu-$shape.log
    [ -n "$NCU_KEEP_RAW" ] || rm -f $R/ncu-$shape-raw.csv
  done
}
shared_step() {  # $1 suite, tests, power or ncu: a step every session runs alike (suite: from
  # the committed store $STORE)
  case $1 in
  suite) source scripts/gpu_env.sh; sha256sum $STORE | tee $R/store.sha256; suite_compare ;;
  tests) source scripts/gpu_env.sh; gpu_tests ;;
  power) held_busy; variants_vendor ;;
  ncu) ncu_shapes ;;
  esac
}
if [ "$1" = stage ]; then  # the part of TVM this call carries (scripts/gpu_stage.sh)
  bash scripts/gpu_stage.sh; exit 0
fi
if [ "$1" = site ]; then  # the optuna/ray site gpu_env.sh would unpack, ahead of the calls that need it
  mkdir -p $SCRATCH/site && tar -xJf .bundle/device-site.tar.xz -C $SCRATCH/site
  ls $SCRATCH/site | head; exit 0
fi
unseen() {  # $1: a list of unseen shapes (studies/unseen_gemm_*.md), $2 trials, $3 study seconds:
  # compare with the committed store (dispatch, default, cuBLAS), a study of each shape, its
  # store, compare with that store (the study's time beside compare's), every trial as CSV
  local STORE=studies/configs/gemm_sm90/nvidia-h100-80gb-hbm3.json  # the committed store
  sha256sum $STORE | tee -a $R/store.sha256
  LIST=$(unseen_list $1)
  local IDX=$SCRATCH/unseen-idx DB=sqlite:///$SCRATCH/unseen.db
  python3 -m autotune.dispatch prebuild --space gemm_sm90 --store $STORE --shapes $LIST --no-stored \
    --out $IDX --procs 15 > $R/prebuild.log 2>&1
  timeout 150 autotune compare gemm --store $STORE --artifacts $IDX --shapes $LIST --subset "M<=256" \
    --rounds 5 --out $R/before 2>&1 | tail -n 24
  rm -f $SCRATCH/unseen.db
  timeout $3 autotune tune gemm_sm90 --shapes $LIST --trials $2 --gpus 0 \
    --compile-workers 15 --storage $DB --seed 0 --no-progress 2>&1 | tail -n 100 > $R/study.log
  python3 -m autotune.store export --space gemm_sm90 --storage $DB --out $R/unseen_store.json
  timeout 100 autotune compare gemm --store $R/unseen_store.json --shapes $LIST --subset "M<=256" \
    --rounds 5 --out $R/after 2>&1 | tail -n 24
  trials_csv $DB $R/trials.csv
}
