#!/bin/sh
# test_learning.sh: PPO learns. On a toy reward (the verifier "count of token 5 in the response")
# a 5-rank run (one role per rank) raises the mean score clearly within 40 steps of 16 rollouts.
. "$(dirname "$0")/../roles/common.sh"
make_inputs
"$MAKE_TINY" prompts "$WORK/prompts.jsonl" 33 64 32 2 6
run_ppo 5 five learn episodes=640 ppo.num_rollout_samples=16 ppo.rollout_micro_batch_size=8 \
    "model.reward=[verifier:count:5]" generation.stop_token=none reward.non_stop_penalty=false \
    ppo.epochs=2 ppo.minibatches=2 optim.lr=3e-3 critic.lr=3e-3 ppo.initial_policy_kl_penalty=0.01
"$METRICS_CHECK" lines "$WORK/learn/metrics.jsonl" 40
# 8 new tokens: a score of 8 is every token; the untrained policy scores about 8/64.
"$METRICS_CHECK" rises "$WORK/learn/metrics.jsonl" objective/scores 5 3.0
