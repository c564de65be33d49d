#!/bin/sh
# test_eval.sh: eval.jsonl gets a line for the initial policy (episode 0) and one per eval.every
# steps: the ensemble's score (and the gold model's) on the evaluation prompts, the same whatever
# the placement; a verifier member adds eval/verifiable_correct_rate. Evaluation must not change
# training: metrics equal a run without it. Resume continues eval.jsonl without a second initial
# evaluation.
. "$(dirname "$0")/common.sh"
make_inputs
"$MAKE_TINY" model "$WORK/gold" 77 64 score
"$MAKE_TINY" prompts "$WORK/eval.jsonl" 88 64 5 3 9
set -- episodes=32 eval.every=2 eval.num_prompts=4 "data.eval_prompts=$WORK/eval.jsonl" \
    "model.gold=$WORK/gold" "model.reward=[$WORK/rm, verifier:count:7]" checkpoint.every=2 \
    checkpoint.keep=0
run_ppo 1 single one "$@"
run_ppo 5 five five "$@"
run_ppo 5 five plain episodes=32 "model.reward=[$WORK/rm, verifier:count:7]" eval.every=0
"$METRICS_CHECK" lines "$WORK/one/eval.jsonl" 3
head -n 1 "$WORK/one/eval.jsonl" | grep -q '^{"step":-1,"episode":0,' ||
    { echo "FAIL: the first line is not the initial evaluation"; exit 1; }
# The initial evaluation sees the SFT weights whatever the training does: a run with another
# learning rate (and one step only) writes the same first line, byte for byte.
run_ppo 1 single lr episodes=8 optim.lr=2.0e-2 critic.lr=2.0e-2 eval.every=2 eval.num_prompts=4 \
    "data.eval_prompts=$WORK/eval.jsonl" "model.gold=$WORK/gold" \
    "model.reward=[$WORK/rm, verifier:count:7]"
"$METRICS_CHECK" lines "$WORK/lr/eval.jsonl" 1
[ "$(head -n 1 "$WORK/lr/eval.jsonl")" = "$(head -n 1 "$WORK/one/eval.jsonl")" ] ||
    { echo "FAIL: the initial evaluation depends on the learning rate"; exit 1; }
grep -q '"eval/gold_scores"' "$WORK/one/eval.jsonl" || { echo "FAIL: no gold score"; exit 1; }
grep -q '"eval/verifiable_correct_rate"' "$WORK/one/eval.jsonl" || { echo "FAIL: no rate"; exit 1; }
# The initial evaluation's actor and reference hold the same weights and cut the same blocks:
# eval/kl is exactly 0 there, and finite (checked by lines) after updates.
"$METRICS_CHECK" zero "$WORK/one/eval.jsonl" 0 eval/kl
"$METRICS_CHECK" zero "$WORK/five/eval.jsonl" 0 eval/kl
if "$METRICS_CHECK" zero "$WORK/one/eval.jsonl" 2 eval/kl 2> /dev/null; then
    echo "FAIL: eval/kl still 0 after updates"; exit 1
fi
# Sample responses: without a tokenizer, prompts and responses as token ids.
[ "$(grep -c '"eval/samples":\[{"prompt":\[[0-9]' "$WORK/one/eval.jsonl")" = 3 ] ||
    { echo "FAIL: no samples"; exit 1; }
# The per-response spreads: finite (lines) and non-negative; test_task.sh bounds a gold in
# [0, 1] (this gold is a score model, unbounded).
value() { sed "s|.*\"$1\":\([^,}]*\).*|\1|" "$2"; }
for k in eval/gold_scores_std eval/scores_std; do
    value $k "$WORK/one/eval.jsonl" | awk -v k=$k '
        $1 + 0 < 0 || $1 !~ /^[0-9.eE+-]+$/ { print "FAIL: " k " " $1; bad = 1 }
        END { exit bad + (NR != 3) }'
done
"$METRICS_CHECK" same "$WORK/one/eval.jsonl" "$WORK/five/eval.jsonl"
"$METRICS_CHECK" same "$WORK/one/metrics.jsonl" "$WORK/five/metrics.jsonl"
"$METRICS_CHECK" same "$WORK/plain/metrics.jsonl" "$WORK/five/metrics.jsonl"
# resume from step_2: the evaluation after step 3 comes back identical, the initial one is kept
mkdir -p "$WORK/cut/checkpoints"
cp -r "$WORK/five/checkpoints/step_2" "$WORK/cut/checkpoints/"
cp "$WORK/five/config.yaml" "$WORK/five/metrics.jsonl" "$WORK/five/eval.jsonl" "$WORK/cut/"
"$MPIRUN" -np 5 "$PPO_DRIVER" "$WORK/five.yaml" "$WORK/ppo.yaml" "$WORK/cut" --resume "$@"
"$METRICS_CHECK" same "$WORK/five/eval.jsonl" "$WORK/cut/eval.jsonl"
cat "$WORK/one/eval.jsonl"
