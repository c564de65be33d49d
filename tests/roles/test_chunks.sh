#!/bin/sh
# test_chunks.sh: a block cut into more micro batches than the roles once had room for (4096):
# 4100 rollouts one row at a time give the metrics of the same step in 41 micro batches, so no
# role may stop early (rows left at zero) or abort. Then generation in batches of its own size.
. "$(dirname "$0")/common.sh"
make_inputs
run_ppo 1 single one episodes=4100 ppo.num_rollout_samples=4100 \
    ppo.rollout_micro_batch_size=1 generation.max_new_tokens=4 runtime.timeout_s=300
run_ppo 1 single wide episodes=4100 ppo.num_rollout_samples=4100 \
    ppo.rollout_micro_batch_size=100 generation.max_new_tokens=4 runtime.timeout_s=300
"$METRICS_CHECK" lines "$WORK/one/metrics.jsonl" 1
# other micro batches are other GEMM shapes: the same numbers up to float rounding
"$METRICS_CHECK" same "$WORK/one/metrics.jsonl" "$WORK/wide/metrics.jsonl" 1e-4
# Generation's batch apart from the passes' (ppo.micro_batch_size): the 8 rollouts of a step
# sampled as one batch and trained in micro batches of 4 give the run that samples them as two
# batches of 4; a row's tokens do not depend on the batch it was sampled in.
run_ppo 1 single gen4 ppo.rollout_micro_batch_size=4
run_ppo 1 single gen8 ppo.rollout_micro_batch_size=8 ppo.micro_batch_size=4
"$METRICS_CHECK" lines "$WORK/gen8/metrics.jsonl" 3
"$METRICS_CHECK" same "$WORK/gen4/metrics.jsonl" "$WORK/gen8/metrics.jsonl" 1e-4
