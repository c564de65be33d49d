#!/bin/sh
# test_async.sh: async mode samples batch k+1 with the weights of step k while the actor and
# critic train on batch k. Its semantics do not depend on the placement either: 1, 3 and 5
# ranks give identical metrics; generator/staleness is 0 at step 0 and 1 after; and from
# step 1 on the numbers differ from sync mode (the batch came from older weights).
. "$(dirname "$0")/common.sh"
make_inputs
placement colo 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'critic: { ranks: [1] }' \
    'reward: { ranks: [1] }' 'generator: { ranks: [2] }'
set -- episodes=40 ppo.initial_policy_kl_penalty=0.05
run_ppo 1 single one async.max_staleness=1 "$@"
run_ppo 5 five five async.max_staleness=1 "$@"
run_ppo 3 colo colo async.max_staleness=1 "$@"
run_ppo 5 five sync "$@"
"$METRICS_CHECK" lines "$WORK/five/metrics.jsonl" 5
"$METRICS_CHECK" same "$WORK/one/metrics.jsonl" "$WORK/five/metrics.jsonl"
"$METRICS_CHECK" same "$WORK/one/metrics.jsonl" "$WORK/colo/metrics.jsonl"
"$METRICS_CHECK" zero "$WORK/five/metrics.jsonl" 0 generator/staleness objective/kl
if "$METRICS_CHECK" zero "$WORK/five/metrics.jsonl" 4 generator/staleness; then
    echo "FAIL: staleness 0 at step 4 in async mode"; exit 1
fi
if "$METRICS_CHECK" same "$WORK/five/metrics.jsonl" "$WORK/sync/metrics.jsonl" > /dev/null 2>&1; then
    echo "FAIL: async gave the numbers of sync mode"; exit 1
fi
echo "async differs from sync after step 0, as it must"
