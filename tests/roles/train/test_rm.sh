#!/bin/bash
# test_rm.sh: `ppo_world rm` on separable preference pairs (explicit prompt and HH layout mixed)
# reaches high validation accuracy, and saves a model with a score head; its TensorBoard events
# (log.tensorboard) hold the numbers of its metrics.jsonl, the first line's nulls left out.
. "$(dirname "$0")/common.sh"
make_prefs "$WORK/prefs_train.jsonl" 300 1
make_prefs "$WORK/prefs_valid.jsonl" 60 2
"$PPO_WORLD" rm --out "$WORK/out" "data.dir=$WORK" train.steps=60 eval.every=30 \
    train.batch_size=8 model.n_embd=32 optim.lr=3e-3 seed=3 log.tensorboard=true > "$WORK/log" ||
    { cat "$WORK/log"; fail "rm exited $?"; }
cat "$WORK/log"
grep -q '^ppo_world rm: done: 60 steps' "$WORK/log" || fail "no final line"
acc=$(last_metric "$WORK/out/metrics.jsonl" valid/accuracy)
loss=$(last_metric "$WORK/out/metrics.jsonl" valid/loss)
echo "valid/accuracy $acc valid/loss $loss"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.95) }' || fail "valid accuracy $acc < 0.95"
awk -v a="$loss" 'BEGIN { exit !(a < 0.3) }' || fail "valid loss $loss >= 0.3"
head -c 4096 "$WORK/out/model.safetensors" | grep -q '"score.weight"' || fail "no score head saved"
"$TB_CHECK" "$WORK/out" 1 --train || fail "TensorBoard events"
echo "rm: ok"
