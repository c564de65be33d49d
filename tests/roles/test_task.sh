#!/bin/sh
# test_task.sh: text prompts through data.tokenizer (bytes: prompt bytes + SEP, rows padded with
# PAD, stop at EOS) next to {"input_ids"} lines; the synthetic task's gold scorer as a reward
# member ("verifier:task") and as model.gold in eval.jsonl, whose sample responses are decoded
# text; the same numbers on 1 and 3 ranks; arithmetic prompts with the exact-answer verifier
# (PPO, and GRPO whose groups all tie: zero advantages move nothing); a Hugging Face tokenizer
# folder's files in every checkpoint; and the messages when the tokenizer is missing or does not
# fit the model.
. "$(dirname "$0")/common.sh"
"$MAKE_TINY" model "$WORK/sft" 11 260
"$MAKE_TINY" model "$WORK/rm" 22 260 score
for p in abcd hello dcb xyzzy '\"q' tac; do printf '{"prompt": "%s"}\n' "$p"; done \
    > "$WORK/prompts.jsonl"
echo '{"input_ids": [97, 98, 99, 258]}' >> "$WORK/prompts.jsonl"
placement colo 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'critic: { ranks: [1] }' \
    'reward: { ranks: [1] }' 'generator: { ranks: [2] }'

set -- data.tokenizer=bytes "model.reward=[$WORK/rm, verifier:task]" model.gold=verifier:task \
    eval.every=1 eval.num_prompts=4 episodes=24 generation.temperature=3
run_ppo 1 single one "$@"
run_ppo 3 colo colo "$@"
"$METRICS_CHECK" lines "$WORK/one/metrics.jsonl" 3
"$METRICS_CHECK" same "$WORK/one/metrics.jsonl" "$WORK/colo/metrics.jsonl"
"$METRICS_CHECK" same "$WORK/one/eval.jsonl" "$WORK/colo/eval.jsonl"
grep -q '"objective/verifiable_correct_rate"' "$WORK/one/metrics.jsonl" || {
    echo "FAIL: no objective/verifiable_correct_rate"; exit 1; }
grep -q '"eval/gold_scores"' "$WORK/one/eval.jsonl" || { echo "FAIL: no gold score"; exit 1; }
# The gold verifier scores in [0, 1]: its per-response standard deviation lies in [0, 0.5].
sed 's|.*"eval/gold_scores_std":\([^,}]*\).*|\1|' "$WORK/one/eval.jsonl" | awk '
    $1 + 0 < 0 || $1 + 0 > 0.5 || $1 !~ /^[0-9.eE+-]+$/ { print "FAIL: gold std " $1; bad = 1 }
    END { exit bad + (NR != 4) }'
# Sample responses decoded through the tokenizer: text prompts ending in the SEP token.
grep -q '"eval/samples":\[{"prompt":"[^"]*<sep>","response":"' "$WORK/one/eval.jsonl" ||
    { echo "FAIL: no decoded samples"; head -n 1 "$WORK/one/eval.jsonl"; exit 1; }

# The task verifier alone, without the non-stop penalty, is what model.gold reports.
run_ppo 1 single alone data.tokenizer=bytes "model.reward=[verifier:task]" \
    model.gold=verifier:task eval.every=1 eval.num_prompts=7 episodes=24 \
    reward.non_stop_penalty=false generation.temperature=3
value() { sed "s|.*\"$1\":\([^,}]*\).*|\1|" "$2"; }
value eval/scores "$WORK/alone/eval.jsonl" > "$WORK/s.txt"
value eval/gold_scores "$WORK/alone/eval.jsonl" > "$WORK/g.txt"
cmp -s "$WORK/s.txt" "$WORK/g.txt" || { echo "FAIL: task member and gold differ"; exit 1; }

# Arithmetic prompts: "verifier:exact" scores 1 or 0, so with no penalty a step's mean score is
# its correct rate, and a sampling policy that has never seen a sum gets next to nothing right.
for p in 12-40 7+5 99+1 3-3; do printf '{"prompt": "%s"}\n' "$p"; done > "$WORK/sums.jsonl"
run_ppo 1 single sums data.tokenizer=bytes "data.prompts=$WORK/sums.jsonl" \
    "model.reward=[verifier:exact]" model.gold=verifier:task eval.every=1 eval.num_prompts=4 \
    episodes=24 reward.non_stop_penalty=false generation.temperature=3
"$METRICS_CHECK" lines "$WORK/sums/metrics.jsonl" 3
value objective/scores "$WORK/sums/metrics.jsonl" > "$WORK/s.txt"
value objective/verifiable_correct_rate "$WORK/sums/metrics.jsonl" > "$WORK/c.txt"
cmp -s "$WORK/s.txt" "$WORK/c.txt" || { echo "FAIL: exact scores are not the correct rate";
    paste "$WORK/s.txt" "$WORK/c.txt"; exit 1; }

# GRPO on the same sums with no KL: the tiny random policy gets none right, so every score is 0,
# every group is tied and every advantage is 0: the policy loss is 0 at every step, and without
# weight decay AdamW leaves the weights as they were (a zero gradient moves nothing), so the
# ratio stays exactly 1 (approxkl 0) at every step, not only at the first
placement nocrit 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'reward: { ranks: [0] }' \
    'generator: { ranks: [0] }'
run_ppo 1 nocrit tied data.tokenizer=bytes "data.prompts=$WORK/sums.jsonl" \
    "model.reward=[verifier:exact]" algorithm=grpo generation.samples_per_prompt=4 episodes=24 \
    reward.non_stop_penalty=false ppo.initial_policy_kl_penalty=0 optim.weight_decay=0 \
    ppo.minibatches=2
for step in 0 1 2; do
    for key in objective/verifiable_correct_rate objective/group_std_mean loss/policy_avg \
        policy/approxkl_avg; do
        "$METRICS_CHECK" is "$WORK/tied/metrics.jsonl" $step $key 0
    done
    "$METRICS_CHECK" is "$WORK/tied/metrics.jsonl" $step objective/zero_std_groups 1
done

# A Hugging Face tokenizer folder (the GPT-2-style fixture: 1200 tokens, <|endoftext|> stops and
# <|pad|> pads): text prompts through its BPE, and every checkpoint's actor and critic folder
# carries its files byte for byte, as a folder transformers and vLLM load with its tokenizer;
# the actor's also model.sft's generation_config.json (the critic does not generate).
fix=$(cd "$(dirname "$0")/../fixtures" && pwd)
"$MAKE_TINY" model "$WORK/sft_bpe" 11 1200
"$MAKE_TINY" model "$WORK/rm_bpe" 22 1200 score
printf '{"eos_token_id": [0, 3], "do_sample": true, "top_p": 0.9}\n' \
    > "$WORK/sft_bpe/generation_config.json"
run_ppo 1 single bpe "data.tokenizer=$fix/bpe_gpt2" "model.sft=$WORK/sft_bpe" \
    "model.reward=[$WORK/rm_bpe]" eval.every=1 eval.num_prompts=2 episodes=16 checkpoint.every=1 \
    checkpoint.keep=0 generation.temperature=3
"$METRICS_CHECK" lines "$WORK/bpe/metrics.jsonl" 2
for s in 1 2; do
    for m in actor critic; do
        for f in tokenizer.json tokenizer_config.json; do
            cmp "$fix/bpe_gpt2/$f" "$WORK/bpe/checkpoints/step_$s/$m/$f" ||
                { echo "FAIL: step_$s/$m/$f is not the tokenizer's"; exit 1; }
        done
    done
    cmp "$WORK/sft_bpe/generation_config.json" \
        "$WORK/bpe/checkpoints/step_$s/actor/generation_config.json" ||
        { echo "FAIL: step_$s/actor has not model.sft's generation_config.json"; exit 1; }
    [ ! -e "$WORK/bpe/checkpoints/step_$s/critic/generation_config.json" ] ||
        { echo "FAIL: a generation_config.json for the critic"; exit 1; }
done
grep -q '"eval/samples":\[{"prompt":"[^"]*","response":"' "$WORK/bpe/eval.jsonl" ||
    { echo "FAIL: no decoded samples"; head -n 1 "$WORK/bpe/eval.jsonl"; exit 1; }
# a tokenizer folder whose chat template is a FIFO: loading never reads it, the checkpoint's copy
# refuses it (never waiting on it) with a warning, and the checkpoint is whole all the same
mkdir "$WORK/tok_fifo"
cp "$fix/bpe_gpt2/tokenizer.json" "$fix/bpe_gpt2/tokenizer_config.json" "$WORK/tok_fifo/"
mkfifo "$WORK/tok_fifo/chat_template.jinja"
timeout 60 "$MPIRUN" -np 1 "$PPO_DRIVER" "$WORK/single.yaml" "$WORK/ppo.yaml" "$WORK/fifo" \
    "data.tokenizer=$WORK/tok_fifo" "model.sft=$WORK/sft_bpe" "model.reward=[$WORK/rm_bpe]" \
    episodes=8 2> "$WORK/fifo.err" || { cat "$WORK/fifo.err"; echo "FAIL: the FIFO run"; exit 1; }
want="step_1/actor: .*chat_template.jinja: not a regular file (a FIFO) (the weights are saved)"
grep -q "warning: checkpoint .*$want" \
    "$WORK/fifo.err" || { cat "$WORK/fifo.err"; echo "FAIL: no warning for the FIFO"; exit 1; }
[ -f "$WORK/fifo/checkpoints/step_1/state.json" ] &&
    cmp -s "$fix/bpe_gpt2/tokenizer.json" "$WORK/fifo/checkpoints/step_1/actor/tokenizer.json" ||
    { echo "FAIL: the checkpoint is not whole"; exit 1; }
# the byte tokenizer has no files, and no Hugging Face model generates over it: none are written
[ -f "$WORK/one/checkpoints/step_3/actor/model.safetensors" ] &&
    [ ! -e "$WORK/one/checkpoints/step_3/actor/tokenizer.json" ] &&
    [ ! -e "$WORK/one/checkpoints/step_3/actor/generation_config.json" ] ||
    { echo "FAIL: a tokenizer.json for bytes"; exit 1; }

expect_error() { # expect_error WHAT PATTERN key=value...
    what=$1 pat=$2; shift 2
    if run_ppo 1 single "err_$what" "$@" > "$WORK/$what.log" 2>&1; then
        echo "FAIL $what: the run succeeded"; exit 1
    fi
    grep -q "$pat" "$WORK/$what.log" || { echo "FAIL $what:"; cat "$WORK/$what.log"; exit 1; }
    echo "ok $what: $(grep -m1 "$pat" "$WORK/$what.log")"
}
expect_error text "needs a tokenizer" "model.reward=[$WORK/rm]"
expect_error task "set data.tokenizer: bytes" "model.reward=[verifier:task]"
expect_error exact "set data.tokenizer: bytes" "model.reward=[verifier:exact]"
expect_error verifier "verifier:count:K, verifier:task or verifier:exact" \
    "model.reward=[verifier:exactly]"
"$MAKE_TINY" model "$WORK/sft64" 11 64
expect_error small "has 259 ids" data.tokenizer=bytes "model.sft=$WORK/sft64" \
    "model.reward=[verifier:task]"
