#!/usr/bin/env bash
# bench_staleness.sh: what a deeper generator queue costs in learning. GRPO on the arithmetic task
# (exact-answer verifier) from one SFT policy, once per async.max_staleness k, on the split
# placement (rank 0: actor, reference, reward; rank 1: generator), every other key equal (the
# arithmetic quickstart's configuration). Prints
# the learning curve, eval/verifiable_correct_rate against samples seen (the initial policy and
# every eval.every steps), with each run's steps per second; last line RESULT.
#
# Usage: bench/bench_staleness.sh --sft DIR --data DIR [--out DIR] [--steps S] [--ks "0 1 4"]
#                                 [-- key=value ...]
#   --sft DIR    an SFT checkpoint of the arithmetic task (launch/quickstart.sh --task arithmetic
#                writes one)
#   --data DIR   the task folder of `ppo_world gen-task --task arithmetic` (prompts_train.jsonl,
#                prompts_eval.jsonl)
#   --out DIR    where the runs go (default: a temporary folder, removed at the end)
#   --steps S    GRPO steps per run (default 150, the quickstart's); --ks the values of k
#                (default "0 1 4")
#   key=value    overrides of the configuration (configs/quickstart/grpo_arith.yaml), every run
# The standard error of a rate p over n evaluation prompts is sqrt(p (1 - p) / n); kK_rise_se
# is the rise from the initial evaluation over the combined error of the two, as the quickstart.
set -euo pipefail
cd "$(dirname "$0")/.."
SFT= DATA= OUT= STEPS=150 KS="0 1 4"
OVERRIDES=()
while [ $# -gt 0 ]; do
    case $1 in
        --sft) SFT=${2:?--sft needs a folder}; shift ;;
        --data) DATA=${2:?--data needs a folder}; shift ;;
        --out) OUT=${2:?--out needs a folder}; shift ;;
        --steps) STEPS=${2:?--steps needs a number}; shift ;;
        --ks) KS=${2:?--ks needs a list}; shift ;;
        --) shift; OVERRIDES=("$@"); break ;;
        *) echo "bench_staleness: unknown argument '$1' (see the usage at the top)" >&2; exit 2 ;;
    esac
    shift
done
[ -f "$SFT/model.safetensors" ] || { echo "bench_staleness: --sft '$SFT': no model.safetensors" >&2; exit 2; }
for f in prompts_train.jsonl prompts_eval.jsonl; do
    [ -f "$DATA/$f" ] || { echo "bench_staleness: --data '$DATA': no $f" >&2; exit 2; }
done
[[ $STEPS =~ ^[0-9]+$ ]] && [ "$STEPS" -ge 2 ] || { echo "bench_staleness: --steps: at least 2" >&2; exit 2; }
KEEP=1
if [ -z "$OUT" ]; then OUT=$(mktemp -d); KEEP=0; fi
mkdir -p "$OUT"
[ "$KEEP" = 1 ] || trap 'rm -rf "$OUT"' EXIT

# The run: the arithmetic quickstart's (configs/quickstart/grpo_arith.yaml: 256 responses a step,
# 8 per prompt, evaluations of 512 prompts), evaluated every 25 steps, on the split placement.
CONFIG=configs/quickstart/grpo_arith.yaml
N=$(sed -n 's/^ *num_rollout_samples: *\([0-9]*\).*/\1/p' "$CONFIG" | head -n 1)
EVAL_EVERY=25
EVAL_N=$(sed -n 's/^ *num_prompts: *\([0-9]*\).*/\1/p' "$CONFIG" | head -n 1)
PLACEMENT=configs/placements/critic_free_split.yaml

# field KEY < line: the number after "KEY": in a JSON line
field() { grep -o "\"$1\":[^,}]*" | head -n 1 | cut -d: -f2; }

for k in $KS; do
    [[ $k =~ ^[0-9]+$ ]] || { echo "bench_staleness: --ks: '$k' is not a number" >&2; exit 2; }
    echo "== k = $k"
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 launch/run.sh 2 --placement "$PLACEMENT" \
        --config "$CONFIG" --out "$OUT/k$k" "async.max_staleness=$k" "model.sft=$SFT" \
        "data.prompts=$DATA/prompts_train.jsonl" "data.eval_prompts=$DATA/prompts_eval.jsonl" \
        "episodes=$((N * STEPS))" "eval.every=$EVAL_EVERY" \
        ${OVERRIDES[@]+"${OVERRIDES[@]}"} > "$OUT/k$k.log" 2>&1 || {
        echo "bench_staleness: the run with k = $k failed:" >&2; tail -20 "$OUT/k$k.log" >&2; exit 1; }
done

echo "GRPO, arithmetic, exact-answer rate on $EVAL_N evaluation prompts; $N samples a step, $STEPS"
echo "steps ($CONFIG); split placement (2 ranks); each run's median seconds per step"
printf '%8s' samples
for k in $KS; do printf '  %13s' "k=$k"; done
printf '\n'
first=$(set -- $KS; echo "$1")
while read -r line; do
    step=$(field step <<< "$line")
    printf '%8d' $(( (step + 1) * N ))
    for k in $KS; do
        l=$(grep "\"step\":$step," "$OUT/k$k/eval.jsonl" || true)
        if [ -n "$l" ]; then printf '  %13.4f' "$(field eval/verifiable_correct_rate <<< "$l")"
        else printf '  %13s' -; fi
    done
    printf '\n'
done < "$OUT/k$first/eval.jsonl"
result="RESULT"
printf '%8s' 's/step'
for k in $KS; do
    med=$(grep -o '"time/step":[^,}]*' "$OUT/k$k/metrics.jsonl" | cut -d: -f2 | sort -g |
          awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    last=$(tail -n 1 "$OUT/k$k/eval.jsonl" | field eval/verifiable_correct_rate)
    init=$(head -n 1 "$OUT/k$k/eval.jsonl" | field eval/verifiable_correct_rate)
    printf '  %13.3f' "$med"
    result="$result $(awk -v k="$k" -v p="$last" -v p0="$init" -v s="$med" -v n="$EVAL_N" 'BEGIN {
        printf "k%s_final=%.4f k%s_se=%.4f k%s_rise_se=%.1f k%s_steps_per_s=%.3f", k, p, k,
            sqrt(p * (1 - p) / n), k, (p - p0) / sqrt((p0 * (1 - p0) + p * (1 - p)) / n), k, 1 / s }')"
done
printf '\n'
echo "$result"
