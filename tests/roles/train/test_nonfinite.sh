#!/bin/bash
# test_nonfinite.sh: `ppo_world sft` and `rm` never end a diverged run quietly. A NaN loss (a
# model whose weights are all 1e15: valid, but its forward overflows float32) or weights gone
# bad (optim.lr=1e30) stop both ranks with exit 1, a message naming the step and the quantity,
# and nothing saved over the model already in --out; runtime.on_nonfinite: skip_step drops such
# steps, counts them in the metrics, and stops after runtime.max_skipped_steps in a row.
. "$(dirname "$0")/common.sh"
: "${MAKE_TINY:?}"
make_sft "$WORK/sft_train.jsonl" 100 1
make_prefs "$WORK/prefs_train.jsonl" 40 1
"$MAKE_TINY" model "$WORK/lm_1e15" 1 259 fill=1e15
"$MAKE_TINY" model "$WORK/rm_1e15" 1 259 score fill=1e15

# diverge NAME MODE PATTERN [key=value ...]: two ranks write into $WORK/NAME, which holds a good
# model beforehand; the job exits non-zero (not by the time limit) with PATTERN on stderr and
# leaves that model as it was.
diverge() {
    name=$1 mode=$2 pattern=$3; shift 3
    "$PPO_WORLD" $mode --out "$WORK/$name" "data.dir=$WORK" train.steps=2 train.batch_size=4 \
        > /dev/null || fail "$name: the good run before failed"
    cp "$WORK/$name/model.safetensors" "$WORK/$name.good"
    rc=0
    timeout 60 "$MPIRUN" -np 2 "$PPO_WORLD" $mode --out "$WORK/$name" "data.dir=$WORK" \
        train.steps=6 train.batch_size=4 eval.every=2 "$@" > "$WORK/$name.out" \
        2> "$WORK/$name.err" || rc=$?
    [ $rc -eq 124 ] && { cat "$WORK/$name.err"; fail "$name: hung (killed by timeout)"; }
    [ $rc -ne 0 ] || { cat "$WORK/$name.err"; fail "$name: exit 0"; }
    grep -q -- "$pattern" "$WORK/$name.err" || { cat "$WORK/$name.err"; fail "$name: no '$pattern'"; }
    grep -q "done:" "$WORK/$name.out" && fail "$name: a final line after stopping"
    cmp -s "$WORK/$name/model.safetensors" "$WORK/$name.good" ||
        fail "$name: the good model in --out was overwritten"
    echo "ok $name: exit $rc: $(grep -m1 -o -- "$pattern.*" "$WORK/$name.err" | cut -c1-200)"
}

diverge sft_nan sft "ppo_world sft: step 1: the loss is NaN (the mean next-token loss of the global batch); stopping without saving: runtime.on_nonfinite is stop" \
    "model.init=$WORK/lm_1e15"
diverge rm_nan rm "ppo_world rm: step 1: the loss is NaN (the Bradley-Terry loss of the global batch); stopping without saving" \
    "model.init=$WORK/rm_1e15"
# the warm-up makes step 1's learning rate 0: step 2 is the first real update
diverge sft_lr sft "ppo_world sft: step 2: the weights went bad in the update (learning rate 2e+29): parameter tensor \"wte\"" \
    optim.lr=1e30 optim.warmup_steps=5
diverge rm_lr rm "ppo_world rm: step 2: the weights went bad in the update" optim.lr=1e30 \
    optim.warmup_steps=5 runtime.on_nonfinite=skip_step
diverge sft_limit sft "ppo_world sft: step 3: the loss is NaN .*stopping without saving: 3 steps in a row were skipped (runtime.max_skipped_steps)" \
    "model.init=$WORK/lm_1e15" runtime.on_nonfinite=skip_step runtime.max_skipped_steps=3

# skip_step: every step is dropped and said; the run ends normally, its metrics count the skips
# and write the NaN losses as "nan" (the initial line: a validation loss that is NaN, and null
# for what does not exist yet).
"$MPIRUN" -np 2 "$PPO_WORLD" sft --out "$WORK/skip" "data.dir=$WORK" train.steps=4 \
    train.batch_size=4 eval.every=2 "model.init=$WORK/lm_1e15" runtime.on_nonfinite=skip_step \
    > "$WORK/skip.out" 2> "$WORK/skip.err" || { cat "$WORK/skip.err"; fail "skip: exit $?"; }
n=$(grep -c "the update is skipped (runtime.on_nonfinite is skip_step)" "$WORK/skip.err")
[ "$n" -eq 4 ] || { cat "$WORK/skip.err"; fail "skip: $n skipped steps said, expected 4"; }
head -n 1 "$WORK/skip/metrics.jsonl" | grep -qF '"train/loss": null, "valid/loss": "nan"' ||
    fail "skip: initial line $(head -n 1 "$WORK/skip/metrics.jsonl")"
for line in 2 3; do
    sed -n "${line}p" "$WORK/skip/metrics.jsonl" |
        grep -qF '"train/loss": "nan", "valid/loss": "nan"' || fail "skip: line $line"
    sed -n "${line}p" "$WORK/skip/metrics.jsonl" | grep -qF '"runtime/skipped_steps": 2' ||
        fail "skip: line $line does not count 2 skipped steps"
done
"$WEIGHTS_DIFF" "$WORK/skip" "$WORK/lm_1e15" lm 0 > /dev/null || fail "skip: the weights moved"
echo "ok skip: 4 steps skipped and counted, the weights unchanged"
