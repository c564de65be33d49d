#!/bin/sh
# test_nonfinite.sh: a run whose losses, gradients or weights turn NaN or infinite never ends
# quietly. With runtime.on_nonfinite: stop (the default) the job ends non-zero within seconds,
# on three ranks with two-rank actor and critic roles, with a message naming the step and the
# quantity, and no checkpoint or metrics line comes after the bad step. With skip_step the bad
# updates are dropped, said and counted, the weights stay as they were, and too many skips in a
# row stop the run.
. "$(dirname "$0")/common.sh"
make_inputs
placement three 'actor: { ranks: [0, 1] }' 'reference: { ranks: [2] }' \
    'generator: { ranks: [2] }' 'critic: { ranks: [1, 2] }' 'reward: { ranks: [0] }'

# diverge NAME KEEP PATTERN [key=value ...]: the job fails (not by the time limit) with PATTERN
# on stderr; the run folder holds checkpoints step_1..step_KEEP only and KEEP metrics lines.
diverge() {
    name=$1 keep=$2 pattern=$3; shift 3
    rc=0
    timeout 60 "$MPIRUN" -np 3 "$PPO_DRIVER" "$WORK/three.yaml" "$WORK/ppo.yaml" "$WORK/$name" \
        checkpoint.every=1 checkpoint.keep=0 "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" || rc=$?
    if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
        echo "FAIL $name: exit status $rc (0: a diverged run succeeded; 124: it hung)"
        cat "$WORK/$name.err"; exit 1
    fi
    if ! grep -q -- "$pattern" "$WORK/$name.err"; then
        echo "FAIL $name: no '$pattern' on stderr"; cat "$WORK/$name.err"; exit 1
    fi
    want=""
    for s in $(seq 1 "$keep"); do want="$want step_$s"; done
    got=$(ls "$WORK/$name/checkpoints" 2> /dev/null | sort -t_ -k2 -n | tr '\n' ' ')
    if [ "$(echo $got)" != "$(echo $want)" ]; then
        echo "FAIL $name: checkpoints '$got', expected '$want'"; exit 1
    fi
    for s in $(seq 1 "$keep"); do
        test -f "$WORK/$name/checkpoints/step_$s/state.json" ||
            { echo "FAIL $name: step_$s is incomplete"; exit 1; }
    done
    lines=$(cat "$WORK/$name/metrics.jsonl" 2> /dev/null | wc -l)
    [ "$lines" -eq "$keep" ] || { echo "FAIL $name: $lines metrics lines, expected $keep"; exit 1; }
    echo "ok $name: exit $rc: $(grep -m1 -o -- "$pattern.*" "$WORK/$name.err" | cut -c1-220)"
}

# The learning rate warms up from 0, so step 0 changes nothing and its checkpoint is good; the
# first real update (1e30 / 2) at step 1 makes the weights 5e29.
diverge lr 1 "step 1: actor weights went bad in optimiser step 2 (epoch 0 minibatch 0, learning rate 5e+29): parameter tensor \"wte\"" \
    optim.lr=1e30 optim.warmup_steps=2
"$METRICS_CHECK" lines "$WORK/lr/metrics.jsonl" 1
# The good checkpoint loads (its weights are checked on load) and the resumed run stops alike.
rc=0
timeout 60 "$MPIRUN" -np 3 "$PPO_DRIVER" "$WORK/three.yaml" "$WORK/ppo.yaml" "$WORK/lr" --resume \
    checkpoint.every=1 checkpoint.keep=0 optim.lr=1e30 optim.warmup_steps=2 2> "$WORK/resume.err" ||
    rc=$?
grep -q "step 1: actor weights went bad in optimiser step 2" "$WORK/resume.err" && [ $rc -ne 0 ] ||
    { echo "FAIL resume from the last good checkpoint (exit $rc)"; cat "$WORK/resume.err"; exit 1; }
echo "ok resume: the step_1 checkpoint loaded and step 1 stopped again"

diverge critic_lr 0 "step 0: critic weights went bad in optimiser step 1" critic.lr=1e30
diverge weight_decay 0 "step 0: actor weights went bad in optimiser step 1" \
    optim.weight_decay=1e30
# float32 rounds 1e-320 to 0: 0 / (sqrt(0) + 0) for every exactly-zero gradient
diverge eps 0 "step 0: actor weights went bad in optimiser step 1 .*is NaN" optim.eps=1e-320
# a response without the stop token scores -1e308, which is -inf in float32
diverge penalty 0 "step 0: actor loss is NaN (the clipped policy loss of epoch 0 minibatch 0, optimiser step 1; this step's objective/scores is -inf" \
    reward.penalty_reward_value=-1e308

# skip_step: every update of the run is dropped (actor and critic, one each per step); the run
# ends normally, its metrics say so, and the actor's checkpoint is the SFT model byte for byte.
run_ppo 3 three skip reward.penalty_reward_value=-1e308 runtime.on_nonfinite=skip_step \
    runtime.max_skipped_steps=100 2> "$WORK/skip.err"
for line in 0 1 2; do
    "$METRICS_CHECK" is "$WORK/skip/metrics.jsonl" $line runtime/skipped_steps 2
    "$METRICS_CHECK" is "$WORK/skip/metrics.jsonl" $line loss/policy_avg nan
done
"$METRICS_CHECK" is "$WORK/skip/metrics.jsonl" 0 objective/scores -inf
n=$(grep -c "actor loss is NaN .* the update is skipped (runtime.on_nonfinite is skip_step)" \
    "$WORK/skip.err" || true)
[ "$n" -eq 3 ] || { echo "FAIL skip: $n skipped actor updates said, expected 3"; cat "$WORK/skip.err"; exit 1; }
cmp "$WORK/sft/model.safetensors" "$WORK/skip/checkpoints/step_3/actor/model.safetensors" ||
    { echo "FAIL skip: the actor's weights moved"; exit 1; }
echo "ok skip: 3 steps, every update skipped and counted, the actor unchanged"

# ... but not forever: the second skipped update in a row stops the run
diverge skip_limit 1 "step 1: actor loss is NaN .*stopping: 2 optimiser steps in a row were skipped (runtime.max_skipped_steps)" \
    reward.penalty_reward_value=-1e308 runtime.on_nonfinite=skip_step runtime.max_skipped_steps=2
