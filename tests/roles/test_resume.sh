#!/bin/sh
# test_resume.sh: checkpoints/step_N hold actor and critic weights with their AdamW moments
# (and the generator's in async mode) and the run state; --resume from step_2 of a 4-step run
# gives the metrics of the run that was never interrupted, bit for bit, in sync and async mode.
# checkpoint.keep prunes older checkpoints; a changed configuration or no checkpoint is refused.
. "$(dirname "$0")/common.sh"
make_inputs
for mode in false true; do
    set -- episodes=32 checkpoint.every=2 checkpoint.keep=0 ppo.minibatches=2 \
        ppo.initial_policy_kl_penalty=0.05 reward.normalize=true async=$mode
    run_ppo 5 five "full_$mode" "$@"
    for s in 2 4; do
        for f in actor/model.safetensors actor/optimizer.safetensors critic/model.safetensors \
                 critic/optimizer.safetensors state.json; do
            test -f "$WORK/full_$mode/checkpoints/step_$s/$f" || { echo "FAIL: no step_$s/$f"; exit 1; }
        done
    done
    # the interrupted run: only step_2 survived, and the metrics of steps 0..2 (one too many)
    mkdir -p "$WORK/cut_$mode/checkpoints"
    cp -r "$WORK/full_$mode/checkpoints/step_2" "$WORK/cut_$mode/checkpoints/"
    cp "$WORK/full_$mode/config.yaml" "$WORK/cut_$mode/"
    head -n 3 "$WORK/full_$mode/metrics.jsonl" > "$WORK/cut_$mode/metrics.jsonl"
    "$MPIRUN" -np 5 "$PPO_DRIVER" "$WORK/five.yaml" "$WORK/ppo.yaml" "$WORK/cut_$mode" --resume "$@"
    "$METRICS_CHECK" same "$WORK/full_$mode/metrics.jsonl" "$WORK/cut_$mode/metrics.jsonl"
done

run_ppo 1 single keep episodes=32 checkpoint.every=1 checkpoint.keep=2
ls "$WORK/keep/checkpoints"
test "$(ls "$WORK/keep/checkpoints")" = "$(printf 'step_3\nstep_4')" || { echo "FAIL: keep"; exit 1; }

if "$MPIRUN" -np 1 "$PPO_DRIVER" "$WORK/single.yaml" "$WORK/ppo.yaml" "$WORK/keep" --resume \
    episodes=32 checkpoint.every=1 checkpoint.keep=2 optim.lr=0.5 2> "$WORK/changed.err"; then
    echo "FAIL: resume with a changed configuration ran"; exit 1
fi
grep -q "optim.lr" "$WORK/changed.err" || { cat "$WORK/changed.err"; echo "FAIL: no key named"; exit 1; }
if "$MPIRUN" -np 1 "$PPO_DRIVER" "$WORK/single.yaml" "$WORK/ppo.yaml" "$WORK/none" --resume \
    2> "$WORK/none.err"; then
    echo "FAIL: resume without a checkpoint ran"; exit 1
fi
grep -q "no complete checkpoint" "$WORK/none.err" || { cat "$WORK/none.err"; exit 1; }
echo "resume: ok"
