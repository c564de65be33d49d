#!/bin/sh
# test_step0.sh: docs/algorithm.md's exact checks (Checks that catch real bugs) on step 0: KL is
# exactly 0 while actor == reference; one epoch, one minibatch: train log-probs == logp_old.
. "$(dirname "$0")/common.sh"
make_inputs
run_ppo 1 single out episodes=8
"$METRICS_CHECK" lines "$WORK/out/metrics.jsonl" 1
"$METRICS_CHECK" zero "$WORK/out/metrics.jsonl" 0 objective/kl policy/approxkl_avg \
    policy/clipfrac_avg
