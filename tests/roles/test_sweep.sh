#!/bin/bash
# test_sweep.sh: launch/experiments/placements.sh on the tiny models, two placements (one rank;
# the generator on a rank of its own) in sync and async mode, 2 steps each: its table has a row
# per run whose steps/s is 1 / time/step of the run's step 1 (step 0 left out), busy seconds
# per role from the metrics, bytes moved from comm/bytes_sent, a trace and a Gantt view per run,
# "-" for roles a placement lacks; a placement without world_size and a missing configuration are
# refused.
. "$(dirname "$0")/common.sh"
set -o pipefail
make_inputs
here=$(cd "$(dirname "$0")/../.." && pwd)
{ echo "world_size: 1"; cat "$WORK/single.yaml"; } > "$WORK/one.yaml"
sed 's/generator: { ranks: \[0\] }/generator: { ranks: [1] }/' "$WORK/one.yaml" |
    sed 's/^world_size: 1/world_size: 2/' > "$WORK/gen.yaml"
grep -q 'generator: { ranks: \[1\] }' "$WORK/gen.yaml" || { echo "FAIL: gen.yaml"; exit 1; }
export PPO_WORLD
"$here/launch/experiments/placements.sh" --config "$WORK/ppo.yaml" --out "$WORK/sweep" \
    "$WORK/one.yaml" "$WORK/gen.yaml" -- episodes=16 > "$WORK/sweep.log" 2>&1 ||
    { cat "$WORK/sweep.log"; echo "FAIL: the sweep"; exit 1; }
tsv=$WORK/sweep/table.tsv
[ "$(wc -l < "$tsv")" = 5 ] || { cat "$tsv"; echo "FAIL: expected a header and 4 rows"; exit 1; }
[ "$(head -1 "$tsv" | awk -F'\t' '{print NF}')" = 20 ] || { echo "FAIL: 20 columns"; exit 1; }
for run in one_sync one_async gen_sync gen_async; do
    m=$WORK/sweep/$run/metrics.jsonl
    [ "$(wc -l < "$m")" = 2 ] || { echo "FAIL: $run: 2 steps expected"; exit 1; }
    # step 1's time/step and the actor's phases, as the table must show them
    want=$(sed -n 2p "$m" | awk '{
        match($0, /"time\/step":[^,}]*/); t = substr($0, RSTART + 12, RLENGTH - 12)
        busy = 0
        n = split("generate evaluate advantages train weights", ph, " ")
        for (i = 1; i <= n; i++) {
            key = "\"time/actor/" ph[i] "\":"
            if (match($0, key "[^,}]*")) busy += substr($0, RSTART + length(key), RLENGTH - length(key))
        }
        printf "%.4f %.4f %.4f", 1 / t, t, busy }')
    got=$(awk -F'\t' -v r="$run" '$1 == r { print $3, $4, $5 }' "$tsv")
    [ "$want" = "$got" ] || { echo "FAIL: $run: table '$got', metrics '$want'"; exit 1; }
    echo "ok $run: steps_per_s step_s actor_busy_s = $got"
done
# bytes moved: the runs' comm/bytes_sent of step 1 (0 on one rank, the messages to and from the
# generator's rank on two); every run traced, and its step 1 drawn
col=$(head -1 "$tsv" | tr '\t' '\n' | grep -n '^bytes' | cut -d: -f1)
[ -n "$col" ] || { head -1 "$tsv"; echo "FAIL: no bytes column"; exit 1; }
for run in one_sync one_async gen_sync gen_async; do
    want=$(sed -n 2p "$WORK/sweep/$run/metrics.jsonl" | sed 's/.*"comm\/bytes_sent":\([0-9.e+]*\).*/\1/')
    got=$(awk -F'\t' -v r="$run" -v c="$col" '$1 == r { print $c }' "$tsv")
    awk -v a="$want" -v b="$got" 'BEGIN { exit !(a + 0 == b + 0) }' ||
        { echo "FAIL: $run: bytes '$got' in the table, '$want' in the metrics"; exit 1; }
    case $run in one_*) [ "$got" = 0 ] ;; *) awk -v b="$got" 'BEGIN { exit !(b > 0) }' ;; esac ||
        { echo "FAIL: $run: bytes $got"; exit 1; }
    [ -s "$WORK/sweep/$run/trace.json" ] || { echo "FAIL: $run: no trace.json"; exit 1; }
    if command -v gnuplot > /dev/null; then
        [ -s "$WORK/sweep/gantt_$run.png" ] || { ls "$WORK/sweep"; echo "FAIL: no gantt_$run.png"; exit 1; }
    fi
done
echo "ok bytes per step and Gantt views"
# one rank holds every role; gen has a generator's busy time, and both runs have one
awk -F'\t' 'NR > 1 && ($13 == "-" || $7 == "-") { bad = 1 } END { exit bad }' "$tsv" ||
    { echo "FAIL: a role missing from the table"; exit 1; }
[ -f "$WORK/sweep/one_sync/placement.yaml" ] || { echo "FAIL: placement.yaml not kept"; exit 1; }
if command -v gnuplot > /dev/null; then
    [ -s "$WORK/sweep/throughput.png" ] || { echo "FAIL: no throughput.png"; exit 1; }
fi
# a second call reuses the finished runs
"$here/launch/experiments/placements.sh" --config "$WORK/ppo.yaml" --out "$WORK/sweep" \
    "$WORK/one.yaml" -- episodes=16 > "$WORK/again.log" 2>&1
if grep -q "^== " "$WORK/again.log"; then echo "FAIL: a finished run was redone"; exit 1; fi

# refusals: no world_size in a placement, no configuration
set +e
"$here/launch/experiments/placements.sh" --config "$WORK/ppo.yaml" --out "$WORK/x" \
    "$WORK/single.yaml" > "$WORK/err.log" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "single.yaml: no 'world_size: N' line" "$WORK/err.log" ||
    { cat "$WORK/err.log"; echo "FAIL: a placement without world_size accepted"; exit 1; }
set +e
"$here/launch/experiments/placements.sh" --out "$WORK/x" "$WORK/one.yaml" > "$WORK/err.log" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "\-\-config C.yaml is required" "$WORK/err.log" ||
    { cat "$WORK/err.log"; echo "FAIL: no --config accepted"; exit 1; }
echo "all sweep checks passed"
