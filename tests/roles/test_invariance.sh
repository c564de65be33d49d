#!/bin/sh
# test_invariance.sh: in sync mode the placement must not change the numbers: everything on one
# rank, one role per rank (5 ranks) and a NeMo-Aligner-like co-location (3 ranks), each with one
# rank per role, give bit-identical metrics for 3 steps (only the time/, comm/ and memory/ keys,
# measurements of the placement, may differ), at fp32 and at bf16. Nor do offloading the AdamW
# moments and activation checkpointing.
. "$(dirname "$0")/common.sh"
make_inputs
placement colo 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'critic: { ranks: [1] }' \
    'reward: { ranks: [1] }' 'generator: { ranks: [2] }'
set -- ppo.epochs=2 ppo.minibatches=2 ppo.initial_policy_kl_penalty=0.05 generation.temperature=0.9
run_ppo 1 single one "$@"
run_ppo 5 five five "$@"
run_ppo 3 colo colo "$@"
"$METRICS_CHECK" lines "$WORK/one/metrics.jsonl" 3
"$METRICS_CHECK" same "$WORK/one/metrics.jsonl" "$WORK/five/metrics.jsonl"
"$METRICS_CHECK" same "$WORK/one/metrics.jsonl" "$WORK/colo/metrics.jsonl"
# Moving the AdamW moments to host memory between updates changes no number either (on the CPU
# the moments stay where they are; on a GPU they travel and come back before each update).
run_ppo 3 colo colo_off "$@" optim.offload_adam_states=true
"$METRICS_CHECK" same "$WORK/one/metrics.jsonl" "$WORK/colo_off/metrics.jsonl"
# Nor does activation checkpointing: the actor and the critic make each layer's activations
# again in the backward, from the layer's input, with the same kernels (docs/model.md,
# Activation memory).
run_ppo 3 colo colo_ckpt "$@" model.activation_checkpointing=true
"$METRICS_CHECK" same "$WORK/one/metrics.jsonl" "$WORK/colo_ckpt/metrics.jsonl"

# At bf16 the generator keeps the layers' matrices in bfloat16 alone and the actor hands it
# those, packed with the float32 of the rest (docs/model.md, Models that follow): through the
# broadcast to its own rank as through the copy on the actor's, the same weights, so the same
# numbers; and after two updates its log-probs are still the actor's up to the rounding that
# roles step0 measures at step 0 (a float32 KV cache: the batch attention's rounding, 1.8e-4).
run_ppo 1 single one16 "$@" model.precision=bf16 generation.kv_cache_dtype=fp32
run_ppo 5 five five16 "$@" model.precision=bf16 generation.kv_cache_dtype=fp32
"$METRICS_CHECK" same "$WORK/one16/metrics.jsonl" "$WORK/five16/metrics.jsonl"
for step in 0 1 2; do
    "$METRICS_CHECK" below "$WORK/one16/metrics.jsonl" $step generator/logprob_diff 1e-3
done

# A two-member ensemble, each member data parallel over two of four reward ranks, scores as the
# same ensemble on one rank (the actor, critic and reference keep one rank each).
"$MAKE_TINY" model "$WORK/rm2" 44 64 score ${TINY_FAMILY:-}
placement ens4 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'critic: { ranks: [0] }' \
    'generator: { ranks: [0] }' 'reward: { ranks: [1, 2, 3, 4], models: [rm, rm2] }'
run_ppo 5 ens4 ens4 "model.reward=[$WORK/rm, $WORK/rm2]" reward.objective=uwo
run_ppo 1 single ens1 "model.reward=[$WORK/rm, $WORK/rm2]" reward.objective=uwo
"$METRICS_CHECK" same "$WORK/ens1/metrics.jsonl" "$WORK/ens4/metrics.jsonl"
