#!/usr/bin/env bash
# test_watchdog.sh: runs watchdog_child jobs that would hang without the watchdog and checks that
# each ends non-zero, in time, with a message naming who waited for what from whom.
# Usage: test_watchdog.sh MPIRUN WATCHDOG_CHILD
set -u
mpirun=$1
child=$2
fails=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# expect NAME NP TIMEOUT_S MAX_SECONDS PATTERN...: the job must end non-zero within MAX_SECONDS
# (not stopped by `timeout`: code 124, or past MAX_SECONDS) and its output must contain every PATTERN.
# HB=S before it turns heartbeats on with a silence limit of S seconds; OK=1 wants exit 0 instead.
expect() {
    local name=$1 np=$2 tmo=$3 max=$4
    shift 4
    local t0=$SECONDS
    timeout -k 5 90 "$mpirun" -np "$np" "$child" "$name" "$tmo" "${HB:-0}" >"$out" 2>&1
    local rc=$? dt=$((SECONDS - t0))
    local ok=1
    if [ "${OK:-0}" = 1 ] && [ "$rc" -ne 0 ]; then
        echo "FAIL $name: exit code $rc (expected the job to end well)"; ok=0
    elif [ "${OK:-0}" != 1 ] && { [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; }; then
        echo "FAIL $name: exit code $rc (expected a non-zero end of the job)"; ok=0
    fi
    if [ "$dt" -gt "$max" ]; then echo "FAIL $name: took ${dt}s (max ${max}s)"; ok=0; fi
    for p in "$@"; do
        if ! grep -qF -- "$p" "$out"; then echo "FAIL $name: output lacks '$p'"; ok=0; fi
    done
    if [ $ok -eq 1 ]; then
        echo "ok   $name: exit $rc after ${dt}s"
        grep -m1 -E 'watchdog|wrong|ppo_world' "$out" | sed 's/^/     /'
    else
        fails=$((fails + 1))
        sed 's/^/     | /' "$out" | head -30
    fi
}

expect nosend 2 1.0 30 "watchdog: rank 1 (actor[0]+critic[1]) waited" \
    "receiving message 'logp_ref' step 7" "from reference[0] to actor[0]" "world rank 0" \
    "nothing from that rank has arrived"
expect wrongkind 2 1.0 30 "watchdog: rank 1" "receiving message 'logp_ref' step 7" \
    "pending from that rank instead: 'scores' from reference to actor"
expect collective 3 1.0 30 "watchdog: rank 0" "all-reduce (sum) of role critic over world ranks [0,1,2]"
expect mismatch 2 20 30 "wrong step: expected message 'logp_ref' step 7" "got 'logp_ref' step 6"
# a rank that dies: the job ends long before the watchdog's 60 s
expect dies 2 60 30 "signal 9"
expect noinit 2 1.0 30 "watchdog: rank 0 (reference[0]+critic[0]) waited" "pw_world_init"
# a stopped rank (SIGSTOP) while its peer waits with a timeout of 600 s: the heartbeat of the rank
# after it names it within seconds; and heartbeats never take a busy or a finished rank for dead
HB=2 expect stopped 3 600 60 "heartbeat: rank 1 (actor[0]+critic[1]) has given no sign of life" \
    "noticed by rank 2 (critic[2])"
HB=1 OK=1 expect busy 2 600 60
HB=1 OK=1 expect finish 3 600 60
# one rank alone waiting for itself: reported at once, no timeout needed
expect nosend 1 30 30 "never sent"
# a failed CUDA check ends the job through the world's fatal path, long before the timeout
if "$child" has-cuda; then
    expect cudafail 2 60 30 "[ppo_world] rank 1: " "CUDA call cudaSetDevice(-1) failed"
fi

echo "test_watchdog: $fails failed"
[ $fails -eq 0 ]
