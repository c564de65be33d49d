#!/bin/sh
# test_placements.sh: several ranks per role (data parallel inside roles, a reward ensemble
# whose members live on different ranks) and no generator (the actor generates) all run and
# give finite metrics, also with eight ranks and with more ranks per role than rows; the
# gradients' buckets change no number.
. "$(dirname "$0")/common.sh"
make_inputs
"$MAKE_TINY" model "$WORK/rm2" 44 64 score
placement dp 'actor: { ranks: [0, 1] }' 'reference: { ranks: [2] }' 'critic: { ranks: [0, 3] }' \
    'reward: { ranks: [1, 2] }' 'generator: { ranks: [3, 4] }'
run_ppo 5 dp dp ppo.minibatches=2 ppo.initial_policy_kl_penalty=0.05
"$METRICS_CHECK" lines "$WORK/dp/metrics.jsonl" 3
# The actor's and critic's gradients summed in 1 KiB buckets while the backward goes on, and in
# one all-reduce after it: with two ranks a sum is a + b either way, so every number is the same.
run_ppo 5 dp dp_b0 ppo.minibatches=2 ppo.initial_policy_kl_penalty=0.05 runtime.grad_bucket_mb=0
run_ppo 5 dp dp_b1k ppo.minibatches=2 ppo.initial_policy_kl_penalty=0.05 \
    runtime.grad_bucket_mb=0.001
"$METRICS_CHECK" same "$WORK/dp_b0/metrics.jsonl" "$WORK/dp/metrics.jsonl"
"$METRICS_CHECK" same "$WORK/dp_b0/metrics.jsonl" "$WORK/dp_b1k/metrics.jsonl"

placement nogen 'actor: { ranks: [0, 1] }' 'reference: { ranks: [0] }' 'critic: { ranks: [1] }' \
    'reward: { ranks: [1] }'
run_ppo 2 nogen nogen ppo.initial_policy_kl_penalty=0.05
"$METRICS_CHECK" lines "$WORK/nogen/metrics.jsonl" 3
"$METRICS_CHECK" zero "$WORK/nogen/metrics.jsonl" 0 objective/kl

# Three members: two checkpoints and a verifier, each served by its own ranks.
placement ens 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'critic: { ranks: [0] }' \
    'generator: { ranks: [0] }' 'reward: { ranks: [1, 2, 3], models: [rm, rm2, v] }'
for obj in mean wco uwo; do
    run_ppo 4 ens "ens_$obj" "model.reward=[$WORK/rm, $WORK/rm2, verifier:count:5]" \
        reward.objective=$obj reward.non_stop_penalty=false
    "$METRICS_CHECK" lines "$WORK/ens_$obj/metrics.jsonl" 3
done

# Eight ranks with a rank holding critic+reward, and more ranks per role than rows (empty blocks:
# a rank without rows in a minibatch reports its gradients as a backward would, so that its
# buckets' sums match the others', here in 1 KiB buckets).
placement dp8 'actor: { ranks: [0, 1] }' 'generator: { ranks: [2, 3] }' 'reference: { ranks: [4] }' \
    'critic: { ranks: [5, 7] }' 'reward: { ranks: [6, 7] }'
run_ppo 8 dp8 dp8 ppo.num_rollout_samples=3 episodes=9 ppo.rollout_micro_batch_size=1 \
    ppo.minibatches=3 "model.reward=[$WORK/rm, verifier:count:3]" runtime.grad_bucket_mb=0.001
"$METRICS_CHECK" lines "$WORK/dp8/metrics.jsonl" 3
placement wide 'actor: { ranks: [0, 1, 2, 3] }' 'reference: { ranks: [0, 1, 2, 3] }' \
    'critic: { ranks: [0, 1, 2, 3] }' 'reward: { ranks: [0, 1, 2, 3] }'
run_ppo 4 wide wide ppo.num_rollout_samples=2 episodes=6 ppo.rollout_micro_batch_size=1 \
    runtime.grad_bucket_mb=0.001
"$METRICS_CHECK" lines "$WORK/wide/metrics.jsonl" 3
