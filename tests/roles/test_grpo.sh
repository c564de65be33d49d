#!/bin/sh
# test_grpo.sh: algorithm: grpo and rloo on placements without a critic. The same numbers on 1
# and 3 ranks (one rank per role, as test_invariance.sh: a data-parallel actor sums its gradients
# in another order), a bit-identical --resume, and the refusals: ppo without a critic, a critic
# with grpo, n = 1 with grpo, N not a multiple of n.
. "$(dirname "$0")/common.sh"
make_inputs
placement nocrit1 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'reward: { ranks: [0] }' \
    'generator: { ranks: [0] }'
placement nocrit3 'actor: { ranks: [0] }' 'reference: { ranks: [1] }' \
    'reward: { ranks: [1] }' 'generator: { ranks: [2] }'
set -- algorithm=grpo generation.samples_per_prompt=4 ppo.minibatches=2 \
    reward.non_stop_penalty=false ppo.initial_policy_kl_penalty=0.05 generation.temperature=0.9
run_ppo 1 nocrit1 one "$@"
run_ppo 3 nocrit3 three "$@"
"$METRICS_CHECK" lines "$WORK/one/metrics.jsonl" 3
"$METRICS_CHECK" same "$WORK/one/metrics.jsonl" "$WORK/three/metrics.jsonl"

# the group metrics of a sampled run: scores of a random reward model differ within each group
# (no non-stop penalty: 8 new tokens rarely reach a stop, and -10 for all would tie every group)
"$METRICS_CHECK" is "$WORK/one/metrics.jsonl" 0 objective/zero_std_groups 0
# step 0 with one minibatch: the ratio is exactly 1 (approxkl 0), so the policy loss is minus the
# mean advantage, and each group's advantages (r - m) / (s + eps) sum to 0: the loss is 0
run_ppo 1 nocrit1 zero algorithm=grpo generation.samples_per_prompt=4 episodes=8 \
    reward.non_stop_penalty=false ppo.loss_aggregation=sequence
"$METRICS_CHECK" is "$WORK/zero/metrics.jsonl" 0 policy/approxkl_avg 0
"$METRICS_CHECK" below "$WORK/zero/metrics.jsonl" 0 loss/policy_avg 1e-6

# token against sequence aggregation at step 0 of a run whose responses stop at different lengths
# (seed 6: two stop early): sequence weighs every response 1, so the loss, minus the mean of
# zero-sum group advantages, is 0; token weighs a response by its length, so the loss is
# -sum_b A_b len_b / sum_b len_b, which is not 0 once lengths differ within a group
for agg in token sequence; do
    run_ppo 1 nocrit1 agg_$agg algorithm=grpo generation.samples_per_prompt=4 episodes=8 seed=6 \
        reward.non_stop_penalty=false ppo.loss_aggregation=$agg
done
"$METRICS_CHECK" below "$WORK/agg_sequence/metrics.jsonl" 0 loss/policy_avg 1e-6
if "$METRICS_CHECK" below "$WORK/agg_token/metrics.jsonl" 0 loss/policy_avg 1e-3; then
    echo "FAIL: token aggregation gave the sequence loss with unequal lengths"; exit 1
fi
if "$METRICS_CHECK" is "$WORK/agg_token/metrics.jsonl" 0 val/sequence_lengths 8; then
    echo "FAIL: every response has 8 tokens: the case does not test the weights"; exit 1
fi

# greedy sampling (top_k 1): the 4 rows of a prompt, consecutive, get the same response, so
# their scores agree to float rounding (the reward model's GEMM rounds a row by its place in the
# micro batch, about 3e-8 here): the group spread is at rounding level where sampled groups
# spread by about 0.1, and the policy loss (no entropy bonus) is ~0
run_ppo 1 nocrit1 greedy algorithm=grpo generation.samples_per_prompt=4 generation.top_k=1 \
    episodes=8 reward.non_stop_penalty=false
"$METRICS_CHECK" below "$WORK/greedy/metrics.jsonl" 0 objective/group_std_mean 1e-6
"$METRICS_CHECK" below "$WORK/greedy/metrics.jsonl" 0 loss/policy_avg 1e-9
if "$METRICS_CHECK" below "$WORK/one/metrics.jsonl" 0 objective/group_std_mean 1e-3; then
    echo "FAIL: sampled groups should spread"; exit 1
fi

# rloo, the KL as a loss term (k3) and sequence aggregation: 1 and 3 ranks agree too
set -- algorithm=rloo generation.samples_per_prompt=2 ppo.kl_penalty_in=loss ppo.kl_estimator=k3 \
    reward.non_stop_penalty=false ppo.loss_aggregation=sequence
run_ppo 1 nocrit1 r1 "$@"
run_ppo 3 nocrit3 r3 "$@"
"$METRICS_CHECK" same "$WORK/r1/metrics.jsonl" "$WORK/r3/metrics.jsonl"

# a group cut between two actor ranks (n = 8 = N, each actor rank holds 4 rows): the group
# advantages and the sequence normaliser cover the whole step; a data-parallel actor rounds its
# sums in another order, so the numbers agree to 1e-3 (relative), not bit for bit
placement dp2 'actor: { ranks: [0, 1] }' 'reference: { ranks: [0] }' 'reward: { ranks: [1] }' \
    'generator: { ranks: [0] }'
set -- algorithm=rloo generation.samples_per_prompt=8 ppo.loss_aggregation=sequence \
    reward.non_stop_penalty=false episodes=16
run_ppo 1 nocrit1 d1 "$@"
run_ppo 2 dp2 d2 "$@"
"$METRICS_CHECK" same "$WORK/d1/metrics.jsonl" "$WORK/d2/metrics.jsonl" 1e-3

# bit-identical resume from step_2 of a 4-step grpo run
set -- algorithm=grpo generation.samples_per_prompt=4 episodes=32 checkpoint.every=2 \
    checkpoint.keep=0 ppo.minibatches=2 reward.non_stop_penalty=false
run_ppo 1 nocrit1 full "$@"
mkdir -p "$WORK/cut/checkpoints"
cp -r "$WORK/full/checkpoints/step_2" "$WORK/cut/checkpoints/"
cp "$WORK/full/config.yaml" "$WORK/cut/"
head -n 3 "$WORK/full/metrics.jsonl" > "$WORK/cut/metrics.jsonl"
"$MPIRUN" -np 1 "$PPO_DRIVER" "$WORK/nocrit1.yaml" "$WORK/ppo.yaml" "$WORK/cut" --resume "$@"
"$METRICS_CHECK" same "$WORK/full/metrics.jsonl" "$WORK/cut/metrics.jsonl"

# refusals, each with its message
refused() { # refused NP PLACEMENT EXPECTED-TEXT key=value...
    np=$1 pl=$2 want=$3; shift 3
    if run_ppo "$np" "$pl" bad "$@" 2> "$WORK/bad.err"; then
        echo "FAIL: ran: $*"; exit 1
    fi
    grep -qF "$want" "$WORK/bad.err" ||
        { echo "FAIL: expected '$want' in:"; cat "$WORK/bad.err"; exit 1; }
    rm -rf "$WORK/bad"
}
refused 1 nocrit1 \
    "algorithm: ppo needs a critic role, and the placement has none (algorithm: grpo or rloo trains without one)"
refused 1 single "algorithm: grpo uses no critic, but the placement has a critic role" \
    algorithm=grpo generation.samples_per_prompt=2
refused 1 nocrit1 "algorithm: grpo needs generation.samples_per_prompt >= 2 (got 1)" algorithm=grpo
refused 1 nocrit1 \
    "ppo.num_rollout_samples (8) must be a multiple of generation.samples_per_prompt (3)" algorithm=grpo \
    generation.samples_per_prompt=3
placement noref 'actor: { ranks: [0] }' 'reward: { ranks: [0] }' 'generator: { ranks: [0] }'
refused 1 noref \
    "without a reference role the KL loss must be 0 (ppo.kl_penalty_in = loss, ppo.kl_loss_coef = 0.04)" \
    algorithm=grpo generation.samples_per_prompt=2 ppo.initial_policy_kl_penalty=0 \
    ppo.kl_penalty_in=loss
echo OK
