#!/bin/sh
# test_bad_input.sh: bad input is a clear error before any training, on every rank, with a
# non-zero exit: a missing checkpoint folder, vocabulary sizes that differ, a reward model or
# critic folder without its head, an empty prompt file, a prompt longer than the context, paths
# that are not what their key wants (a loop of links, a device, a FIFO, a folder, a file where
# the checkpoints or the TensorBoard events go). Each run is bounded by timeout so a hang fails
# the test. Prompts over data.max_prompt_len are skipped with one warning; data.prompt_template
# wraps text prompts.
. "$(dirname "$0")/common.sh"
make_inputs
"$MAKE_TINY" model "$WORK/rm80" 55 80 score
: > "$WORK/empty.jsonl"
"$MAKE_TINY" prompts "$WORK/long.jsonl" 66 64 4 30 30
placement two 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'generator: { ranks: [0] }' \
    'critic: { ranks: [1] }' 'reward: { ranks: [1] }'

# expect_error NAME PATTERN [key=value ...]: both ranks fail with PATTERN, no metrics written.
expect_error() {
    name=$1 pattern=$2; shift 2
    if timeout 60 "$MPIRUN" -np 2 "$PPO_DRIVER" "$WORK/two.yaml" "$WORK/ppo.yaml" "$WORK/$name" \
        "$@" 2> "$WORK/$name.err"; then
        echo "FAIL $name: the run succeeded"; exit 1
    fi
    for rank in 0 1; do
        if ! grep -q "rank $rank: error: .*$pattern" "$WORK/$name.err"; then
            echo "FAIL $name: rank $rank did not report '$pattern'"; cat "$WORK/$name.err"; exit 1
        fi
    done
    if [ -e "$WORK/$name/metrics.jsonl" ]; then echo "FAIL $name: metrics written"; exit 1; fi
    echo "ok $name: $(grep -m1 'rank 0: error' "$WORK/$name.err")"
}

expect_error missing "model.sft: checkpoint folder $WORK/nope: does not exist" \
    "model.sft=$WORK/nope"
expect_error missing_rm "model.reward\[0\]: checkpoint folder" "model.reward=[$WORK/nope]"
expect_error vocab "vocab_size 80 of '$WORK/rm80' differs from 64" "model.reward=[$WORK/rm80]"
expect_error noscore "model.reward\[0\]: $WORK/sft has no score.weight: it is not a reward model" \
    "model.reward=[$WORK/sft]"
expect_error nogold "model.gold: $WORK/sft has no score.weight: it is not a reward model" \
    "model.gold=$WORK/sft"
expect_error novalue "model.critic: $WORK/rm has no value_head.weight: it is not a critic" \
    "model.critic=$WORK/rm"
expect_error empty "'$WORK/empty.jsonl' holds no prompt" "data.prompts=$WORK/empty.jsonl"
expect_error long "long.jsonl:1: the prompt has 30 tokens" "data.prompts=$WORK/long.jsonl" \
    data.max_prompt_len=64

# Paths that are not what the key wants, each said as what it is.
ln -s loop_b "$WORK/loop_a"
ln -s loop_a "$WORK/loop_b"
mkfifo "$WORK/fifo.jsonl"
mkdir "$WORK/sft_fifo"
cp "$WORK/sft/model.safetensors" "$WORK/sft_fifo/"
mkfifo "$WORK/sft_fifo/config.json"
expect_error sft_loop "model.sft: checkpoint folder $WORK/loop_a: too many symbolic links" \
    "model.sft=$WORK/loop_a"
expect_error sft_device \
    "model.sft: checkpoint folder /dev/zero: not a directory (a character device)" \
    "model.sft=/dev/zero"
expect_error sft_config_fifo "model.sft: $WORK/sft_fifo/config.json: not a regular file (a FIFO)" \
    "model.sft=$WORK/sft_fifo"
expect_error prompts_dir "data.prompts: $WORK/sft: is a directory" "data.prompts=$WORK/sft"
expect_error prompts_fifo "data.prompts: $WORK/fifo.jsonl: not a regular file (a FIFO)" \
    "data.prompts=$WORK/fifo.jsonl"
# the evaluation prompts' errors name their own key
expect_error eval_empty "data.eval_prompts: '$WORK/empty.jsonl' holds no prompt" \
    "data.eval_prompts=$WORK/empty.jsonl" eval.every=1
# a file where RUN_DIR/checkpoints goes: said before the first step, not at the first checkpoint
mkdir "$WORK/ckpt_file"
: > "$WORK/ckpt_file/checkpoints"
expect_error ckpt_file "--out: $WORK/ckpt_file/checkpoints: not a directory (a regular file)"
# and one where the TensorBoard events go (log.tensorboard): the same, on every rank
mkdir "$WORK/tb_file"
: > "$WORK/tb_file/tensorboard"
expect_error tb_file \
    "log.tensorboard: $WORK/tb_file/tensorboard: not a directory (a regular file)" \
    log.tensorboard=true

# Prompts over data.max_prompt_len are skipped, and the start-up says how many, once.
cat "$WORK/prompts.jsonl" "$WORK/long.jsonl" > "$WORK/mixed.jsonl"
"$MPIRUN" -np 2 "$PPO_DRIVER" "$WORK/two.yaml" "$WORK/ppo.yaml" "$WORK/mixed" episodes=8 \
    "data.prompts=$WORK/mixed.jsonl" 2> "$WORK/mixed.err" || { cat "$WORK/mixed.err"; exit 1; }
want="warning: 4 prompts of $WORK/mixed.jsonl are longer than data.max_prompt_len (16 tokens)"
if [ "$(grep -c "$want" "$WORK/mixed.err")" != 1 ]; then
    cat "$WORK/mixed.err"; echo "FAIL mixed: no single '$want'"; exit 1
fi
echo "ok mixed: $(grep -m1 warning "$WORK/mixed.err")"

# data.prompt_template reaches the prompts: "ab" fits data.max_prompt_len 16 as it is (3 byte
# tokens with SEP), but not inside a 20-byte template, so every prompt is skipped.
"$MAKE_TINY" model "$WORK/sft259" 11 259
"$MAKE_TINY" model "$WORK/rm259" 22 259 score
printf '{"prompt": "ab"}\n{"prompt": "ba"}\n' > "$WORK/text.jsonl"
expect_error template "text.jsonl: all 2 examples are over the length limits" "model.sft=$WORK/sft259" \
    "model.reward=[$WORK/rm259]" "data.prompts=$WORK/text.jsonl" data.tokenizer=bytes \
    "data.prompt_template=QQQQQQQQQQQQQQQQQQQQ{prompt}"
