#!/bin/sh
# test_bench_memory.sh: bench_memory refuses bad arguments with its usage line and exit status
# 2 (a run takes minutes and gigabytes: the benchmark itself is not run here).
set -u
fail=0
for bad in "0 16" "4 1" "4 2000" "x 16" "1 2 3" "4"; do
    # shellcheck disable=SC2086 # several words on purpose
    err=$("$BENCH" $bad 2>&1 >/dev/null); rc=$?
    if [ "$rc" -ne 2 ] || ! echo "$err" | grep -q "usage: bench_memory \[B T\] \[cuda\]"; then
        echo "FAIL: bench_memory $bad: exit $rc, message: $err"; fail=1
    fi
done
[ "$fail" -eq 0 ] && echo "test_bench_memory: ok"
exit "$fail"
