# quickstart_arith.sh: the stages of `launch/quickstart.sh --task arithmetic`, sourced by it after
# the install and build stages (it uses the script's run_stage, progress and variables, and exits):
# arithmetic data, SFT, GRPO or RLOO against the exact-answer verifier (no reward model, no
# critic) on two ranks, or on one with --device cuda (RL_PLACEMENT, RL_LAUNCH), and the
# exact-answer rate of the SFT policy against the trained one, with standard errors
# (docs/quickstart.md, Arithmetic with GRPO).

run_stage task "$OUT/task" "task data (arithmetic)" \
    "$PPO" gen-task --out "$OUT/task" "${TASK_FLAGS[@]}"
run_stage sft "$OUT/sft" "SFT policy ($SFT_STEPS steps)" \
    "$PPO" sft --config "$SFT_CONFIG" --out "$OUT/sft" "data.dir=$OUT/task" \
        "train.steps=$SFT_STEPS" "seed=$SEED" ${TRAIN_ARGS_DEVICE[@]+"${TRAIN_ARGS_DEVICE[@]}"}

RL_ARGS=(--placement "$RL_PLACEMENT" --config "$CONFIG"
         "model.sft=$OUT/sft" "data.prompts=$OUT/task/prompts_train.jsonl"
         "data.eval_prompts=$OUT/task/prompts_eval.jsonl" "algorithm=$ALGO"
         ${RL_ARGS_DEVICE[@]+"${RL_ARGS_DEVICE[@]}"})
if [ -n "$RL_STEPS" ]; then   # QS_RL_STEPS: that many steps of the configuration's batch
    n=$(sed -n 's/^ *num_rollout_samples: *\([0-9]*\).*/\1/p' "$CONFIG" | head -n 1)
    [ -n "$n" ] || { echo "quickstart: QS_RL_STEPS: no ppo.num_rollout_samples in $CONFIG" >&2; exit 2; }
    RL_ARGS+=("episodes=$((RL_STEPS * n))")
fi
name=$(tr '[:lower:]' '[:upper:]' <<< "$ALGO")
run_stage rl "$OUT/rl" "$name, $RL_WHERE, exact-answer verifier" \
    "${RL_LAUNCH[@]}" "${RL_ARGS[@]}" --out "$OUT/rl"

# The SFT policy's rate is the run's initial evaluation (written before the first update), the
# trained policy's its last; the standard error of each is the spread of its 0/1 scores over
# the n prompts, std / sqrt(n), and that of the rise combines the two.
STAGE=$((STAGE + 1))
evals=$OUT/rl/eval.jsonl
[ "$(head -n 1 "$evals" | sed -n 's/.*"step": *\(-1\),.*/\1/p')" = -1 ] ||
    { echo "quickstart: $evals has no initial evaluation; rerun with --fresh" >&2; exit 1; }
n=$(awk '/^eval:/ { e = 1; next } /^[^ ]/ { e = 0 } e && /num_prompts:/ { print $2 }' \
    "$OUT/rl/config.yaml")
num() { sed -n "s|.*\"$1\": *\([-0-9.eE+]*\).*|\1|p"; }
first=$(head -n 1 "$evals") last=$(tail -n 1 "$evals")
minutes=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", (b - a) / 60 }')
progress "exact-answer rates" "[$(elapsed)]"
awk -v p0="$(num eval/gold_scores <<< "$first")" -v s0="$(num eval/gold_scores_std <<< "$first")" \
    -v p1="$(num eval/gold_scores <<< "$last")" -v s1="$(num eval/gold_scores_std <<< "$last")" \
    -v step="$(num step <<< "$last")" -v n="$n" -v algo="$ALGO" -v name="$name" \
    -v minutes="$minutes" 'BEGIN {
    e0 = s0 / sqrt(n); e1 = s1 / sqrt(n); d = p1 - p0; e = sqrt(e0 * e0 + e1 * e1)
    printf "exact-answer rate on %d held-out prompts (one response each, temperature 1):\n", n
    printf "  SFT policy               %.3f +- %.3f\n", p0, e0
    printf "  %-4s policy (%4d steps) %.3f +- %.3f\n", name, step + 1, p1, e1
    printf "  rise %+.3f +- %.3f = %.1f standard errors\n", d, e, (e > 0 ? d / e : 0)
    fmt = "RESULT task=arithmetic algorithm=%s sft_exact=%.4f rl_exact=%.4f rise=%.4f"
    fmt = fmt " rise_se=%.2f minutes=%s\n"
    printf fmt, algo, p0, p1, d, (e > 0 ? d / e : 0), minutes
}'
exit 0
