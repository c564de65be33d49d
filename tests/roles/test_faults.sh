#!/bin/sh
# test_faults.sh: fault injection, once per role. With one role per rank, each rank in turn is
# killed (SIGKILL: the out-of-memory killer, a crash without a word) and stopped (SIGSTOP: a
# debugger, a frozen host) mid-run, under the documented launcher. Each time the job must end
# non-zero with ppo_world's own message naming that rank and its roles: for a kill the
# launcher's (mpirun names only the rank's number), for a stop the heartbeat's. The watchdog's
# timeout is 600 s, so only the heartbeat (3 s here) can end a stopped run before the test's own
# time limit; no step here is timed, a job that does not end fails by that limit.
. "$(dirname "$0")/common.sh"
make_inputs
RUN_SH=$(cd "$(dirname "$0")/../.." && pwd)/launch/run.sh
# The launcher's rank -> roles map, named here so that this job's ranks can be told apart.
PW_RANK_ROLES=$WORK/ranks.txt
export PPO_WORLD PW_RANK_ROLES

launcher= target=
cleanup() {
    # a failed run must not outlive the test, a stopped rank least of all
    [ -n "$target" ] && { kill -CONT "$target" 2>/dev/null; kill -KILL "$target" 2>/dev/null; }
    [ -n "$launcher" ] && kill -TERM "$launcher" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# rank_pid N: the process of world rank N of this test's job.
rank_pid() {
    for e in /proc/[0-9]*/environ; do
        tr '\0' '\n' < "$e" 2>/dev/null | grep -qx "PW_RANK_ROLES=$PW_RANK_ROLES" || continue
        tr '\0' '\n' < "$e" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" || continue
        p=${e#/proc/}; echo "${p%/environ}"; return
    done
}

# fault RANK ROLE SIGNAL WANT: run, send SIGNAL to RANK once a step is written, expect WANT.
fault() {
    rank=$1 role=$2 sig=$3 want=$4
    rm -rf "$WORK/run" "$WORK/out"
    "$RUN_SH" 5 --placement "$WORK/five.yaml" --config "$WORK/ppo.yaml" --out "$WORK/run" \
        episodes=100000 runtime.timeout_s=600 runtime.heartbeat_s=3 > "$WORK/out" 2>&1 &
    launcher=$!
    for i in $(seq 1200); do
        [ -s "$WORK/run/metrics.jsonl" ] && break
        kill -0 "$launcher" 2>/dev/null || break
        sleep 0.1
    done
    [ -s "$WORK/run/metrics.jsonl" ] || { echo "FAIL: no step written"; cat "$WORK/out"; exit 1; }
    target=$(rank_pid "$rank")
    [ -n "$target" ] || { echo "FAIL: rank $rank's process not found"; exit 1; }
    kill -"$sig" "$target"
    rc=0
    wait "$launcher" || rc=$?
    launcher=
    [ "$sig" = STOP ] && { kill -CONT "$target" 2>/dev/null; kill -KILL "$target" 2>/dev/null; }
    target=
    if [ $rc -eq 0 ]; then echo "FAIL: SIG$sig of rank $rank ($role): the job ended well"; exit 1; fi
    if ! grep -q "$want" "$WORK/out"; then
        echo "FAIL: SIG$sig of rank $rank ($role): no message naming it"; cat "$WORK/out"; exit 1
    fi
    echo "SIG$sig rank $rank ($role): exit $rc: $(grep -m1 -o "$want.*" "$WORK/out" | cut -c1-110)"
}

# The placement "five" of common.sh: rank i holds role i alone.
rank=0
for role in actor reference critic reward generator; do
    who="rank $rank ($role\[0\])"
    fault $rank $role KILL "launcher: $who was killed by signal 9 (SIGKILL)"
    fault $rank $role STOP "heartbeat: $who has given no sign of life"
    rank=$((rank + 1))
done
echo ok
