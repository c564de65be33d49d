#!/bin/sh
# test_resume.sh: checkpoints/step_N hold actor and critic weights with their AdamW moments
# (and in async mode the generator's queue of batches sampled ahead) and the run state; --resume
# from step_2 of a 4-step run gives the metrics of the run that was never interrupted, bit for
# bit, in sync mode and with async.max_staleness 1 and 2 (a queue of two batches), and at bf16
# with the moments offloaded. Each run writes TensorBoard events too (log.tensorboard): the
# uninterrupted run's and the resumed run's, whose second file hides the first file's steps past
# the checkpoint, hold exactly the numbers of their metrics.jsonl and eval.jsonl (tb_check).
# checkpoint.keep prunes older checkpoints; a changed configuration, no checkpoint, or a state.json
# this run could not have written is refused, naming the file and the field; keys that change no
# number (runtime time limits, progress, tracing) may differ.
. "$(dirname "$0")/common.sh"
make_inputs
# (the Llama pass runs sync and k = 2 only: k = 1 is a queue of one batch, the mechanism is the same)
modes="0 1 2"; [ -n "${TINY_FAMILY:-}" ] && modes="0 2"
# resume_check NAME K ARGS...: the 4-step run at staleness K against the one resumed from step_2
resume_check() {
    mode=$1 k=$2
    shift 2
    set -- episodes=32 checkpoint.every=2 checkpoint.keep=0 ppo.minibatches=2 \
        ppo.initial_policy_kl_penalty=0.05 reward.normalize=true async.max_staleness=$k \
        log.tensorboard=true "$@"
    run_ppo 5 five "full_$mode" "$@"
    "$TB_CHECK" "$WORK/full_$mode" 1
    for s in 2 4; do
        for f in actor/model.safetensors actor/optimizer.safetensors critic/model.safetensors \
                 critic/optimizer.safetensors state.json; do
            test -f "$WORK/full_$mode/checkpoints/step_$s/$f" || { echo "FAIL: no step_$s/$f"; exit 1; }
        done
        q="$WORK/full_$mode/checkpoints/step_$s/generator/queue.safetensors"
        if [ "$k" = 0 ] && [ -e "$q" ]; then echo "FAIL: a sync checkpoint has a queue"; exit 1; fi
        if [ "$k" != 0 ] && ! [ -f "$q" ]; then echo "FAIL: no step_$s queue"; exit 1; fi
    done
    # the interrupted run: only step_2 survived, and the metrics of steps 0..2 (one too many)
    mkdir -p "$WORK/cut_$mode/checkpoints"
    cp -r "$WORK/full_$mode/checkpoints/step_2" "$WORK/cut_$mode/checkpoints/"
    cp "$WORK/full_$mode/config.yaml" "$WORK/cut_$mode/"
    head -n 3 "$WORK/full_$mode/metrics.jsonl" > "$WORK/cut_$mode/metrics.jsonl"
    cp "$WORK/full_$mode/eval.jsonl" "$WORK/cut_$mode/"
    cp -r "$WORK/full_$mode/tensorboard" "$WORK/cut_$mode/" # its steps 3 and 4 are hidden
    cp "$WORK/full_$mode/devices.txt" "$WORK/cut_$mode/"
    # keys that change no number may differ on resume (a trace of the rest, other time limits)
    "$MPIRUN" -np 5 "$PPO_DRIVER" "$WORK/five.yaml" "$WORK/ppo.yaml" "$WORK/cut_$mode" --resume "$@" \
        "trace.path=$WORK/cut_$mode/trace.json" trace.steps=1 runtime.progress_s=0 \
        runtime.timeout_s=120 runtime.heartbeat_s=5
    test -s "$WORK/cut_$mode/trace.json" || { echo "FAIL: no trace of the resumed run"; exit 1; }
    "$METRICS_CHECK" same "$WORK/full_$mode/metrics.jsonl" "$WORK/cut_$mode/metrics.jsonl"
    "$TB_CHECK" "$WORK/cut_$mode" 2
    # devices.txt: the start's report, then the resumption's under its own line
    heads=$(grep '^# ' "$WORK/cut_$mode/devices.txt" |
        sed -E 's/^# (started|resumed at step [0-9]+)[ ,].*/\1/' | tr '\n' '|')
    [ "$heads" = "started|resumed at step 2|" ] &&
        [ "$(grep -c '^CPU: .*; BLAS: ' "$WORK/cut_$mode/devices.txt")" = 2 ] ||
        { cat "$WORK/cut_$mode/devices.txt"; echo "FAIL: devices.txt after resuming"; exit 1; }
}
for mode in $modes; do resume_check "$mode" "$mode"; done
# bf16 products with the moments offloaded between updates: the checkpoint holds all the run
# needs there too (on a GPU the moments come back from the host to be saved; here they never
# leave)
resume_check bf16 1 model.precision=bf16 optim.offload_adam_states=true
# the checks below resume full_2's checkpoint with its configuration
set -- episodes=32 checkpoint.every=2 checkpoint.keep=0 ppo.minibatches=2 \
    ppo.initial_policy_kl_penalty=0.05 reward.normalize=true async.max_staleness=2
# an async checkpoint without the generator's queue: refused, naming the file
mkdir -p "$WORK/noq/checkpoints"
cp -r "$WORK/full_2/checkpoints/step_2" "$WORK/noq/checkpoints/"
cp "$WORK/full_2/config.yaml" "$WORK/noq/"
rm "$WORK/noq/checkpoints/step_2/generator/queue.safetensors"
if "$MPIRUN" -np 5 "$PPO_DRIVER" "$WORK/five.yaml" "$WORK/ppo.yaml" "$WORK/noq" --resume "$@" \
    2> "$WORK/noq.err"; then
    echo "FAIL: resumed an async run without its queue"; exit 1
fi
grep -q "step_2/generator/queue.safetensors.*an async run's checkpoint holds the generator's queue" \
    "$WORK/noq.err" || { cat "$WORK/noq.err"; echo "FAIL: no queue message"; exit 1; }

run_ppo 1 single keep episodes=32 checkpoint.every=1 checkpoint.keep=2
ls "$WORK/keep/checkpoints"
test "$(ls "$WORK/keep/checkpoints")" = "$(printf 'step_3\nstep_4')" || { echo "FAIL: keep"; exit 1; }

# The refusals below run one rank without mpirun (Open MPI's singleton start: 0.5 s a run instead
# of 2.5, and they never get as far as a step); the runs that train go through mpirun.
if "$PPO_DRIVER" "$WORK/single.yaml" "$WORK/ppo.yaml" "$WORK/keep" --resume \
    episodes=32 checkpoint.every=1 checkpoint.keep=2 optim.lr=0.5 2> "$WORK/changed.err"; then
    echo "FAIL: resume with a changed configuration ran"; exit 1
fi
grep -q "optim.lr" "$WORK/changed.err" || { cat "$WORK/changed.err"; echo "FAIL: no key named"; exit 1; }
if "$PPO_DRIVER" "$WORK/single.yaml" "$WORK/ppo.yaml" "$WORK/none" --resume \
    2> "$WORK/none.err"; then
    echo "FAIL: resume without a checkpoint ran"; exit 1
fi
grep -q "no complete checkpoint" "$WORK/none.err" || { cat "$WORK/none.err"; exit 1; }
# bad_state NAME SED PATTERN: a copy of the keep run whose newest state.json (step_4 of 4 steps,
# one optimizer step each) is edited by SED; --resume refuses it with PATTERN.
bad_state() {
    cp -r "$WORK/keep" "$WORK/$1"
    sed -i "$2" "$WORK/$1/checkpoints/step_4/state.json"
    if "$PPO_DRIVER" "$WORK/single.yaml" "$WORK/ppo.yaml" "$WORK/$1" --resume \
        episodes=32 checkpoint.every=1 checkpoint.keep=2 2> "$WORK/$1.err"; then
        echo "FAIL $1: resumed from a bad state"; exit 1
    fi
    grep -q "$3" "$WORK/$1.err" || { cat "$WORK/$1.err"; echo "FAIL $1: no '$3'"; exit 1; }
    echo "ok $1: $(grep -m1 'state.json' "$WORK/$1.err")"
}
bad_state neg_opt 's/"opt_step": 4/"opt_step": -5/' \
    'step_4/state.json: opt_step -5: expected 4 (step 4 x ppo.epochs 1 x ppo.minibatches 1)'
bad_state big_opt 's/"opt_step": 4/"opt_step": 99999999999/' \
    'step_4/state.json: opt_step 99999999999: expected 4'
bad_state no_beta '/"beta"/d' 'step_4/state.json: not a checkpoint state (no field "beta")'
bad_state typo 's/"beta"/"betta"/' 'step_4/state.json: not a checkpoint state (unknown field "betta"'
bad_state real_step 's/"step": 4/"step": 4.0/' \
    'step_4/state.json: not a checkpoint state (field "step" must be an integer)'
bad_state beta 's/"beta": [0-9.e+-]*/"beta": 0.7/' 'step_4/state.json: beta 0.69999999999999996: expected'
bad_state count '/"running"/{n;s/0\.0/3.0/}' 'step_4/state.json: running count 3: expected 0'
bad_state twice 's/"step": 4,/"step": 4, "step": 4,/' 'step_4/state.json:.*duplicate'
cp -r "$WORK/keep" "$WORK/past"
mv "$WORK/past/checkpoints/step_4" "$WORK/past/checkpoints/step_9"
sed -i 's/"step": 4/"step": 9/' "$WORK/past/checkpoints/step_9/state.json"
if "$PPO_DRIVER" "$WORK/single.yaml" "$WORK/ppo.yaml" "$WORK/past" --resume \
    episodes=32 checkpoint.every=1 checkpoint.keep=2 2> "$WORK/past.err"; then
    echo "FAIL past: resumed from a step past the run's last"; exit 1
fi
grep -q "step_9/state.json: step 9: expected 9, the folder's step, within the run's 1..4 steps" \
    "$WORK/past.err" || { cat "$WORK/past.err"; echo "FAIL past"; exit 1; }
# the state as written resumes (no step is left to run)
"$MPIRUN" -np 1 "$PPO_DRIVER" "$WORK/single.yaml" "$WORK/ppo.yaml" "$WORK/keep" --resume \
    episodes=32 checkpoint.every=1 checkpoint.keep=2
echo "resume: ok"
