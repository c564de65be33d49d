#!/usr/bin/env bash
# test_placements.sh: `ppo_world report placements` on the committed run folders of
# tests/fixtures/placement_runs: the table's values worked by hand, "-" for what a run lacks,
# the Gantt rows of one step from a Chrome trace, the plots where gnuplot exists, bad input.
# Expects PPO_WORLD and FIXTURES in the environment (meson sets them).
set -eu
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
RUNS=$FIXTURES/placement_runs
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PPO_WORLD" report placements "$WORK" one_sync="$RUNS/one_sync" five_async="$RUNS/five_async" \
    > "$WORK/stdout" 2> "$WORK/stderr" || fail "report placements failed: $(cat "$WORK/stderr")"
grep -q "one_sync has no trace.json: no Gantt" "$WORK/stderr" || fail "no word of the missing trace"
# one_sync: steps 1 and 2 (step 0 left out): time/step 1.0 and 1.5, so 1.25 s and 0.8 steps/s;
# actor busy 0.1+0.2+0.05+0.3+0.05 = 0.7 (step 0's generate of 5 s is left out), critic 0.2+0.2,
# reward 0.1; no reference, generator, bytes or memory keys: "-".
# five_async: step 1 alone: 0.5 s, 2 steps/s; busy = the phases present; waiting = idle;
# bytes and the actor's peak from step 1 (step 0's 99 left out).
cat > "$WORK/want.tsv" <<'TSV'
placement	steps	steps_per_s	step_s	actor_busy_s	actor_wait_s	reference_busy_s	reference_wait_s	critic_busy_s	critic_wait_s	reward_busy_s	reward_wait_s	generator_busy_s	generator_wait_s	bytes_per_step	actor_peak_mb	reference_peak_mb	critic_peak_mb	reward_peak_mb	generator_peak_mb
one_sync	2	0.8000	1.2500	0.7000	0.0000	-	-	0.4000	0.0000	0.1000	0.0000	-	-	-	-	-	-	-	-
five_async	1	2.0000	0.5000	0.5000	0.1000	-	-	0.3000	0.2500	0.1000	0.4000	0.4000	0.1000	1000	12.5	-	-	-	-
TSV
diff "$WORK/want.tsv" "$WORK/table.tsv" || fail "table.tsv differs"
[ "$(grep -c "^| " "$WORK/table.md")" = 4 ] || fail "table.md: expected a header, its rule and two rows"
grep -q '^| five_async | 1 | 2.0000 | 0.5000 |' "$WORK/table.md" || fail "table.md row"
echo "ok table"

# the Gantt of step 1 (step 0's event left out): ms from the step's first event (the step span
# at 950 ms), the tracks with something drawn in the order the trace names them (rank 0's actor,
# its comm track, rank 4's generator; not rank 3's reward, idle in this step; no track for the
# process name), one colour per name: idle, evaluate, train, allreduce, generate; the step span
# and the messages left out
cat > "$WORK/want.dat" <<'DAT'
0.0000 50.0000 1 0
50.0000 250.0000 0 1
250.0000 550.0000 0 2
450.0000 470.0000 0 3
50.0000 450.0000 2 4
DAT
grep -v '^#' "$WORK/gantt_five_async.dat" | diff "$WORK/want.dat" - || fail "gantt rows differ"
grep -q 'ytics ("rank 0 actor" 0, "rank 0 comm" 1, "rank 4 generator" 2)' \
    "$WORK/gantt_five_async.gp" || { cat "$WORK/gantt_five_async.gp"; fail "gantt tracks"; }
grep -q "lc rgb '#2ca02c' title 'train'" "$WORK/gantt_five_async.gp" || fail "train's colour"
grep -q "^0 one_sync 0.800000$" "$WORK/throughput.dat" || fail "throughput.dat"
echo "ok gantt"
if command -v gnuplot > /dev/null; then
    for png in throughput.png gantt_five_async.png; do
        [ "$(head -c 4 "$WORK/$png" | od -An -c | tr -d ' ')" = "211PNG" ] || fail "$png is no PNG"
    done
    echo "ok plots"
fi

# bad input
refuse() {
    pattern=$1; shift
    set +e
    msg=$("$PPO_WORLD" report placements "$WORK" "$@" 2>&1 >/dev/null)
    rc=$?
    set -e
    [ "$rc" != 0 ] || fail "report placements $*: exit 0"
    echo "$msg" | grep -q -- "$pattern" || fail "report placements $*: '$msg' lacks '$pattern'"
    echo "ok refused: $pattern"
}
refuse "expected NAME=RUN_DIR" "$RUNS/one_sync"
refuse "missing $WORK/none/metrics.jsonl" x="$WORK/none"
mkdir -p "$WORK/bad"
printf '{"step": 0, "time/step": "slow"}\n' > "$WORK/bad/metrics.jsonl"
refuse "metrics.jsonl:1: time/step is not a number" x="$WORK/bad"
printf '{"step": 0, "time/step": 1}\n' > "$WORK/bad/metrics.jsonl"
printf '{"traceEvents": 3}\n' > "$WORK/bad/trace.json"
refuse "trace.json: no traceEvents array" x="$WORK/bad"
printf '{"traceEvents": [{"ph": "X", "name": "train", "pid": 0, "tid": 0, "ts": 1, "args": {"step": 0}}]}' \
    > "$WORK/bad/trace.json"
refuse "a complete event without ts, dur or name" x="$WORK/bad"
printf '{"traceEvents": [' > "$WORK/bad/trace.json"
refuse "trace.json:1: not JSON" x="$WORK/bad"
echo "all report placements checks passed"
