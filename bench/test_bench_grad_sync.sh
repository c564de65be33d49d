#!/usr/bin/env bash
# test_bench_grad_sync.sh: bench_grad_sync at a tiny shape on two ranks (seconds), so that the
# benchmark the GPU sessions need is known to run: its table (three ways to sum, the buckets
# posted before the end), the RESULT line last and naming the run, and its refusals of bad
# options, each with its message and exit status 2.
set -euo pipefail
: "${BENCH:?BENCH must name the bench_grad_sync binary (meson sets it)}"
: "${MPIRUN:?MPIRUN must name mpirun (meson sets it)}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { cat "$work/out" 2>/dev/null || true; echo "FAIL: $*"; exit 1; }

# 2 layers, 64 wide, 1 KiB buckets: the top (the final norm, 512 bytes) is not full until layer
# 1 joins it, layer 0 (about 200 KB) is a bucket of its own, and so are the embeddings, reported
# at the backward's end: 3 buckets posted before pw_grad_sync_end.
"$MPIRUN" -np 2 "$BENCH" --layers 2 --width 64 --T 8 --rounds 1 --bucket-mb 0.001 \
    > "$work/out" 2>&1 || fail "the tiny run exited $?"
cat "$work/out"
grep -q "^buckets during backward .* 3$" "$work/out" || fail "not 3 buckets before the end"
grep -q "^one all-reduce after backward .* 0$" "$work/out" || fail "buckets without bucketing"
result=$(grep '^RESULT ' "$work/out" | tail -n 1)
[ "$(tail -n 1 "$work/out")" = "$result" ] || fail "RESULT is not the last line"
for kv in ranks=2 layers=2 width=64 buckets_vs_after=; do
    grep -qF " $kv" <<< "$result" || fail "RESULT lacks $kv: $result"
done

bad() { # expected message, then the arguments
    local want=$1
    shift
    # one rank without mpirun (Open MPI's singleton start, 2 s less a run): refused before a step
    if "$BENCH" "$@" > "$work/out" 2>&1; then fail "$* was accepted"; fi
    grep -qF -- "$want" "$work/out" || fail "$*: no '$want'"
}
bad "--layers 0: expected an integer in [1, 96]" --layers 0
bad "--width 100: expected a multiple of 64" --width 100
bad "--bucket-mb 0: expected (0, 1048576]" --bucket-mb 0
bad "--device tpu: expected cpu or cuda" --device tpu
bad "unknown argument '--fast'" --fast
bad "--rounds needs a value" --rounds
echo "bench_grad_sync tiny: ok"
