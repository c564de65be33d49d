#!/bin/sh
# test_plan_llama8b.sh: the memory plan of configs/placements/gpu_10_llama8b.yaml for Llama 3 8B's
# shape (config.json files of 32 layers of 4096, 32 heads over 8, MLP 14336, vocabulary 128256,
# untied; the weights files are never read) with configs/llama3_8b_ppo.yaml (its paths replaced:
# 512-token prompts as input_ids): with its optim.zero_stage 1 every rank plans within an 80 GB
# GPU's 81,559 MiB; with 0 the actor's and the critic's eight do not; with 2 (the gradients split
# too) each of those eight plans at least 10,000 MiB less than with 1.
# The ranks are planned on the CPU here (a cuda plan needs the GPUs), one line each.
. "$(dirname "$0")/common.sh"
make_inputs
for d in sft rm; do
    cat > "$WORK/$d/config.json" <<'JSON'
{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32,
 "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096,
 "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192,
 "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": false,
 "hidden_act": "silu", "torch_dtype": "bfloat16"}
JSON
done
"$MAKE_TINY" prompts "$WORK/p512.jsonl" 1 64 64 512 512
here=$(cd "$(dirname "$0")/../.." && pwd)
sed 's/device: cuda/device: cpu/' "$here/configs/placements/gpu_10_llama8b.yaml" > "$WORK/p10.yaml"
plan() { # plan STAGE: every rank's "at most" MiB, one a line
    "$PPO_WORLD" --placement "$WORK/p10.yaml" --dry-run --world-size 10 \
        --config "$here/configs/llama3_8b_ppo.yaml" model.sft="$WORK/sft" \
        "model.reward=[$WORK/rm]" data.prompts="$WORK/p512.jsonl" data.tokenizer="" \
        data.prompt_template="" optim.zero_stage=$1 > "$WORK/plan$1.log" 2>&1 ||
        true # exit 1: this host does not hold the ten ranks together
    sed -n 's/^ *[0-9]*  cpu    at most \([0-9.]*\) MiB$/\1/p' "$WORK/plan$1.log"
}
plan 1 > "$WORK/most1"
plan 0 > "$WORK/most0"
[ "$(wc -l < "$WORK/most1")" = 10 ] && [ "$(wc -l < "$WORK/most0")" = 10 ] ||
    { cat "$WORK/plan1.log"; echo "FAIL: not ten ranks planned"; exit 1; }
awk '$1 > 81559.1 { bad = 1 } END { exit bad }' "$WORK/most1" ||
    { cat "$WORK/plan1.log"; echo "FAIL: a rank plans more than 81,559 MiB at stage 1"; exit 1; }
[ "$(awk '$1 > 81559.1' "$WORK/most0" | wc -l)" = 8 ] ||
    { cat "$WORK/plan0.log"; echo "FAIL: at stage 0 the trained roles' 8 ranks fit"; exit 1; }
plan 2 > "$WORK/most2"
paste "$WORK/most1" "$WORK/most2" | head -n 8 |
    awk '$2 > $1 - 10000 { bad = 1 } END { exit bad }' ||
    { paste "$WORK/most1" "$WORK/most2"; echo "FAIL: stage 2 saves less than 10,000 MiB"; exit 1; }
grep "at most" "$WORK/plan1.log" "$WORK/plan2.log"
echo "PASS"
