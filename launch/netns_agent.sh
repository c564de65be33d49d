#!/usr/bin/env bash
# netns_agent.sh: a launch agent that mpirun calls instead of ssh (PW_LAUNCH_AGENT, docs/launch.md)
# to start its daemon on a "host" that is a Linux network namespace of this machine.
# Usage (as mpirun calls it): netns_agent.sh [ssh options...] HOST COMMAND...
#
# HOST is the name of a network namespace (`ip netns list`), as written in the hostfile. The
# command runs in that namespace and in a UTS namespace of its own whose host name is HOST, so
# that Open MPI and ppo_world see one host per namespace, as on a cluster. COMMAND is joined by
# spaces and run by sh, as ssh has a remote shell do. Needs root (CAP_SYS_ADMIN).
set -eu
# Options an ssh-style caller may put before the host (Open MPI passes none to a plain agent,
# but `-x` and the like are allowed, as ssh accepts them); options with a value are not.
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
if [ $# -lt 2 ]; then
    echo "netns_agent.sh: usage: netns_agent.sh HOST COMMAND... (HOST a network namespace)" >&2
    exit 255 # what ssh returns when it cannot reach the host
fi
host=$1
shift
if ! [ -e "/var/run/netns/$host" ]; then
    echo "netns_agent.sh: no network namespace '$host' (ip netns list names them)" >&2
    exit 255
fi
# shellcheck disable=SC2016 # $0 and $1 belong to the inner shell
exec ip netns exec "$host" unshare --uts -- sh -c 'hostname "$0" && eval "$1"' "$host" "$*"
