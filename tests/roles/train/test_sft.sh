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
for f in model.safetensors config.json config.yaml metrics.jsonl devices.txt; do
    [ -s "$WORK/out/$f" ] || fail "missing out/$f"
done
head -n 1 "$WORK/out/devices.txt" | grep -Eq '^# started [0-9T:-]+Z, on ' &&
    grep -q '^CPU: .*; BLAS: ' "$WORK/out/devices.txt" || fail "out/devices.txt"
[ "$(wc -l < "$WORK/out/metrics.jsonl")" -eq 3 ] || fail "expected 3 evaluations (0, 40, 80)"
v0=$(first_metric "$WORK/out/metrics.jsonl" valid/loss)
v1=$(last_metric "$WORK/out/metrics.jsonl" valid/loss)
echo "valid/loss $v0 -> $v1"
awk -v a="$v0" -v b="$v1" 'BEGIN { exit !(b < 0.5 * a) }' || fail "valid loss $v0 -> $v1: not halved"
# The checkpoint loads back as a language model (the format of the model core).
"$WEIGHTS_DIFF" "$WORK/out" "$WORK/out" lm 0 > /dev/null || fail "checkpoint does not load"
echo "sft: ok"

# A random model of the Llama family (model.type): it learns as GPT-2 does, and its config.json
# is what transformers reads (model_type, grouped-query heads, the eps as written: 1e-5).
"$PPO_WORLD" sft --out "$WORK/qwen" "data.dir=$WORK" train.steps=80 eval.every=40 \
    train.batch_size=8 model.type=qwen2 model.n_embd=32 model.n_kv_head=1 model.n_inner=48 \
    optim.lr=3e-3 seed=3 > "$WORK/qlog" || { cat "$WORK/qlog"; fail "sft qwen2 exited $?"; }
grep -q 'model llama L=2 H=2 C=32' "$WORK/qlog" || { cat "$WORK/qlog"; fail "not a Llama-family model"; }
v0=$(first_metric "$WORK/qwen/metrics.jsonl" valid/loss)
v1=$(last_metric "$WORK/qwen/metrics.jsonl" valid/loss)
echo "qwen2 valid/loss $v0 -> $v1"
awk -v a="$v0" -v b="$v1" 'BEGIN { exit !(b < 0.5 * a) }' || fail "qwen2: valid loss $v0 -> $v1: not halved"
for want in '"model_type": "qwen2"' '"num_key_value_heads": 1' '"intermediate_size": 48' \
    '"rms_norm_eps": 1e-5,' '"tie_word_embeddings": true'; do
    grep -qF "$want" "$WORK/qwen/config.json" || { cat "$WORK/qwen/config.json"; fail "config.json lacks $want"; }
done
"$WEIGHTS_DIFF" "$WORK/qwen" "$WORK/qwen" lm 0 > /dev/null || fail "qwen2 checkpoint does not load"
echo "sft qwen2: ok"

# Qwen3: each query and key head RMS-normed, heads of 24 whose two make an attention 48 wide over
# 32 channels (model.head_dim); config.json says both as transformers' Qwen3Config reads them.
"$PPO_WORLD" sft --out "$WORK/qwen3" "data.dir=$WORK" train.steps=80 eval.every=40 \
    train.batch_size=8 model.type=qwen3 model.n_embd=32 model.head_dim=24 model.n_kv_head=1 \
    model.n_inner=48 optim.lr=3e-3 seed=3 > "$WORK/q3log" ||
    { cat "$WORK/q3log"; fail "sft qwen3 exited $?"; }
v0=$(first_metric "$WORK/qwen3/metrics.jsonl" valid/loss)
v1=$(last_metric "$WORK/qwen3/metrics.jsonl" valid/loss)
echo "qwen3 valid/loss $v0 -> $v1"
awk -v a="$v0" -v b="$v1" 'BEGIN { exit !(b < 0.5 * a) }' ||
    fail "qwen3: valid loss $v0 -> $v1: not halved"
for want in '"model_type": "qwen3"' '"head_dim": 24' '"attention_bias": false'; do
    grep -qF "$want" "$WORK/qwen3/config.json" ||
        { cat "$WORK/qwen3/config.json"; fail "config.json lacks $want"; }
done
"$WEIGHTS_DIFF" "$WORK/qwen3" "$WORK/qwen3" lm 0 > /dev/null ||
    fail "qwen3 checkpoint does not load"
echo "sft qwen3: ok"

# The quickstart's Qwen3 SFT configuration (no e2e test runs --family qwen3) loads and trains.
"$PPO_WORLD" sft --config "$(dirname "$0")/../../../configs/quickstart/sft_qwen3.yaml" \
    --out "$WORK/qs_qwen3" "data.dir=$WORK" train.steps=2 eval.every=2 > "$WORK/qslog" 2>&1 ||
    { cat "$WORK/qslog"; fail "sft with configs/quickstart/sft_qwen3.yaml exited $?"; }
grep -qF '"head_dim": 32' "$WORK/qs_qwen3/config.json" ||
    { cat "$WORK/qs_qwen3/config.json"; fail "sft_qwen3.yaml: no head_dim 32 in config.json"; }
echo "sft quickstart qwen3 config: ok"

# data.prompt_template reaches the examples: "a+b=" + SEP is 5 tokens, 11 inside "Q: {prompt} A:",
# so data.max_prompt_len=8 with data.overlong=error fails only with the template.
"$PPO_WORLD" sft --out "$WORK/tmpl" "data.dir=$WORK" train.steps=1 data.max_prompt_len=8 \
    data.overlong=error > "$WORK/tlog" 2>&1 || { cat "$WORK/tlog"; fail "sft without template failed"; }
if "$PPO_WORLD" sft --out "$WORK/tmpl2" "data.dir=$WORK" train.steps=1 data.max_prompt_len=8 \
    data.overlong=error "data.prompt_template=Q: {prompt} A:" > "$WORK/tlog" 2>&1; then
    fail "sft with a template that makes every prompt too long succeeded"
fi
grep -q 'example too long: prompt 11 ' "$WORK/tlog" || { cat "$WORK/tlog"; fail "no 'prompt 11' error"; }
echo "sft prompt_template: ok"

# With a Hugging Face tokenizer folder (the Llama 3-style fixture, 1500 tokens): the text goes
# through its BPE, the random model takes its vocabulary, and out/ carries the tokenizer's files
# byte for byte, so the folder loads in transformers with its tokenizer; and a run started from a
# folder keeps that folder's generation_config.json.
fix=$(cd "$(dirname "$0")/../../fixtures" && pwd)
"$PPO_WORLD" sft --out "$WORK/bpe" "data.dir=$WORK" "data.tokenizer=$fix/bpe_llama3" \
    train.steps=4 eval.every=4 train.batch_size=8 model.n_embd=32 seed=3 > "$WORK/blog" ||
    { cat "$WORK/blog"; fail "sft with a tokenizer folder exited $?"; }
grep -qF '"vocab_size": 1500' "$WORK/bpe/config.json" ||
    fail "the model is not the tokenizer's size"
for f in tokenizer.json tokenizer_config.json; do
    cmp "$fix/bpe_llama3/$f" "$WORK/bpe/$f" || fail "out/$f is not the tokenizer's"
done
# a random model has no generation_config.json to keep: out/ gets the tokenizer's ids (the
# fixture's <|begin_of_text|> 4, <|endoftext|> 0, <|pad|> 1), so transformers stops on EOS
tr -d ' \n' < "$WORK/bpe/generation_config.json" |
    grep -qxF '{"bos_token_id":4,"eos_token_id":0,"pad_token_id":1}' ||
    { cat "$WORK/bpe/generation_config.json"; fail "out/generation_config.json"; }
# Started from that folder (model.init) with a generation_config.json of its own: out/ keeps it
printf '{"eos_token_id": [0, 3], "top_p": 0.9}\n' > "$WORK/bpe/generation_config.json"
"$PPO_WORLD" sft --out "$WORK/bpe2" "data.dir=$WORK" "data.tokenizer=$fix/bpe_llama3" \
    "model.init=$WORK/bpe" train.steps=2 eval.every=2 train.batch_size=8 seed=3 > "$WORK/blog2" ||
    { cat "$WORK/blog2"; fail "sft from a folder exited $?"; }
cmp "$WORK/bpe/generation_config.json" "$WORK/bpe2/generation_config.json" ||
    fail "out/ has not model.init's generation_config.json"
echo "sft with a tokenizer folder: ok"
# devices.txt that cannot be written (a folder at its name, which the rename cannot replace): a
# warning, and the run goes on to its end, leaving no temporary file behind
mkdir -p "$WORK/nodev/devices.txt"
"$PPO_WORLD" sft --out "$WORK/nodev" "data.dir=$WORK" train.steps=2 eval.every=2 \
    train.batch_size=8 model.n_embd=32 seed=3 > "$WORK/nodev.log" 2>&1 ||
    { cat "$WORK/nodev.log"; fail "sft with devices.txt unwritable exited $?"; }
grep -q "warning: .*devices.txt: cannot rename the temporary file over it: Is a directory" \
    "$WORK/nodev.log" && grep -q "(the run goes on)" "$WORK/nodev.log" &&
    [ -s "$WORK/nodev/model.safetensors" ] && ! ls "$WORK/nodev/devices.txt.tmp"* 2> /dev/null ||
    { cat "$WORK/nodev.log"; fail "devices.txt unwritable"; }
echo "devices.txt unwritable: ok"
