#!/bin/sh
# test_stopped.sh: a PPO run whose actor rank is stopped (SIGSTOP: as a debugger or a frozen host
# would stop it) ends within seconds, by ppo_world's heartbeat and with the stopped rank and its
# roles named, although the watchdog's timeout is the default 600 s: no other rank's wait on it
# could have told before then. Without heartbeats the job waits out the timeout.
. "$(dirname "$0")/common.sh"
make_inputs
placement two 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'generator: { ranks: [0] }' \
    'critic: { ranks: [1] }' 'reward: { ranks: [1] }'

"$MPIRUN" -np 2 "$PPO_DRIVER" "$WORK/two.yaml" "$WORK/ppo.yaml" "$WORK/run" episodes=100000 \
    runtime.timeout_s=600 > "$WORK/out" 2>&1 &
launcher=$!
stopped=
cleanup() {
    # a rank left stopped by a failed run must not outlive the test
    for p in $stopped; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# Once the first step is written the run is under way; then stop world rank 0.
for i in $(seq 600); do
    [ -s "$WORK/run/metrics.jsonl" ] && break
    sleep 0.1
done
[ -s "$WORK/run/metrics.jsonl" ] || { echo "FAIL: no step written"; cat "$WORK/out"; exit 1; }
for p in $(pgrep -P "$launcher"); do
    if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0'; then
        stopped=$p
    fi
done
[ -n "$stopped" ] || { echo "FAIL: rank 0's process not found"; exit 1; }
kill -STOP "$stopped"
t0=$(date +%s)

# The heartbeat's limit is 10 s; 90 s is far above it and far below the 600 s timeout.
i=0
while kill -0 "$launcher" 2>/dev/null && [ $i -lt 900 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 "$launcher" 2>/dev/null; then
    echo "FAIL: the job still runs 90 s after rank 0 was stopped"
    kill -TERM "$launcher"
    cat "$WORK/out"
    exit 1
fi
rc=0
wait "$launcher" || rc=$?
echo "job ended with exit $rc, $(( $(date +%s) - t0 )) s after rank 0 was stopped"
if [ $rc -eq 0 ]; then echo "FAIL: the job ended well"; exit 1; fi
want='heartbeat: rank 0 (actor\[0\]+reference\[0\]+generator\[0\]) has given no sign of life'
if ! grep -q "$want" "$WORK/out"; then
    echo "FAIL: no message naming the stopped rank"; cat "$WORK/out"; exit 1
fi
grep -m1 'heartbeat:' "$WORK/out"
echo ok
