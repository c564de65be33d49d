#!/bin/bash
# test_dp.sh: data parallel sft and rm equal single-rank training on the global batch: 1, 2 and
# 3 ranks (3 does not divide the batch of 8) end 6 steps with the same weights to 2e-6 (measured
# 1.2e-7 for sft and 5.8e-7 for rm on weights of size 1).
. "$(dirname "$0")/common.sh"
make_sft "$WORK/sft_train.jsonl" 100 1
make_prefs "$WORK/prefs_train.jsonl" 100 1
flags="data.dir=$WORK train.steps=6 eval.every=3 train.batch_size=8 model.n_embd=32 optim.lr=3e-3
       optim.warmup_steps=2 seed=5 data.valid_fraction=0.2"
for mode in sft rm; do
    # Left out: tensors whose gradient is zero in exact arithmetic, so that rounding noise of
    # the summation order is all AdamW sees and g / (|g| + eps) scales it up to steps of size
    # lr: the attention biases (qkvb: a key bias shifts every logit of a query alike) and, under
    # the Bradley-Terry loss, unchanged by a shift of both scores, lnfb and scoreb.
    heads=lm; skip=qkvb
    [ $mode = rm ] && { heads=score; skip="qkvb lnfb scoreb"; }
    for np in 1 2 3; do
        timeout 120 "$MPIRUN" -np $np "$PPO_WORLD" $mode $flags --out "$WORK/$mode$np" \
            > "$WORK/$mode$np.log" 2>&1 || { cat "$WORK/$mode$np.log"; fail "$mode on $np ranks"; }
        tail -n 1 "$WORK/$mode$np.log"
    done
    for np in 2 3; do
        "$WEIGHTS_DIFF" "$WORK/${mode}1" "$WORK/$mode$np" $heads 2e-6 $skip ||
            fail "$mode: 1 rank and $np ranks differ"
    done
    # The logged losses agree too (they are sums over ranks of the same terms).
    a=$(last_metric "$WORK/${mode}1/metrics.jsonl" valid/loss)
    b=$(last_metric "$WORK/${mode}2/metrics.jsonl" valid/loss)
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * (1 + a)) }' ||
        fail "$mode valid/loss $a (1 rank) vs $b (2 ranks)"
done
echo "dp: ok"
