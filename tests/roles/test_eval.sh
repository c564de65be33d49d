#!/bin/sh
# test_eval.sh: eval.jsonl gets one line per eval.every steps: the ensemble's score (and the gold
# model's) on the evaluation prompts, the same whatever the placement; a verifier member adds
# eval/verifiable_correct_rate. Evaluation must not change training: metrics equal a run
# without it. Resume continues eval.jsonl too.
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
"$METRICS_CHECK" lines "$WORK/one/eval.jsonl" 2
grep -q '"eval/gold_scores"' "$WORK/one/eval.jsonl" || { echo "FAIL: no gold score"; exit 1; }
grep -q '"eval/verifiable_correct_rate"' "$WORK/one/eval.jsonl" || { echo "FAIL: no rate"; exit 1; }
"$METRICS_CHECK" same "$WORK/one/eval.jsonl" "$WORK/five/eval.jsonl"
"$METRICS_CHECK" same "$WORK/one/metrics.jsonl" "$WORK/five/metrics.jsonl"
"$METRICS_CHECK" same "$WORK/plain/metrics.jsonl" "$WORK/five/metrics.jsonl"
# resume from step_2: the second evaluation comes back identical
mkdir -p "$WORK/cut/checkpoints"
cp -r "$WORK/five/checkpoints/step_2" "$WORK/cut/checkpoints/"
cp "$WORK/five/config.yaml" "$WORK/five/metrics.jsonl" "$WORK/five/eval.jsonl" "$WORK/cut/"
"$MPIRUN" -np 5 "$PPO_DRIVER" "$WORK/five.yaml" "$WORK/ppo.yaml" "$WORK/cut" --resume "$@"
"$METRICS_CHECK" same "$WORK/five/eval.jsonl" "$WORK/cut/eval.jsonl"
cat "$WORK/one/eval.jsonl"
