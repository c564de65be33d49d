#!/bin/bash
# test_dp.sh: data parallel sft and rm equal single-rank training on the global batch: 1, 2 and
# 3 ranks (3 does not divide the batch of 8) end 6 steps with the same weights to 2e-6 (measured
# 1.2e-7 for sft and 5.8e-7 for rm on weights of size 1); the gradients' buckets, and the AdamW
# moments and gradients split over the ranks, change no weight.
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

# Gradient buckets (runtime.grad_bucket_mb): with two ranks a sum is a + b however the floats are
# grouped, so 1 KiB buckets posted during the backward and one all-reduce after it end with the
# same weights bit for bit (the runs above used the default, 25 MiB: all in the last bucket).
for b in 0 0.001; do
    timeout 120 "$MPIRUN" -np 2 "$PPO_WORLD" sft $flags runtime.grad_bucket_mb=$b \
        --out "$WORK/sft2_b$b" > "$WORK/sft2_b$b.log" 2>&1 ||
        { cat "$WORK/sft2_b$b.log"; fail "sft on 2 ranks, buckets of $b MiB"; }
done
"$WEIGHTS_DIFF" "$WORK/sft2_b0" "$WORK/sft2_b0.001" lm 0 || fail "sft: 1 KiB buckets change weights"
"$WEIGHTS_DIFF" "$WORK/sft2_b0" "$WORK/sft2" lm 0 || fail "sft: 25 MiB buckets change weights"
# A rank without rows in a step (3 ranks, batch 2) reports its gradients as a backward would, so
# its buckets match the others' one for one (a mismatch would hang until the watchdog).
timeout 120 "$MPIRUN" -np 3 "$PPO_WORLD" rm $flags train.batch_size=2 runtime.grad_bucket_mb=0.001 \
    runtime.timeout_s=30 --out "$WORK/rm3_small" > "$WORK/rm3_small.log" 2>&1 ||
    { cat "$WORK/rm3_small.log"; fail "rm on 3 ranks with a rank idle, 1 KiB buckets"; }
# optim.zero_stage 1: each rank keeps the AdamW moments of its block of the weights and an
# all-gather hands out the updated ones: the same weights bit for bit as whole moments on every
# rank, for sft on 2 ranks and rm on 3, and at bf16 (docs/model.md, The optimiser's share).
timeout 120 "$MPIRUN" -np 2 "$PPO_WORLD" sft $flags optim.zero_stage=1 --out "$WORK/sft2_z1" \
    > "$WORK/sft2_z1.log" 2>&1 || { cat "$WORK/sft2_z1.log"; fail "sft on 2 ranks, zero stage 1"; }
"$WEIGHTS_DIFF" "$WORK/sft2" "$WORK/sft2_z1" lm 0 || fail "sft: zero stage 1 changes weights"
timeout 120 "$MPIRUN" -np 3 "$PPO_WORLD" rm $flags optim.zero_stage=1 --out "$WORK/rm3_z1" \
    > "$WORK/rm3_z1.log" 2>&1 || { cat "$WORK/rm3_z1.log"; fail "rm on 3 ranks, zero stage 1"; }
"$WEIGHTS_DIFF" "$WORK/rm3" "$WORK/rm3_z1" score 0 || fail "rm: zero stage 1 changes weights"
# At bf16 the float32 weights of the layers' matrices are split too, gathered whole for the save.
for z in 0 1; do
    timeout 120 "$MPIRUN" -np 2 "$PPO_WORLD" sft $flags model.precision=bf16 optim.zero_stage=$z \
        --out "$WORK/sft2_h$z" > "$WORK/sft2_h$z.log" 2>&1 ||
        { cat "$WORK/sft2_h$z.log"; fail "sft on 2 ranks at bf16, zero stage $z"; }
done
"$WEIGHTS_DIFF" "$WORK/sft2_h0" "$WORK/sft2_h1" lm 0 ||
    fail "sft: zero stage 1 at bf16 changes weights"
cmp "$WORK/sft2_h0/model.safetensors" "$WORK/sft2_h1/model.safetensors" ||
    fail "sft: zero stage 1 at bf16 writes another model.safetensors"
# optim.zero_stage 2: the gradients split too, each backward's summed into their owners' blocks
# (docs/model.md, Gradients in shares). With two ranks a sum is a + b in either order: sft the
# same weights and file bit for bit, at fp32 and bf16; rm on 3 ranks, and on 3 with a rank that
# has no rows in a step (its backwards of nothing keep the ranks' reductions in step), within the
# 2e-6 of the other data-parallel runs (three ranks add in another order).
timeout 120 "$MPIRUN" -np 2 "$PPO_WORLD" sft $flags optim.zero_stage=2 --out "$WORK/sft2_z2" \
    > "$WORK/sft2_z2.log" 2>&1 || { cat "$WORK/sft2_z2.log"; fail "sft on 2 ranks, zero stage 2"; }
"$WEIGHTS_DIFF" "$WORK/sft2" "$WORK/sft2_z2" lm 0 || fail "sft: zero stage 2 changes weights"
timeout 120 "$MPIRUN" -np 2 "$PPO_WORLD" sft $flags model.precision=bf16 optim.zero_stage=2 \
    --out "$WORK/sft2_h2" > "$WORK/sft2_h2.log" 2>&1 ||
    { cat "$WORK/sft2_h2.log"; fail "sft on 2 ranks at bf16, zero stage 2"; }
cmp "$WORK/sft2_h0/model.safetensors" "$WORK/sft2_h2/model.safetensors" ||
    fail "sft: zero stage 2 at bf16 writes another model.safetensors"
timeout 120 "$MPIRUN" -np 3 "$PPO_WORLD" rm $flags optim.zero_stage=2 --out "$WORK/rm3_z2" \
    > "$WORK/rm3_z2.log" 2>&1 || { cat "$WORK/rm3_z2.log"; fail "rm on 3 ranks, zero stage 2"; }
"$WEIGHTS_DIFF" "$WORK/rm3" "$WORK/rm3_z2" score 2e-6 qkvb lnfb scoreb ||
    fail "rm: zero stage 2 changes weights"
timeout 120 "$MPIRUN" -np 3 "$PPO_WORLD" rm $flags train.batch_size=2 optim.zero_stage=2 \
    runtime.timeout_s=30 --out "$WORK/rm3_small_z2" > "$WORK/rm3_small_z2.log" 2>&1 ||
    { cat "$WORK/rm3_small_z2.log"; fail "rm on 3 ranks with a rank idle, zero stage 2"; }
"$WEIGHTS_DIFF" "$WORK/rm3_small" "$WORK/rm3_small_z2" score 2e-6 qkvb lnfb scoreb ||
    fail "rm with a rank idle: zero stage 2 changes weights"
# On one rank there is nothing to split: the run says so once, and trains as stage 0 does.
timeout 120 "$MPIRUN" -np 1 "$PPO_WORLD" sft $flags optim.zero_stage=1 --out "$WORK/sft1_z1" \
    > "$WORK/sft1_z1.log" 2>&1 || { cat "$WORK/sft1_z1.log"; fail "sft on 1 rank, zero stage 1"; }
[ "$(grep -c "note: optim.zero_stage 1: the run has one rank" "$WORK/sft1_z1.log")" = 1 ] ||
    { cat "$WORK/sft1_z1.log"; fail "sft on 1 rank, zero stage 1: no note, or more than one"; }
"$WEIGHTS_DIFF" "$WORK/sft1" "$WORK/sft1_z1" lm 0 ||
    fail "sft: zero stage 1 on one rank changes weights"
echo "dp: ok"
