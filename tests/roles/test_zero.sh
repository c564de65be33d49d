#!/bin/sh
# test_zero.sh: optim.zero_stage 1 (docs/model.md, The optimiser's share). With the actor on two
# ranks and the critic on two (one rank holding both), each rank keeping the AdamW moments of its
# block of the weights (at bf16 its block's float32 weights too) and an all-gather handing out the
# updated weights, every number of 4 steps is the run's with whole moments on every rank, bit for
# bit, at fp32, at bf16 and in async mode (at bf16); so are the checkpoints' weights and moments,
# byte for byte, written from the shares (the moments as they are gathered); and a run resumed
# from step_2 with the other setting, either way, gives the uninterrupted run's metrics. Also
# with four ranks in every role and the gradients in 1 KiB buckets, at fp32 and at bf16.
# optim.zero_stage 2 (the gradients split too) likewise, and within tolerances with three actor
# ranks of uneven micro batches.
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
same_checkpoints() { # same_checkpoints PREFIX [STAGE]: PREFIX0's and PREFIX<STAGE>'s (1), byte
    z=${2:-1}       # for byte
    for s in 2 4; do
        for f in actor/optimizer.safetensors critic/optimizer.safetensors \
                 actor/model.safetensors critic/model.safetensors; do
            cmp "$WORK/${1}0/checkpoints/step_$s/$f" "$WORK/${1}$z/checkpoints/step_$s/$f" ||
                { echo "FAIL: $1: step_$s/$f differs with optim.zero_stage $z"; exit 1; }
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
    cut="$WORK/cut$pre$from$to"
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
# optim.zero_stage 2: the gradients split too, each backward summing each layer's into the
# owners' blocks (docs/model.md, Gradients in shares). With two ranks a role every sum is a + b:
# stage 0's metrics and checkpoints bit for bit and byte for byte, at fp32, at bf16 and in async
# mode, and a resume from step_2 with stage 2 or from stage 2 goes on as before.
set -- episodes=32 checkpoint.every=2 checkpoint.keep=0 ppo.minibatches=2 \
    ppo.initial_policy_kl_penalty=0.05
run_ppo 5 dp z2 "$@" optim.zero_stage=2
"$METRICS_CHECK" same "$WORK/z0/metrics.jsonl" "$WORK/z2/metrics.jsonl"
same_checkpoints z 2
run_ppo 5 dp h2 "$@" model.precision=bf16 optim.zero_stage=2
"$METRICS_CHECK" same "$WORK/h0/metrics.jsonl" "$WORK/h2/metrics.jsonl"
same_checkpoints h 2
resume_other h 2 0 "$@" model.precision=bf16
resume_other z 0 2 "$@"
run_ppo 5 dp a2 "$@" async.max_staleness=1 checkpoint.every=0 model.precision=bf16 \
    optim.zero_stage=2
"$METRICS_CHECK" same "$WORK/a0/metrics.jsonl" "$WORK/a2/metrics.jsonl"
# three actor ranks and micro batches of one row: in a minibatch one rank runs fewer backwards
# and makes up the rest with backwards of nothing; three ranks' sums and the micro batches'
# add in another order than stage 1's, hence a tolerance (the largest difference measured, of
# max(1, |value|): 1.8e-7 at fp32, 3.4e-9 at bf16)
placement three 'actor: { ranks: [0, 1, 2] }' 'reference: { ranks: [0] }' \
    'critic: { ranks: [1, 2] }' 'reward: { ranks: [0] }' 'generator: { ranks: [0] }'
set -- episodes=32 ppo.minibatches=2 ppo.micro_batch_size=1 checkpoint.every=0
run_ppo 3 three u1 "$@" optim.zero_stage=1
run_ppo 3 three u2 "$@" optim.zero_stage=2
"$METRICS_CHECK" same "$WORK/u1/metrics.jsonl" "$WORK/u2/metrics.jsonl" 1e-5
run_ppo 3 three b1 "$@" optim.zero_stage=1 model.precision=bf16
run_ppo 3 three b2 "$@" optim.zero_stage=2 model.precision=bf16
"$METRICS_CHECK" same "$WORK/b1/metrics.jsonl" "$WORK/b2/metrics.jsonl" 1e-5
echo "PASS"
