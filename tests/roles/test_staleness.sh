#!/bin/sh
# test_staleness.sh: async.max_staleness k. Batch s is sampled with the weights of update
# max(0, s - k), and every row carries that version, so with k = 2 the staleness of step s is
# min(s, 2) (generator/staleness and its histogram). k = 2 gives the same numbers on 1, 3 and 5
# ranks, and for GRPO on two critic-free placements. Steps 0 and 1 equal those of k = 1 (the
# same batches from the same initial weights) and step 2 does not. ppo.off_policy: decoupled
# with a cap below every weight leaves every token out (policy loss 0 at every step, every token
# capped); tis keeps the mean weight within its cap and caps nothing at step 0, where the
# sampler's weights are the actor's. Two generator ranks give the numbers of one, and their
# checkpoint (whole batches in the queue file) resumes on one rank bit for bit.
. "$(dirname "$0")/common.sh"
make_inputs
placement colo 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'critic: { ranks: [1] }' \
    'reward: { ranks: [1] }' 'generator: { ranks: [2] }'
placement crit_free 'actor: { ranks: [0] }' 'reference: { ranks: [1] }' 'reward: { ranks: [1] }' \
    'generator: { ranks: [2] }'
placement crit_free_one 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' \
    'reward: { ranks: [0] }' 'generator: { ranks: [0] }'
set -- episodes=40 ppo.initial_policy_kl_penalty=0.05
run_ppo 5 five k2 async.max_staleness=2 "$@"
run_ppo 3 colo k2_colo async.max_staleness=2 "$@"
run_ppo 1 single k2_one async.max_staleness=2 "$@"
run_ppo 5 five k1 async.max_staleness=1 "$@"
"$METRICS_CHECK" lines "$WORK/k2/metrics.jsonl" 5
"$METRICS_CHECK" same "$WORK/k2/metrics.jsonl" "$WORK/k2_colo/metrics.jsonl"
"$METRICS_CHECK" same "$WORK/k2/metrics.jsonl" "$WORK/k2_one/metrics.jsonl"
step=0
for lag in 0 1 2 2 2; do
    "$METRICS_CHECK" is "$WORK/k2/metrics.jsonl" $step generator/staleness $lag
    "$METRICS_CHECK" is "$WORK/k2/metrics.jsonl" $step generator/staleness_hist/$lag 1
    step=$((step + 1))
done
# k = 1 and k = 2 without the histogram (k = 2 has one bin more): equal up to step 1, not at 2
for k in 1 2; do
    sed 's/"generator\/staleness_hist\/[0-9]*":[^,]*,//g' "$WORK/k$k/metrics.jsonl" > "$WORK/k$k.jsonl"
    head -n 2 "$WORK/k$k.jsonl" > "$WORK/k${k}_01.jsonl"
    sed -n 3p "$WORK/k$k.jsonl" > "$WORK/k${k}_2.jsonl"
done
"$METRICS_CHECK" same "$WORK/k1_01.jsonl" "$WORK/k2_01.jsonl"
if "$METRICS_CHECK" same "$WORK/k1_2.jsonl" "$WORK/k2_2.jsonl" > /dev/null 2>&1; then
    echo "FAIL: step 2 of k = 2 equals that of k = 1 (its batch came from other weights)"; exit 1
fi

set -- "$@" algorithm=grpo generation.samples_per_prompt=4 async.max_staleness=2
run_ppo 3 crit_free grpo3 "$@"
run_ppo 1 crit_free_one grpo1 "$@"
"$METRICS_CHECK" same "$WORK/grpo3/metrics.jsonl" "$WORK/grpo1/metrics.jsonl"
"$METRICS_CHECK" is "$WORK/grpo3/metrics.jsonl" 4 generator/staleness 2

set -- episodes=40 ppo.initial_policy_kl_penalty=0.05 async.max_staleness=2 ppo.entropy_bonus=0
run_ppo 5 five dec "$@" ppo.off_policy=decoupled ppo.tis_cap=1e-6
run_ppo 5 five tis "$@" ppo.off_policy=tis ppo.tis_cap=1.05
for step in 0 1 2 3 4; do
    "$METRICS_CHECK" is "$WORK/dec/metrics.jsonl" $step loss/policy_avg 0
    "$METRICS_CHECK" is "$WORK/dec/metrics.jsonl" $step objective/is_capped_frac 1
    "$METRICS_CHECK" is "$WORK/dec/metrics.jsonl" $step objective/is_weight_mean 0
    "$METRICS_CHECK" below "$WORK/tis/metrics.jsonl" $step objective/is_weight_mean 1.05
done
"$METRICS_CHECK" is "$WORK/tis/metrics.jsonl" 0 objective/is_capped_frac 0
"$METRICS_CHECK" below "$WORK/tis/metrics.jsonl" 0 generator/logprob_diff 1e-4
# two generator ranks (each samples half of every batch, and the checkpoint gathers whole
# batches): the numbers of one rank, and a resume from step_2 on one rank continues bit for bit
placement gen2 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'critic: { ranks: [1] }' \
    'reward: { ranks: [1] }' 'generator: { ranks: [2, 3] }'
set -- episodes=32 checkpoint.every=2 checkpoint.keep=0 async.max_staleness=2 eval.every=2 \
    eval.num_prompts=4
run_ppo 4 gen2 g2 "$@"
run_ppo 1 single g1 "$@"
"$METRICS_CHECK" same "$WORK/g2/metrics.jsonl" "$WORK/g1/metrics.jsonl"
"$METRICS_CHECK" same "$WORK/g2/eval.jsonl" "$WORK/g1/eval.jsonl"
mkdir -p "$WORK/cut/checkpoints"
cp -r "$WORK/g2/checkpoints/step_2" "$WORK/cut/checkpoints/"
cp "$WORK/g2/config.yaml" "$WORK/cut/"
head -n 3 "$WORK/g2/metrics.jsonl" > "$WORK/cut/metrics.jsonl"
head -n 2 "$WORK/g2/eval.jsonl" > "$WORK/cut/eval.jsonl"
"$MPIRUN" -np 1 "$PPO_DRIVER" "$WORK/single.yaml" "$WORK/ppo.yaml" "$WORK/cut" --resume "$@"
"$METRICS_CHECK" same "$WORK/g2/metrics.jsonl" "$WORK/cut/metrics.jsonl"
"$METRICS_CHECK" same "$WORK/g2/eval.jsonl" "$WORK/cut/eval.jsonl"
echo "staleness: ok"
