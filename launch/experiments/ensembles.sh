#!/usr/bin/env bash
# ensembles.sh: PPO against one proxy reward model and against the quickstart's 3-member ensemble
# (objectives mean, wco, uwo), scored by the task's gold scorer against KL (docs/experiments.md).
#
# Usage: launch/experiments/ensembles.sh [--out DIR] [--base DIR] [--seeds "1 2 3"] [--fresh]
#   --out DIR    experiment folder (default runs/ensembles): one PPO run per objective and seed
#                (its first evaluation scores the SFT policy), table.md, gold_vs_kl.png and
#                gold_vs_step.png
#   --seeds L    PPO seeds (sampling, prompt order) of every objective (default "1 2 3")
#   --base DIR   the quickstart's run folder whose task data, SFT policy and reward models are
#                used (default runs/quickstart); the quickstart is run (or reused) first
#   --fresh      redo the PPO runs (the quickstart's stages are still reused)
# Environment: BUILD, PPO_WORLD as for launch/quickstart.sh; PW_ENSEMBLES_CONFIG (default
# configs/quickstart/ensembles.yaml).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=runs/ensembles
BASE=runs/quickstart
FRESH=0
SEEDS="1 2 3"
while [ $# -gt 0 ]; do
    case $1 in
        --out) [ $# -ge 2 ] || { echo "ensembles: --out needs a folder" >&2; exit 2; }; OUT=$2; shift ;;
        --base) [ $# -ge 2 ] || { echo "ensembles: --base needs a folder" >&2; exit 2; }; BASE=$2; shift ;;
        --seeds) [ $# -ge 2 ] || { echo "ensembles: --seeds needs a list" >&2; exit 2; }; SEEDS=$2; shift ;;
        --fresh) FRESH=1 ;;
        -h|--help) sed -n '4,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "ensembles: unknown argument '$1' (expected --out DIR, --base DIR, --seeds L, --fresh)" >&2; exit 2 ;;
    esac
    shift
done
CONFIG=${PW_ENSEMBLES_CONFIG:-configs/quickstart/ensembles.yaml}
[ -f "$CONFIG" ] || { echo "ensembles: no configuration '$CONFIG'" >&2; exit 2; }
T0=$(date +%s)

echo "== the quickstart's stages (reused when done): $BASE"
launch/quickstart.sh --out "$BASE" | sed 's/^/   /'
PPO=${PPO_WORLD:-${BUILD:-build}/src/ppo_world}
for f in "$BASE/task/prompts_train.jsonl" "$BASE/sft/.done" "$BASE"/rm_seed{1,2,3}/.done; do
    [ -e "$f" ] || { echo "ensembles: the quickstart left no $f" >&2; exit 1; }
done
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
mkdir -p "$OUT"
if [ "$FRESH" = 1 ]; then rm -rf "$OUT"/{single,mean,wco,uwo}_s*; fi   # _s1.. (and the _sft of old versions)

RMS="$BASE/rm_seed1,$BASE/rm_seed2,$BASE/rm_seed3"
# name, reward members, objective: one proxy model, then the ensemble under each objective. Each
# run's eval.jsonl starts with the SFT policy scored under the run's own objective (its proxy
# score differs by objective), so no separate run is needed for the curves' starting points.
RUNS=()
for seed in $SEEDS; do
    [[ $seed =~ ^[0-9]+$ ]] || { echo "ensembles: seed '$seed' is not a number" >&2; exit 2; }
    RUNS+=("single|$BASE/rm_seed1|mean|$seed" "mean|$RMS|mean|$seed" "wco|$RMS|wco|$seed"
           "uwo|$RMS|uwo|$seed")
done
[ ${#RUNS[@]} -gt 0 ] || { echo "ensembles: --seeds names no seed" >&2; exit 2; }
i=0
NAMED=()
for r in "${RUNS[@]}"; do
    IFS='|' read -r name members objective seed <<< "$r"
    i=$((i + 1))
    dir=$OUT/${name}_s$seed
    NAMED+=("$name@$seed=$dir")
    key="$members $objective $seed $(sha1sum < "$CONFIG" | cut -c1-12)"
    # A run from before eval.jsonl began with the initial policy's evaluation is redone: the
    # report takes each objective's starting point from that line.
    if [ -f "$dir/.done" ] && [ "$(head -n 1 "$dir/.done")" = "$key" ] &&
        head -n 1 "$dir/eval.jsonl" 2> /dev/null | grep -q '"episode": *0[,}]'; then
        echo "[$i/${#RUNS[@]}] $name, seed $seed: reused ($dir)"
        continue
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    t1=$(date +%s)
    if ! PPO_WORLD="$PPO" launch/run.sh 5 --placement configs/placements/one_rank_per_role.yaml \
        --config "$CONFIG" --out "$dir" "model.sft=$BASE/sft" "model.reward=[$members]" \
        "reward.objective=$objective" "seed=$seed" "data.prompts=$BASE/task/prompts_train.jsonl" \
        "data.eval_prompts=$BASE/task/prompts_eval.jsonl" > "$dir.log" 2>&1; then
        echo "ensembles: the $name run (seed $seed) failed; the end of $dir.log:" >&2
        tail -n 20 "$dir.log" >&2
        exit 1
    fi
    printf '%s\n%s\n' "$key" "$(( $(date +%s) - t1 ))" > "$dir/.done"
    echo "[$i/${#RUNS[@]}] $name, seed $seed: done in $(( $(date +%s) - t1 )) s"
done

echo "== gold score against KL ($OUT/table.md, $OUT/gold_vs_kl.png, $OUT/gold_vs_step.png)"
"$PPO" report ensembles "$OUT" "${NAMED[@]}"
echo "ensembles: $(( ($(date +%s) - T0) / 60 )) min"
