#!/bin/sh
# test_zero.sh: optim.zero_stage 1 (docs/model.md, The optimiser's share). With the actor on two
# ranks and the critic on two (one rank holding both), each rank keeping the AdamW moments of its
# block of the weights (at bf16 its block's float32 weights too) and an all-gather handing out the
# updated weights, every number of 4 steps is the run's with whole moments on every rank, bit for
# bit, at fp32, at bf16 and in async mode (at bf16); so are the checkpoints' weights and moments,
# byte for byte, gathered whole from the shares; and a run resumed from step_2 with the other
# setting, either way, gives the uninterrupted run's metrics. Also with four ranks in every role
# and the gradients in 1 KiB buckets, at fp32 and at bf16.
. "$(dirname "$0")/common.sh"
make_inputs
placement dp 'actor: { ranks: [0, 1] }' 'reference: { ranks: [2] }' 'critic: { ranks: [1, 3] }' \
    'reward: { ranks: [2, 3] }' 'generator: { ranks: [4] }'
set -- episodes=32 checkpoint.every=2 checkpoint.keep=0 ppo.minibatches=2 \
    ppo.initial_policy_kl_penalty=0.05
run_ppo 5 dp z0 "$@" optim.zero_stage=0
run_ppo 5 dp z1 "$@" optim.zero_stage=1
"$METRICS_CHECK" lines "$WORK/z1/metrics.jsonl" 4
"$METRICS_CHECK" same "$WORK/z0/metrics.jsonl" "$WORK/z1/metrics.jsonl"
same_checkpoints() { # same_checkpoints PREFIX: PREFIX0's and PREFIX1's, byte for byte
    for s in 2 4; do
        for f in actor/optimizer.safetensors critic/optimizer.safetensors \
                 actor/model.safetensors critic/model.safetensors; do
            cmp "$WORK/${1}0/checkpoints/step_$s/$f" "$WORK/${1}1/checkpoints/step_$s/$f" ||
                { echo "FAIL: $1: step_$s/$f differs with optim.zero_stage 1"; exit 1; }
        done
    done
}
same_checkpoints z
# at bf16 the float32 weights of the layers' matrices are split too: each rank keeps its share's
# and the bfloat16 copy of all, which the all-gather hands out. The forwards and the weights
# packed for the generator see the same numbers, the checkpoints (the float32 weights gathered
# whole) are the same files, and a resume with the other stage either way goes on as before
run_ppo 5 dp h0 "$@" model.precision=bf16
run_ppo 5 dp h1 "$@" model.precision=bf16 optim.zero_stage=1
"$METRICS_CHECK" same "$WORK/h0/metrics.jsonl" "$WORK/h1/metrics.jsonl"
same_checkpoints h
resume_other() { # resume_other PREFIX FROM TO KEY=VALUE...: run PREFIXFROM's step_2 at stage TO
    pre=$1 from=$2 to=$3
    shift 3
    cut="$WORK/cut$pre$from"
    mkdir -p "$cut/checkpoints"
    cp -r "$WORK/$pre$from/checkpoints/step_2" "$cut/checkpoints/"
    cp "$WORK/$pre$from/config.yaml" "$WORK/$pre$from/eval.jsonl" "$cut/"
    head -n 3 "$WORK/$pre$from/metrics.jsonl" > "$cut/metrics.jsonl"
    "$MPIRUN" -np 5 "$PPO_DRIVER" "$WORK/dp.yaml" "$WORK/ppo.yaml" "$cut" --resume "$@" \
        optim.zero_stage=$to
    "$METRICS_CHECK" same "$WORK/${pre}0/metrics.jsonl" "$cut/metrics.jsonl"
}
resume_other h 1 0 "$@" model.precision=bf16
resume_other h 0 1 "$@" model.precision=bf16
# async (the actor's weights to the generator carried into the next step), at bf16: the same
run_ppo 5 dp a0 "$@" async.max_staleness=1 checkpoint.every=0 model.precision=bf16
run_ppo 5 dp a1 "$@" async.max_staleness=1 checkpoint.every=0 model.precision=bf16 \
    optim.zero_stage=1
"$METRICS_CHECK" same "$WORK/a0/metrics.jsonl" "$WORK/a1/metrics.jsonl"
# resumed from step_2 with the other stage: the moments file is the same either way
resume_other z 0 1 "$@"
resume_other z 1 0 "$@"
# four ranks a role, the gradients in 1 KiB buckets
placement wide 'actor: { ranks: [0, 1, 2, 3] }' 'reference: { ranks: [0, 1, 2, 3] }' \
    'critic: { ranks: [0, 1, 2, 3] }' 'reward: { ranks: [0, 1, 2, 3] }'
set -- ppo.num_rollout_samples=4 episodes=12 ppo.rollout_micro_batch_size=1 \
    runtime.grad_bucket_mb=0.001
run_ppo 4 wide w0 "$@"
run_ppo 4 wide w1 "$@" optim.zero_stage=1
"$METRICS_CHECK" lines "$WORK/w1/metrics.jsonl" 3
"$METRICS_CHECK" same "$WORK/w0/metrics.jsonl" "$WORK/w1/metrics.jsonl"
run_ppo 4 wide v0 "$@" model.precision=bf16
run_ppo 4 wide v1 "$@" model.precision=bf16 optim.zero_stage=1
"$METRICS_CHECK" same "$WORK/v0/metrics.jsonl" "$WORK/v1/metrics.jsonl"
echo "PASS"
