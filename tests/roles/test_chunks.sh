#!/bin/sh
# test_chunks.sh: a block cut into more micro batches than the roles once had room for (4096):
# 4100 rollouts one row at a time give the metrics of the same step in 41 micro batches, so no
# role may stop early (rows left at zero) or abort.
. "$(dirname "$0")/common.sh"
make_inputs
run_ppo 1 single one episodes=4100 ppo.num_rollout_samples=4100 \
    ppo.rollout_micro_batch_size=1 generation.max_new_tokens=4 runtime.timeout_s=300
run_ppo 1 single wide episodes=4100 ppo.num_rollout_samples=4100 \
    ppo.rollout_micro_batch_size=100 generation.max_new_tokens=4 runtime.timeout_s=300
"$METRICS_CHECK" lines "$WORK/one/metrics.jsonl" 1
# other micro batches are other GEMM shapes: the same numbers up to float rounding
"$METRICS_CHECK" same "$WORK/one/metrics.jsonl" "$WORK/wide/metrics.jsonl" 1e-4
