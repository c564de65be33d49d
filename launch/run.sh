#!/usr/bin/env bash
# run.sh: launch ppo_world with mpirun and the Open MPI settings this project relies on.
# Usage: launch/run.sh N --placement p.yaml [ppo_world arguments...]   (docs/launch.md)
#
# Environment:
#   PPO_WORLD        the binary (default: build/src/ppo_world, else ppo_world on PATH)
#   PW_HOSTFILE      an Open MPI hostfile (launch/hostfile.example); default: this host only
#   PW_OVERSUBSCRIBE 1 to allow more ranks than slots with a hostfile (always on for one host)
#   PW_LAUNCH_AGENT  what mpirun starts its daemons on other hosts with, instead of ssh
#                    (e.g. launch/netns_agent.sh for hosts that are network namespaces)
#   PW_TCP_IF        the networks or interfaces Open MPI's TCP may use, e.g. 10.1.0.0/16 or eth1
#   PW_MPIRUN_ARGS   extra mpirun arguments, word-split
#   PW_RANK_ROLES    where rank 0 writes the rank -> roles map (default: a temporary file)
set -euo pipefail

if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
    sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
np=$1
shift

here=$(cd "$(dirname "$0")/.." && pwd)
ppo=${PPO_WORLD:-}
if [ -z "$ppo" ]; then
    if [ -x "$here/build/src/ppo_world" ]; then ppo=$here/build/src/ppo_world; else ppo=ppo_world; fi
fi

args=(-np "$np")
# ppo_world pins each rank itself with hwloc, as the placement's `bind:` says; a binding by
# mpirun would be replaced anyway, and Open MPI refuses core binding when oversubscribed.
args+=(--bind-to none --map-by slot)
# Consecutive ranks on the same node, so a node's ranks are a block of the placement file.
if [ -n "${PW_HOSTFILE:-}" ]; then
    args+=(--hostfile "$PW_HOSTFILE")
    [ "${PW_OVERSUBSCRIBE:-0}" = 1 ] && args+=(--oversubscribe)
    if [ -n "${PW_LAUNCH_AGENT:-}" ]; then
        # checked here: mpirun's own message for a missing agent names neither variable nor path
        if ! [ -x "$PW_LAUNCH_AGENT" ] && ! command -v "$PW_LAUNCH_AGENT" > /dev/null; then
            echo "run.sh: PW_LAUNCH_AGENT=$PW_LAUNCH_AGENT: no such executable" >&2
            exit 2
        fi
        args+=(--mca plm_rsh_agent "$PW_LAUNCH_AGENT")
    fi
else
    if [ -n "${PW_LAUNCH_AGENT:-}" ]; then
        echo "run.sh: PW_LAUNCH_AGENT is for starting other hosts; name them in PW_HOSTFILE" >&2
        exit 2
    fi
    # One host: let Open MPI count the cores and know when ranks outnumber them, so that idle
    # ranks yield the CPU. Never declare slots (--host h:N) above the core count: Open MPI
    # then believes it is not oversubscribed and busy-polls (a 5-rank ring on 2 cores went
    # from about 10 us to about 10 ms per hop).
    args+=(--oversubscribe)
fi
# Daemons call mpirun back and ranks talk over the first networks they find; on a node with
# several (a management network, a container bridge) name the one that joins the nodes.
if [ -n "${PW_TCP_IF:-}" ]; then
    args+=(--mca oob_tcp_if_include "$PW_TCP_IF" --mca btl_tcp_if_include "$PW_TCP_IF")
fi
# Shared-memory transfers by copy through the shared segment: faster for 1 MiB messages
# between ranks of one VM than cross-memory attach (about 5x measured), and CMA needs ptrace
# rights that containers often lack.
args+=(--mca btl_vader_single_copy_mechanism none)
# Containers often run as root; Open MPI refuses root unless told.
[ "$(id -u)" -eq 0 ] && args+=(--allow-run-as-root)
# The environment shared with launch/slurm.sbatch: thread pools, CUDA ordinals, OpenMP waits,
# the OpenBLAS core type (launch/env.sh); mpirun passes each variable on by name.
# shellcheck source=launch/env.sh
. "$here/launch/env.sh"
for v in $PW_ENV_VARS; do args+=(-x "$v"); done
# shellcheck disable=SC2206
extra=(${PW_MPIRUN_ARGS:-})


# A rank killed by a signal (SIGKILL, the kernel's OOM killer) says nothing, and mpirun ends the
# job at once naming only the rank's number ("process rank N ... exited on signal 9"). So rank 0
# writes the rank -> roles map to PW_RANK_ROLES at start-up, this script keeps a copy of
# mpirun's stderr, and after a death by signal it names the rank with its roles
# (docs/runtime.md, A killed rank). Not mpirun's recovery mode (orte_enable_recovery), which
# keeps the job alive for the heartbeat to notice the death: with Open MPI 4.1 mpirun then exits
# 0 after MPI_Abort, and a rank exiting 1 no longer ends the job, so failed runs looked good.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PW_RANK_ROLES=${PW_RANK_ROLES:-$tmp/ranks.txt}
rm -f "$PW_RANK_ROLES" # a map left by an earlier job must not name this job's ranks
args+=(-x PW_RANK_ROLES)
# A fifo, not a process substitution, so that the copy is complete before it is read.
mkfifo "$tmp/stderr.fifo"
tee "$tmp/stderr" < "$tmp/stderr.fifo" >&2 &
tee_pid=$!
mpirun "${args[@]}" "${extra[@]}" "$ppo" "$@" 2> "$tmp/stderr.fifo" &
mpirun_pid=$!
# Not exec'd any more: a stop asked of this script must reach mpirun, which ends the ranks.
trap 'kill -TERM "$mpirun_pid" 2>/dev/null' TERM INT HUP
rc=0
while :; do
    wait "$mpirun_pid" && rc=0 || rc=$?
    kill -0 "$mpirun_pid" 2>/dev/null || break # else a trapped signal woke the wait
done
wait "$tee_pid" || true

if [ "$rc" -ne 0 ]; then
    pat='process rank ([0-9]+) with PID [0-9]+ on node [^ ]+ exited on signal ([0-9]+)'
    line=$(grep -m1 -E -o "$pat" "$tmp/stderr" || true)
    if [[ $line =~ $pat ]]; then
        rank=${BASH_REMATCH[1]} sig=${BASH_REMATCH[2]}
        who=$(awk -v r="$rank" '$1 == r { sub(/^[0-9]+ /, ""); print; exit }' \
            "$PW_RANK_ROLES" 2>/dev/null || true)
        [ -n "$who" ] || who="rank $rank (roles unknown: it died before the job's world was built)"
        name=$(kill -l "$sig" 2>/dev/null || echo "?")
        echo "[ppo_world] launcher: $who was killed by signal $sig (SIG$name) and could" \
            "give no message of its own; mpirun ended the job (SIGKILL unasked for is often" \
            "the kernel's out-of-memory killer: see dmesg)" >&2
    fi
fi
exit "$rc"
