#!/usr/bin/env bash
# placements.sh: one run configuration on a list of placements, each in sync and async mode, then
# `ppo_world report placements`: table.md / table.tsv (steps/s, per-role busy and waiting
# seconds, bytes moved and peak memory) and throughput.png, a Gantt view of step 1 of each run
# from its trace (gantt_NAME_MODE.png) (docs/experiments.md, Placements).
#
# Usage: launch/experiments/placements.sh --config C.yaml [--out DIR] [--modes "sync async"]
#            [--fresh] PLACEMENT.yaml ... [-- key=value ...]
#   --config C   the run configuration of every run (its steps: `episodes`)
#   --out DIR    experiment folder (default runs/placements): DIR/NAME_MODE per run, NAME the
#                placement file's name without .yaml
#   --modes L    modes to run (default "sync async")
#   --fresh      redo runs that already finished
#   PLACEMENT    placement files; each must state `world_size:` (the job size to launch)
#   key=value    overrides given to every run (after --)
# Environment: BUILD, PPO_WORLD as for launch/run.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
OUT=runs/placements
CONFIG=
MODES="sync async"
FRESH=0
PLACEMENTS=()
OVERRIDES=()
while [ $# -gt 0 ]; do
    case $1 in
        --out) [ $# -ge 2 ] || { echo "placements: --out needs a folder" >&2; exit 2; }; OUT=$2; shift ;;
        --config) [ $# -ge 2 ] || { echo "placements: --config needs a file" >&2; exit 2; }; CONFIG=$2; shift ;;
        --modes) [ $# -ge 2 ] || { echo "placements: --modes needs a list" >&2; exit 2; }; MODES=$2; shift ;;
        --fresh) FRESH=1 ;;
        --) shift; OVERRIDES=("$@"); break ;;
        -h|--help) sed -n '7,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "placements: unknown flag '$1' (expected --config, --out, --modes, --fresh, --)" >&2; exit 2 ;;
        *) PLACEMENTS+=("$1") ;;
    esac
    shift
done
[ -n "$CONFIG" ] || { echo "placements: --config C.yaml is required" >&2; exit 2; }
[ -f "$CONFIG" ] || { echo "placements: --config '$CONFIG': no such file" >&2; exit 2; }
[ ${#PLACEMENTS[@]} -gt 0 ] || { echo "placements: give at least one placement file" >&2; exit 2; }
for m in $MODES; do
    case $m in sync|async) ;; *) echo "placements: --modes: '$m' is neither sync nor async" >&2; exit 2 ;; esac
done
PPO=${PPO_WORLD:-${BUILD:-$here/build}/src/ppo_world}
[ -x "$PPO" ] || PPO=$(command -v ppo_world || true)
[ -x "$PPO" ] || { echo "placements: no ppo_world binary (set BUILD or PPO_WORLD)" >&2; exit 2; }
export PPO_WORLD=$PPO

# The job size of each placement: its `world_size:` line, checked by ppo_world's own dry-run.
world_size() {
    local n
    n=$(sed -n 's/^world_size:[[:space:]]*\([0-9][0-9]*\)[[:space:]]*\(#.*\)\{0,1\}$/\1/p' "$1")
    if [ -z "$n" ]; then
        echo "placements: $1: no 'world_size: N' line (the sweep launches that many ranks)" >&2
        return 1
    fi
    "$PPO" --placement "$1" --dry-run --world-size "$n" > /dev/null || return 1
    echo "$n"
}

mkdir -p "$OUT"
RUNS=()
for p in "${PLACEMENTS[@]}"; do
    [ -f "$p" ] || { echo "placements: '$p': no such placement file" >&2; exit 2; }
    np=$(world_size "$p") || exit 2
    name=$(basename "$p" .yaml)
    for m in $MODES; do
        run="$OUT/${name}_$m"
        if [ "$FRESH" = 1 ] || ! [ -f "$run/.done" ]; then
            rm -rf "$run"
            mkdir -p "$run"
            echo "== $name ($np ranks, $m)"
            k=0; [ "$m" = async ] && k=1   # async: one step off (async.max_staleness)
            # a timeline of the first steps: the Gantt view draws step 1 from it
            "$here/launch/run.sh" "$np" --placement "$p" --config "$CONFIG" --out "$run" \
                "async.max_staleness=$k" "trace.path=$run/trace.json" trace.steps=2 \
                ${OVERRIDES[@]+"${OVERRIDES[@]}"} > "$run.log" 2>&1 || {
                echo "placements: the run $run failed; its output:" >&2
                tail -20 "$run.log" >&2
                exit 1
            }
            cp "$p" "$run/placement.yaml"
            touch "$run/.done"
        fi
        RUNS+=("${name}_$m=$run")
    done
done
"$PPO" report placements "$OUT" "${RUNS[@]}"
