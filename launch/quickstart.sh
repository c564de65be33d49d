#!/usr/bin/env bash
# quickstart.sh: the README's first command. Installs what is missing, builds ppo_world, and runs
# the embedded CPU default end to end: task data, SFT, three reward models, PPO, gold evaluation.
# With --task arithmetic: task data, SFT, then GRPO (or RLOO) against an exact-answer verifier
# with no reward model and no critic, and the exact-answer rate before and after.
#
# Usage: launch/quickstart.sh [--fresh] [--out DIR] [--family gpt2|llama|qwen3]
#                             [--task reverse|arithmetic] [--algorithm ppo|grpo|rloo]
#                             [--device cpu|cuda] [--precision fp32|bf16]   (docs/quickstart.md)
#   --out DIR      run folder (default runs/quickstart, runs/quickstart_arithmetic; with
#                  --device cuda runs/quickstart_cuda, runs/quickstart_arithmetic_cuda)
#   --family F     the policy's (and so the reward models' and critic's) architecture: gpt2 (the
#                  default), llama (configs/quickstart/sft_llama.yaml) or qwen3
#                  (configs/quickstart/sft_qwen3.yaml); reverse only
#   --task T       reverse (the default: reward models and PPO) or arithmetic (a verifier)
#   --algorithm A  ppo for reverse; grpo (the default) or rloo for arithmetic
#   --device D     cpu (the default) or cuda: SFT and the reward models on the GPU
#                  (model.device=cuda), the reinforcement stage as one process (no launcher)
#                  with every role on the GPU
#   --precision P  the training stages' model.precision: fp32 (the default on the CPU) or
#                  bf16 (the default with --device cuda; on the CPU it is emulated, slowly)
#   --fresh        redo every stage; otherwise a stage whose folder holds a completion marker for
#                  the same command is reused
# Environment: BUILD (build folder, default build); PPO_WORLD (a built binary: skips the install
# and build stages); PW_QUICKSTART_CONFIG (PPO configuration, default configs/quickstart/ppo.yaml);
# QS_SFT_STEPS, QS_RM_STEPS, QS_RL_STEPS (arithmetic: reinforcement steps) for shorter runs (the
# e2e tests).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=
FRESH=0
FAMILY=gpt2
TASK=reverse
ALGO=
DEVICE=cpu
PRECISION=
while [ $# -gt 0 ]; do
    case $1 in
        --fresh) FRESH=1 ;;
        --out)
            [ $# -ge 2 ] || { echo "quickstart: --out needs a folder" >&2; exit 2; }
            OUT=$2; shift ;;
        --out=*) OUT=${1#--out=} ;;
        --family)
            [ $# -ge 2 ] ||
                { echo "quickstart: --family needs gpt2, llama or qwen3" >&2; exit 2; }
            FAMILY=$2; shift ;;
        --family=*) FAMILY=${1#--family=} ;;
        --task)
            [ $# -ge 2 ] || { echo "quickstart: --task needs reverse or arithmetic" >&2; exit 2; }
            TASK=$2; shift ;;
        --task=*) TASK=${1#--task=} ;;
        --algorithm)
            [ $# -ge 2 ] || { echo "quickstart: --algorithm needs ppo, grpo or rloo" >&2; exit 2; }
            ALGO=$2; shift ;;
        --algorithm=*) ALGO=${1#--algorithm=} ;;
        --device)
            [ $# -ge 2 ] || { echo "quickstart: --device needs cpu or cuda" >&2; exit 2; }
            DEVICE=$2; shift ;;
        --device=*) DEVICE=${1#--device=} ;;
        --precision)
            [ $# -ge 2 ] || { echo "quickstart: --precision needs fp32 or bf16" >&2; exit 2; }
            PRECISION=$2; shift ;;
        --precision=*) PRECISION=${1#--precision=} ;;
        -h|--help) sed -n '4,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "quickstart: unknown argument '$1' (expected --fresh, --out DIR, --family F," \
                "--task T, --algorithm A, --device D, --precision P)" >&2
           exit 2 ;;
    esac
    shift
done
case $TASK in
    reverse)
        ALGO=${ALGO:-ppo}
        [ "$ALGO" = ppo ] || { echo "quickstart: --algorithm '$ALGO' with --task reverse: the" \
            "reversal quickstart trains reward models and a critic, so ppo only (grpo and rloo" \
            "run with --task arithmetic)" >&2; exit 2; }
        DEFAULT_OUT=runs/quickstart
        PLACEMENT=configs/placements/one_rank_per_role.yaml NP=5
        DEFAULT_CONFIG=configs/quickstart/ppo.yaml ;;
    arithmetic)
        ALGO=${ALGO:-grpo}
        case $ALGO in
            grpo|rloo) ;;
            ppo) echo "quickstart: --algorithm ppo with --task arithmetic: the arithmetic" \
                     "quickstart has a verifier and no reward model to start a critic from;" \
                     "use grpo or rloo" >&2; exit 2 ;;
            *) echo "quickstart: --algorithm '$ALGO': expected grpo or rloo with --task" \
                    "arithmetic" >&2; exit 2 ;;
        esac
        [ "$FAMILY" = gpt2 ] || { echo "quickstart: --family $FAMILY with --task arithmetic:" \
            "its SFT configuration is GPT-2 (configs/quickstart/sft_arith.yaml)" >&2; exit 2; }
        DEFAULT_OUT=runs/quickstart_arithmetic
        PLACEMENT=configs/placements/critic_free_split.yaml NP=2
        DEFAULT_CONFIG=configs/quickstart/grpo_arith.yaml ;;
    *) echo "quickstart: --task '$TASK': expected reverse or arithmetic" >&2; exit 2 ;;
esac
case $DEVICE in
    cpu) PRECISION=${PRECISION:-fp32} ;;
    cuda) DEFAULT_OUT=${DEFAULT_OUT}_cuda      # beside the CPU run's folder, not over it
          PRECISION=${PRECISION:-bf16} ;;
    *) echo "quickstart: --device '$DEVICE': expected cpu or cuda" >&2; exit 2 ;;
esac
case $PRECISION in
    fp32|bf16) ;;
    *) echo "quickstart: --precision '$PRECISION': expected fp32 or bf16" >&2; exit 2 ;;
esac
OUT=${OUT:-$DEFAULT_OUT}
CONFIG=${PW_QUICKSTART_CONFIG:-$DEFAULT_CONFIG}
[ -f "$CONFIG" ] || { echo "quickstart: no PPO configuration '$CONFIG'" >&2; exit 2; }

# Sizes of the pre-PPO stages (docs/quickstart.md says why these); the SFT and reward-model
# settings other than the steps and seeds are in their configuration files.
SEED=1
SFT_STEPS=${QS_SFT_STEPS:-1500}
RM_STEPS=${QS_RM_STEPS:-1000}
RM_SEEDS=(1 2 3)
TASK_FLAGS=(--seed "$SEED" --n-pairs 16384 --n-valid 1024 --n-eval 1024)
case $FAMILY in
    gpt2) SFT_CONFIG=configs/quickstart/sft.yaml ;;
    llama) SFT_CONFIG=configs/quickstart/sft_llama.yaml ;;
    qwen3) SFT_CONFIG=configs/quickstart/sft_qwen3.yaml ;;
    *) echo "quickstart: --family '$FAMILY': expected gpt2, llama or qwen3" >&2; exit 2 ;;
esac
RM_CONFIG=configs/quickstart/rm.yaml
if [ "$TASK" = arithmetic ]; then
    # demonstrations with fewer errors than reversal's (30% against 50%) and twice as many: a
    # small model learns too little arithmetic from the noisier set for GRPO to sharpen
    TASK_FLAGS=(--task arithmetic --seed "$SEED" --n-sft 32768 --sft-error-rate 0.3)
    SFT_CONFIG=configs/quickstart/sft_arith.yaml
    SFT_STEPS=${QS_SFT_STEPS:-3000}
    RL_STEPS=${QS_RL_STEPS:-}
fi

T0=$(date +%s.%N)
NSTAGES=9
[ "$TASK" = arithmetic ] && NSTAGES=6
STAGE=0
REDO=$FRESH   # once a stage runs again, every later stage does too (its inputs changed)

elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { s = b - a; printf "%d:%02d", s / 60, s % 60 }'; }
progress() { printf '[%2d/%d] %-46s %s\n' "$STAGE" "$NSTAGES" "$1" "$2"; }
# On a terminal a running stage shows its name until its result overwrites the line.
running() { if [ -t 1 ]; then printf '[%2d/%d] %-46s ...\r' "$STAGE" "$NSTAGES" "$1"; fi; }

# run_stage NAME DIR "what it does" command...: runs the command into DIR unless DIR/.done
# records the same command; the marker is written last, so an interrupted stage is redone. The
# record holds a hash of the PPO configuration and of every YAML file the command names, so
# that an edited configuration file counts as another command.
run_stage() {
    local name=$1 dir=$2 what=$3
    shift 3
    STAGE=$((STAGE + 1))
    local files=("$CONFIG") arg
    for arg in "$@"; do
        if [[ $arg == *.yaml && -f $arg ]]; then files+=("$arg"); fi
    done
    local key="$* | config $(cat "${files[@]}" | sha1sum | cut -c1-12)"
    if [ "$REDO" = 0 ] && [ -f "$dir/.done" ] && [ "$(head -n 1 "$dir/.done")" = "$key" ]; then
        progress "$what" "reused ($dir, $(sed -n 2p "$dir/.done") s)   [$(elapsed)]"
        return 0
    fi
    REDO=1
    rm -rf "$dir"
    mkdir -p "$dir" "$OUT/logs"
    local log="$OUT/logs/$name.log" t1
    t1=$(date +%s.%N)
    running "$what"
    if ! "$@" > "$log" 2>&1; then
        progress "$what" "FAILED"
        echo "quickstart: stage '$name' failed; the end of $log:" >&2
        tail -n 20 "$log" >&2
        exit 1
    fi
    local secs
    secs=$(awk -v a="$t1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    printf '%s\n%s\n' "$key" "$secs" > "$dir/.done.tmp" && mv "$dir/.done.tmp" "$dir/.done"
    progress "$what" "done in $secs s   [$(elapsed)]"
}

STAGE=1
if [ -n "${PPO_WORLD:-}" ]; then
    PPO=$PPO_WORLD
    [ -x "$PPO" ] || { echo "quickstart: PPO_WORLD='$PPO' is not an executable" >&2; exit 2; }
    progress "dependencies (Debian packages)" "skipped (PPO_WORLD given)"
    STAGE=2
    progress "build" "skipped (PPO_WORLD=$PPO)"
else
    running "dependencies (Debian packages)"
    bash launch/install_deps.sh
    progress "dependencies (Debian packages)" "ok   [$(elapsed)]"
    STAGE=2
    running "build ($BUILD)"
    [ -f "$BUILD/build.ninja" ] || bash launch/setup_build.sh "$BUILD" > /dev/null
    meson compile -C "$BUILD" > /dev/null ||
        { echo "quickstart: the build failed (meson compile -C $BUILD)" >&2; exit 1; }
    PPO=$BUILD/src/ppo_world
    [ -x "$PPO" ] || { echo "quickstart: no binary $PPO after the build" >&2; exit 1; }
    progress "build ($BUILD)" "ok   [$(elapsed)]"
fi

if [ "$FRESH" = 1 ]; then   # only the folders this script writes
    rm -rf "$OUT"/{task,sft,ppo,sft_eval,logs,rl} "$OUT"/rm_seed*
fi
mkdir -p "$OUT"
# One thread per process: PPO's five ranks share the cores, and the single-process stages run
# tiny matrices where threads only add overhead.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

# Where the reinforcement stage runs. cpu: NP ranks under launch/run.sh, as PLACEMENT says.
# cuda: one process started directly (an MPI singleton, so no launcher is needed), every role
# of PLACEMENT on rank 0 and `device: cuda`: a copy of PLACEMENT made in the run folder. One
# rank runs the same algorithm on the same batches as NP ranks; only the rounding differs (the
# device, and the CPU thread count a rank gets: docs/quickstart.md, On a GPU). SFT and the
# reward models take model.device=cuda (one process each, on GPU 0: docs/training.md).
RL_ARGS_DEVICE=()
# fp32 is the configurations' default: the CPU command stays as it was
[ "$PRECISION" = fp32 ] || RL_ARGS_DEVICE+=("model.precision=$PRECISION")
TRAIN_ARGS_DEVICE=(${RL_ARGS_DEVICE[@]+"${RL_ARGS_DEVICE[@]}"})
if [ "$DEVICE" = cuda ]; then
    TRAIN_ARGS_DEVICE+=("model.device=cuda")
    RL_PLACEMENT=$OUT/placement_cuda.yaml
    awk -v src="$PLACEMENT" 'BEGIN { print "# made by launch/quickstart.sh --device cuda from " \
                                           src ": every role on rank 0 and the GPU" }
        /^ *#/ || /^world_size:/ { next }
        /^  [a-z_]+: *\{.*\} *$/ { sub(/ranks: *\[[^]]*\]/, "ranks: [0]")
                                  gsub(/, *device: *[a-z]+/, ""); sub(/ *\} *$/, ", device: cuda }") }
        { print }' "$PLACEMENT" > "$RL_PLACEMENT"
    # Before any stage: where this process sees no GPU, ppo_world refuses the placement with a
    # message naming the file, the key and the host (`ppo_world sft` would refuse
    # model.device=cuda too, but only after the task data stage).
    mkdir -p "$OUT/logs"
    if ! "$PPO" --placement "$RL_PLACEMENT" --dry-run > "$OUT/logs/gpu_check.log" 2>&1; then
        cat "$OUT/logs/gpu_check.log" >&2
        echo "quickstart: --device cuda: ppo_world refuses the GPU placement $RL_PLACEMENT" \
             "(above); run without --device cuda for the CPU" >&2
        exit 1
    fi
    # shellcheck source=launch/env.sh
    . launch/env.sh   # CUDA ordinals in PCI bus order, as the launchers set them
    RL_LAUNCH=("$PPO")
    RL_WHERE="1 rank, every role on the GPU"
    echo "quickstart: --device cuda: the $([ "$TASK" = arithmetic ] && echo "$ALGO" || echo ppo)" \
         "stage runs as one process with every role on the GPU ($RL_PLACEMENT, from" \
         "$PLACEMENT), at $PRECISION; SFT and the reward models run on the GPU too" \
         "(model.device=cuda)"
else
    RL_PLACEMENT=$PLACEMENT
    RL_LAUNCH=(env PPO_WORLD="$PPO" launch/run.sh "$NP")
    RL_WHERE="$NP ranks"
fi

if [ "$TASK" = arithmetic ]; then
    . launch/quickstart_arith.sh   # the stages of the arithmetic variant; it exits
fi

run_stage task "$OUT/task" "task data (reverse a string)" \
    "$PPO" gen-task --out "$OUT/task" "${TASK_FLAGS[@]}"
run_stage sft "$OUT/sft" "SFT policy ($SFT_STEPS steps)" \
    "$PPO" sft --config "$SFT_CONFIG" --out "$OUT/sft" "data.dir=$OUT/task" \
        "train.steps=$SFT_STEPS" "seed=$SEED" ${TRAIN_ARGS_DEVICE[@]+"${TRAIN_ARGS_DEVICE[@]}"}
RMS=()
for s in "${RM_SEEDS[@]}"; do
    run_stage "rm_seed$s" "$OUT/rm_seed$s" "reward model, seed $s ($RM_STEPS steps)" \
        "$PPO" rm --config "$RM_CONFIG" --out "$OUT/rm_seed$s" "data.dir=$OUT/task" \
        "model.init=$OUT/sft" "train.steps=$RM_STEPS" "seed=$s" \
        ${TRAIN_ARGS_DEVICE[@]+"${TRAIN_ARGS_DEVICE[@]}"}
    RMS+=("$OUT/rm_seed$s")
done
rm_list=$(IFS=,; echo "${RMS[*]}")
PPO_ARGS=(--placement "$RL_PLACEMENT" --config "$CONFIG"
          "model.sft=$OUT/sft" "model.reward=[$rm_list]" "data.prompts=$OUT/task/prompts_train.jsonl"
          "data.eval_prompts=$OUT/task/prompts_eval.jsonl" ${RL_ARGS_DEVICE[@]+"${RL_ARGS_DEVICE[@]}"})
[ "$DEVICE" = cpu ] && RL_WHERE="5 ranks (one per role)"
run_stage ppo "$OUT/ppo" "PPO, $RL_WHERE" "${RL_LAUNCH[@]}" "${PPO_ARGS[@]}" --out "$OUT/ppo"

# The SFT policy's gold score is the PPO run's initial evaluation (eval.jsonl's episode-0 line,
# written before the first update). A PPO folder reused from an older build may lack it.
if ! head -n 1 "$OUT/ppo/eval.jsonl" | grep -q '"episode": *0[,}]'; then
    echo "quickstart: $OUT/ppo/eval.jsonl has no initial evaluation (episode 0); rerun with --fresh" >&2
    exit 1
fi

STAGE=$((STAGE + 1))
minutes=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", (b - a) / 60 }')
progress "table and plots" "[$(elapsed)]"
"$PPO" report quickstart "$OUT" --minutes "$minutes" --rms "${RMS[@]}"
