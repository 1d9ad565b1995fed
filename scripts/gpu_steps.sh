#!/usr/bin/env bash
# One call on the GPU machine (no TVM there), with no suite file of its own: the steps named on
# the command line run in order, each into a folder of its own (1-held, 2-ncu, ...), all of them
# packed into $OUT/<name>.tgz. A session's README quotes the command it ran. Steps:
#   held VARIANTS INDEX   each line of VARIANTS (a shape, then JSON configs over its default)
#                         checked against the reference, then held busy beside cuBLAS
#                         (scripts/power.py), then the kernels cuBLAS ran; the kernels come from
#                         INDEX, built here by `AUTOTUNE_ARTIFACTS=INDEX python
#                         scripts/check_configs.py --build-only --variants VARIANTS`
#   ncu INDEX SHAPE...    Nsight Compute of each shape's configs in INDEX beside cuBLAS, cold,
#                         the raw page kept (every metric); INDEX built here by
#                         `python scripts/ncu_gemm.py build INDEX SHAPE --config TAG=JSON ...`
#   sass INDEX SHAPE...   per instruction, where each config's warps wait (Nsight Compute's
#                         SourceCounters, scripts/ncu_sass.sh), cuBLAS's kernel last; INDEX as
#                         for ncu
#   tests                 the GPU tests (dispatch, attention dispatch, runner faults) and the
#                         GEMM conformance kit's timed check (needs the staged TVM parts)
#   stage                 keep the part of TVM and the site this call carries (.bundle/stage-X,
#                         scripts/gpu_stage.sh); a call for each part, to one warm machine
#   study LIST NAME [INDEX]  an 8-trial (TRIALS) gemm_sm90 study of each shape of an unseen
#                         list (studies/unseen_gemm_*.md) on GPU 0 (GPUS=0,1: both of a two-GPU
#                         machine) until STUDY_UNTIL s (560), compiled there (TVM staged) or,
#                         given INDEX, no TVM: the guided sampler searches the kernels INDEX
#                         holds (carry .bundle/device-site.tar.xz from `python
#                         scripts/device_bundle.py --optuna-only`; INDEX from a compile-only
#                         study of the same shapes and seed here, more trials: `autotune tune
#                         gemm_sm90 --shapes ... --trials 24 --compile-only --seed 0
#                         --artifacts INDEX`): its log, every trial and its store
#                         (study_unseen); a later call's `after` reads it
#   after LIST NAME [INDEX]  `autotune compare` with that study's store: our kernel alone after
#                         a study, the study's recorded time beside compare's, then the kernels
#                         cuBLAS ran (after_unseen); INDEX as for study
#   stale STORE INDEX     compare (no TVM) at the store's entries that never timed today's
#                         default (`python -m autotune.store stale`): stored config, default,
#                         cuBLAS (STALE_PART=K/N: a part of them); its table.csv is for
#                         `retime --partial` here. INDEX built here by `python -m
#                         autotune.dispatch prebuild --space gemm_sm90 --store STORE --shapes
#                         $(python -m autotune.store stale STORE [--part K/N]) --no-stored
#                         --out INDEX`
# An artifact INDEX (held, stale, study, after) may be a directory or its archive (`python
# -m autotune.dispatch pack INDEX INDEX.tar.xz`: ~1% of the bytes, so several fit beside the
# tree in one call's 64 MiB); ncu's and sass's are directories.
# e.g. (carry build/idx50 build/ncu50):
#   bash scripts/gpu_steps.sh judge30 held studies/X/judge30/variants.txt build/idx50 \
#     ncu build/ncu50 266x5120x12288 200x2048x5632
name=${1:?usage: gpu_steps.sh NAME STEP ARGS... [STEP ARGS...]}; shift
source scripts/gpu_suite_common.sh "$name"
set +e  # a failed step is recorded in run.log; the rest and the results still come back
BASE=$R n=0
is_shape() { [[ $1 =~ ^[0-9]+x[0-9]+x[0-9]+$ ]]; }
is_index() { [[ $1 == *.tar.xz ]] || [ -f "$1/index.json" ]; }
while [ $# -gt 0 ]; do
  n=$((n + 1)) step=$1; shift
  R=$BASE/$n-$step && mkdir -p $R && cp $BASE/device.txt $R/
  case $step in
  held)
    [ $# -ge 2 ] || { echo "held: VARIANTS INDEX" | tee -a $BASE/run.log; break; }
    held_busy_from "$1" "$(index_dir $2)"; shift 2 ;;
  ncu)
    idx=$1; shift; shapes=()
    while [ $# -gt 0 ] && is_shape "$1"; do shapes+=("$1"); shift; done
    NCU_KEEP_RAW=1 ncu_shapes "$idx" "${shapes[@]}" ;;
  sass)
    idx=$1; shift
    while [ $# -gt 0 ] && is_shape "$1"; do
      OUT=$R timeout 300 bash scripts/ncu_sass.sh "$idx" "$1" > $R/sass-$1.log 2>&1
      echo "sass $1 rc=$? at $SECONDS s" | tee -a $R/run.log; shift
    done ;;
  tests) source scripts/gpu_env.sh; gpu_tests ;;
  stage) bash scripts/gpu_stage.sh > $R/stage.log 2>&1; tail -3 $R/stage.log ;;
  study)
    source scripts/gpu_env.sh; list=$1 study=$2; shift 2; idx=
    is_index "$1" && { idx=$(index_dir $1); shift; }
    ARTIFACTS=$idx STUDY_S=$((${STUDY_UNTIL:-560} - SECONDS)) study_unseen $list $study
    cp $R/${study}_store.json $SCRATCH/ 2>/dev/null ;;
  after)
    source scripts/gpu_env.sh; cp $SCRATCH/$2_store.json . 2>/dev/null; list=$1 study=$2
    shift 2; is_index "$1" && { export AUTOTUNE_ARTIFACTS=$(index_dir $1); shift; }
    after_unseen $list $study $((525 - SECONDS)) ;;  # cuBLAS's kernels after, <= 60 s
  stale)
    export PYTHONPATH=$PWD STORE=$1
    shapes=$(python3 -m autotune.store stale $1 ${STALE_PART:+--part $STALE_PART} 2>> $R/run.log)
    # none stale: compare without --shapes would time every stored shape
    [ -n "$shapes" ] && judge_prebuilt "$shapes" stale "$(index_dir $2)" 0 \
      $((SECONDS + ${STALE_S:-300})); shift 2 ;;
  *) echo "unknown step '$step' (held, ncu, sass, tests, stage, study, after, stale)" \
       | tee -a $BASE/run.log; break ;;
  esac
  cat $R/run.log >> $BASE/run.log 2>/dev/null
  echo "$n-$step done at $SECONDS s" | tee -a $BASE/run.log
done
tar czf $OUT/$name.tgz -C $BASE .
