#!/bin/sh
# test_trace.sh: trace.path writes one Chrome trace file of every rank (docs/trace.md) and
# runtime.progress_s a progress line. On 1 rank and on 5 (sync and async): the file is the
# Chrome format, spans end after they start and carry their step, spans of one rank never
# overlap unless nested, every message sent appears received on the peer's track with the same
# bytes, and the bytes sent between ranks are comm/bytes_sent; trace.steps bounds the steps
# traced; a trace.path whose folder is missing is an error before the run.
. "$(dirname "$0")/common.sh"
make_inputs

# One rank: every message goes through memory, none between ranks.
run_ppo 1 single one trace.path="$WORK/one.json" trace.steps=3
"$TRACE_CHECK" file "$WORK/one.json" 1 0 3 "$WORK/one/metrics.jsonl"
"$METRICS_CHECK" zero "$WORK/one/metrics.jsonl" 2 comm/bytes_sent comm/bytes_collective

# Five ranks, sync, with a progress line and an evaluation after every step (the evaluation's
# messages are in the file, outside the steps, and not in comm/bytes_sent).
run_ppo 5 five five trace.path="$WORK/five.json" runtime.progress_s=0.001 eval.every=1 \
    eval.num_prompts=4 > "$WORK/five.log"
"$TRACE_CHECK" file "$WORK/five.json" 5 0 3 "$WORK/five/metrics.jsonl"
"$TRACE_CHECK" progress "$WORK/five.log" "$WORK/five/metrics.jsonl"
grep -c '^\[ppo [123]/3\]' "$WORK/five.log" | grep -qx 3 ||
    { echo "FAIL: not 3 progress lines"; exit 1; }
# By hand: 8 rollouts x 8 response tokens x 4 bytes = 256 bytes of tokens from the generator to
# each of actor, reference, critic and reward (4 ranks); the reward's 8 scores are 32 bytes.
for want in "tokens 4 1024" "logp_gen 1 256" "logp_ref 1 256" "values 1 256" "scores 1 32" \
            "returns 1 256"; do
    set -- $want
    got=$("$TRACE_CHECK" kind "$WORK/five.json" 1 "$1")
    [ "$got" = "$2 $3" ] || { echo "FAIL: $1 at step 1: '$got', expected '$2 $3'"; exit 1; }
done
echo "messages of step 1 as worked by hand"

# The checker fails a receive whose bytes differ from the send's, and a span that outlasts the
# step holding it (so its passes above mean something).
sed 's/"bytes":256,"role":"actor","kind":"tokens"/"bytes":255,"role":"actor","kind":"tokens"/' \
    "$WORK/five.json" > "$WORK/bad_bytes.json"
sed 's/\("name":"evaluate","cat":"phase","ph":"X","ts":[0-9.e+-]*,"dur":\)[0-9.e+-]*/\11e12/' \
    "$WORK/five.json" > "$WORK/bad_span.json"
for f in bad_bytes bad_span; do
    ! cmp -s "$WORK/five.json" "$WORK/$f.json" ||
        { echo "FAIL: $f: the edit did not apply"; exit 1; }
    if "$TRACE_CHECK" file "$WORK/$f.json" 5 0 3 2> "$WORK/$f.log"; then
        echo "FAIL: trace_check passed $f"; exit 1
    fi
    cat "$WORK/$f.log"
done

# Async on five ranks, 5 steps, the first 2 traced: the weights sent at step 1 arrive in step 2
# and are still in the file, on both sides.
run_ppo 5 five async async.max_staleness=1 episodes=40 trace.path="$WORK/async.json" trace.steps=2 \
    runtime.progress_s=0 > "$WORK/async.log"
"$TRACE_CHECK" file "$WORK/async.json" 5 0 2 "$WORK/async/metrics.jsonl"
[ "$("$TRACE_CHECK" kind "$WORK/async.json" 1 weights | cut -d' ' -f1)" = 1 ] ||
    { echo "FAIL: the weights of step 1 are not in the async trace"; exit 1; }
"$METRICS_CHECK" lines "$WORK/async/metrics.jsonl" 5
if grep -q '^\[ppo' "$WORK/async.log"; then echo "FAIL: progress line with progress_s 0"; exit 1; fi

# Data parallel: the actor and the critic on two ranks each, their all-reduces in the trace
# with the same calls on both ranks, and their bytes comm/bytes_collective.
placement dp 'actor: { ranks: [0, 1] }' 'reference: { ranks: [0] }' 'critic: { ranks: [0, 1] }' \
    'reward: { ranks: [1] }' 'generator: { ranks: [1] }'
run_ppo 2 dp dp trace.path="$WORK/dp.json" episodes=16 runtime.progress_s=0 > /dev/null
"$TRACE_CHECK" file "$WORK/dp.json" 2 0 2 "$WORK/dp/metrics.jsonl"
if "$METRICS_CHECK" zero "$WORK/dp/metrics.jsonl" 1 comm/bytes_collective > /dev/null; then
    echo "FAIL: no collective bytes with data-parallel actor and critic"; exit 1
fi

# Bad paths: an error naming the key before any step, no metrics.
for bad in "$WORK/missing/t.json:does not exist" "$WORK:is a folder"; do
    path=${bad%%:*} want=${bad#*:}
    if run_ppo 1 single bad trace.path="$path" > "$WORK/bad.log" 2>&1; then
        echo "FAIL: trace.path=$path accepted"; exit 1
    fi
    grep -q "trace.path: .*$want" "$WORK/bad.log" ||
        { echo "FAIL: message for $path:"; cat "$WORK/bad.log"; exit 1; }
    [ ! -e "$WORK/bad/metrics.jsonl" ] || { echo "FAIL: a step ran with trace.path=$path"; exit 1; }
done
echo "missing folder and folder refused"
