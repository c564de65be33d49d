#!/bin/sh
# test_bench_logprobs.sh: bench_logprobs at a tiny size prints its table and a RESULT line with
# its times (the backward making the row statistics and reading the forward's); bad arguments
# are refused by name with exit status 2.
set -u
fail=0
out=$("$BENCH" 2 1) || { echo "FAIL: bench_logprobs 2 1 exited $?"; fail=1; }
echo "$out"
echo "$out" | tail -1 | grep -Eq '^RESULT forward_ms=[0-9.]+ backward_ms=[0-9.]+ backward_kept_ms=[0-9.]+ kept_speedup=[0-9.]+ ns_per_logit=[0-9.]+$' ||
    { echo "FAIL: no RESULT line last"; fail=1; }
for bad in "0 1" "4 0" "x 3"; do
    # shellcheck disable=SC2086 # two words on purpose
    err=$("$BENCH" $bad 2>&1 >/dev/null); rc=$?
    if [ "$rc" -ne 2 ] || ! echo "$err" | grep -q "N (rows, >= 1) and R (repeats"; then
        echo "FAIL: bench_logprobs $bad: exit $rc, message: $err"; fail=1
    fi
done
[ "$fail" -eq 0 ] && echo "test_bench_logprobs: ok"
exit "$fail"
