# common.sh: shared by the roles and e2e test scripts: tiny inputs in a temporary folder,
# placements and a run configuration, and the driver under mpirun.
# Expects MPIRUN, PPO_DRIVER, MAKE_TINY and METRICS_CHECK in the environment (meson sets them).
set -eu
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Tiny SFT and reward checkpoints (V=64, L=2, C=32) and 8 prompts of 2..6 tokens. TINY_FAMILY=llama
# makes them of the Llama family (Qwen2 layout: grouped-query attention, q/k/v biases, tied);
# TINY_FAMILY=qwen3 of Qwen3 (heads of 12 over 32 channels, q/k norms, attention biases).
make_inputs() {
    "$MAKE_TINY" model "$WORK/sft" 11 64 ${TINY_FAMILY:-}
    "$MAKE_TINY" model "$WORK/rm" 22 64 score ${TINY_FAMILY:-}
    "$MAKE_TINY" prompts "$WORK/prompts.jsonl" 33 64 8 2 6
}

# placement NAME LINES...: a placement file from role lines.
placement() {
    name=$1; shift
    { echo "version: 1"; echo "bind: none"; echo "roles:"; for l in "$@"; do echo "  $l"; done; } \
        > "$WORK/$name.yaml"
}
placement single 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'critic: { ranks: [0] }' \
    'reward: { ranks: [0] }' 'generator: { ranks: [0] }'
placement five 'actor: { ranks: [0] }' 'reference: { ranks: [1] }' 'critic: { ranks: [2] }' \
    'reward: { ranks: [3] }' 'generator: { ranks: [4] }'

# The run: 8 rollouts of up to 8 new tokens per step; keys may be overridden per run.
cat > "$WORK/ppo.yaml" <<YAML
seed: 3
episodes: 24
model:
  sft: $WORK/sft
  reward: [$WORK/rm]
data:
  prompts: $WORK/prompts.jsonl
  max_prompt_len: 16
ppo:
  num_rollout_samples: 8
  rollout_micro_batch_size: 4
  epochs: 1
  minibatches: 1
generation:
  max_new_tokens: 8
optim:
  lr: 1.0e-3
  warmup_steps: 0
critic:
  lr: 1.0e-3
runtime:
  timeout_s: 60
YAML

# run_ppo NP PLACEMENT OUT [key=value ...]
run_ppo() {
    np=$1 pl=$2 out=$3; shift 3
    "$MPIRUN" -np "$np" "$PPO_DRIVER" "$WORK/$pl.yaml" "$WORK/ppo.yaml" "$WORK/$out" "$@"
}
