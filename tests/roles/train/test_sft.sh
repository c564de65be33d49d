#!/bin/bash
# test_sft.sh: `ppo_world sft` on a tiny synthetic set lowers the response-token validation loss
# clearly, and writes the checkpoint, the metrics and a final line.
. "$(dirname "$0")/common.sh"
make_sft "$WORK/sft_train.jsonl" 400 1
make_sft "$WORK/sft_valid.jsonl" 60 2
"$PPO_WORLD" sft --out "$WORK/out" "data.dir=$WORK" train.steps=80 eval.every=40 \
    train.batch_size=8 model.n_embd=32 optim.lr=3e-3 seed=3 > "$WORK/log" ||
    { cat "$WORK/log"; fail "sft exited $?"; }
cat "$WORK/log"
grep -q '^ppo_world sft: done: 80 steps' "$WORK/log" || fail "no final line"
for f in model.safetensors config.json config.yaml metrics.jsonl; do
    [ -s "$WORK/out/$f" ] || fail "missing out/$f"
done
[ "$(wc -l < "$WORK/out/metrics.jsonl")" -eq 3 ] || fail "expected 3 evaluations (0, 40, 80)"
v0=$(first_metric "$WORK/out/metrics.jsonl" valid/loss)
v1=$(last_metric "$WORK/out/metrics.jsonl" valid/loss)
echo "valid/loss $v0 -> $v1"
awk -v a="$v0" -v b="$v1" 'BEGIN { exit !(b < 0.5 * a) }' || fail "valid loss $v0 -> $v1: not halved"
# The checkpoint loads back as a language model (the format of the model core).
"$WEIGHTS_DIFF" "$WORK/out" "$WORK/out" lm 0 > /dev/null || fail "checkpoint does not load"
echo "sft: ok"
