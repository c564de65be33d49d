#!/usr/bin/env bash
# test_bench_zero.sh: bench_zero at a tiny shape on two ranks (seconds), so that the benchmark
# of optim.zero_stage is known to run: its table (each of the three stages, each rank, the
# gradient's sum), the RESULT line last and naming the run (at fp32 the weights the same at
# stages 0 and 1, at bf16 fewer split), and its refusals of bad options, each with its message
# and exit status 2.
set -euo pipefail
: "${BENCH:?BENCH must name the bench_zero binary (meson sets it)}"
: "${MPIRUN:?MPIRUN must name mpirun (meson sets it)}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { cat "$work/out" 2>/dev/null || true; echo "FAIL: $*"; exit 1; }

"$MPIRUN" -np 2 "$BENCH" --layers 1 --width 64 --rounds 1 > "$work/out" 2>&1 ||
    fail "the tiny run exited $?"
cat "$work/out"
for want in '^0 (all whole) *0 ' '^0 (all whole) *1 ' '^1 (moments split) *0 ' \
            '^1 (moments split) *1 ' '^2 (gradients too) *0 ' '^2 (gradients too) *1 ' \
            '^stage 1 step (AdamW on the block + all-gather' '^stage 2 step ' \
            "^gradient's sum, slowest rank, median of 1: .* (a backward's 3 reduce-scatters)$"; do
    grep -q "$want" "$work/out" || fail "no line '$want'"
done
result=$(grep '^RESULT ' "$work/out" | tail -n 1)
[ "$(tail -n 1 "$work/out")" = "$result" ] || fail "RESULT is not the last line"
for kv in ranks=2 params= precision=fp32 weights_ratio=1.000 moments_ratio= step_ratio= \
          grads_mib_0= grads_mib_2= grads_ratio= sum_ratio= step_s_2=; do
    grep -qF " $kv" <<< "$result" || fail "RESULT lacks $kv: $result"
done
# at bf16 stage 1 splits the float32 weights of the layers' matrices too: less on each rank
"$MPIRUN" -np 2 "$BENCH" --layers 1 --width 64 --rounds 1 --precision bf16 > "$work/out" 2>&1 ||
    fail "the tiny bf16 run exited $?"
result=$(grep '^RESULT ' "$work/out" | tail -n 1)
ratio=$(sed -n 's/.* weights_ratio=\([0-9.]*\).*/\1/p' <<< "$result")
grep -qF " precision=bf16" <<< "$result" && awk -v r="$ratio" 'BEGIN { exit !(r > 0 && r < 1) }' ||
    fail "bf16: the weights are not smaller split: $result"

bad() { # expected message, then the mpirun arguments
    local want=$1 rc=0
    shift
    "$MPIRUN" "$@" > "$work/out" 2>&1 || rc=$?
    [ "$rc" = 2 ] || fail "'$*' exited $rc, expected 2"
    grep -qF -- "$want" "$work/out" || fail "'$*' did not say '$want'"
}
bad "needs 2 ranks or more" -np 1 "$BENCH" --layers 1
bad "--shape gpt3: expected gpt2-124m or qwen2.5-0.5b" -np 2 "$BENCH" --shape gpt3
bad "--rounds 0: expected an integer in [1, 101]" -np 2 "$BENCH" --rounds 0
bad "unknown argument '--bogus'" -np 2 "$BENCH" --bogus
bad "--width 100: expected a multiple of 64" -np 2 "$BENCH" --width 100
bad "--precision fp16: expected fp32 or bf16" -np 2 "$BENCH" --precision fp16
echo "bench_zero tiny: ok"
