#!/bin/sh
# test_step0.sh: the checks of ppo.md on the first step: KL is exactly 0 while actor == reference,
# and with one epoch and one minibatch the train-time log-probs equal logp_old bit for bit.
. "$(dirname "$0")/common.sh"
make_inputs
run_ppo 1 single out episodes=8
"$METRICS_CHECK" lines "$WORK/out/metrics.jsonl" 1
"$METRICS_CHECK" zero "$WORK/out/metrics.jsonl" 0 objective/kl policy/approxkl_avg \
    policy/clipfrac_avg
