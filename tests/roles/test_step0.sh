#!/bin/sh
# test_step0.sh: docs/algorithm.md's exact checks (Checks that catch real bugs) on step 0: KL is
# exactly 0 while actor == reference; one epoch, one minibatch: train log-probs == logp_old.
. "$(dirname "$0")/common.sh"
make_inputs
run_ppo 1 single out episodes=8
"$METRICS_CHECK" lines "$WORK/out/metrics.jsonl" 1
"$METRICS_CHECK" zero "$WORK/out/metrics.jsonl" 0 objective/kl policy/approxkl_avg \
    policy/clipfrac_avg
# The same at a sampling temperature: the actor and the reference score with the temperature
# the generator sampled at, so the generator's log-probs are the actor's up to rounding.
run_ppo 1 single hot episodes=8 generation.temperature=0.7
"$METRICS_CHECK" zero "$WORK/hot/metrics.jsonl" 0 objective/kl policy/approxkl_avg \
    policy/clipfrac_avg
"$METRICS_CHECK" below "$WORK/hot/metrics.jsonl" 0 generator/logprob_diff 1e-5
# The LM head in chunks of 5 rows (model.lm_head_chunk; docs/model.md, The LM head in chunks):
# the actor, the reference and the training forward chunk alike, so the exact checks hold, and
# the generator's log-probs are the whole head's to rounding.
run_ppo 1 single chunk episodes=8 generation.temperature=0.7 model.lm_head_chunk=5
"$METRICS_CHECK" zero "$WORK/chunk/metrics.jsonl" 0 objective/kl policy/approxkl_avg \
    policy/clipfrac_avg
"$METRICS_CHECK" below "$WORK/chunk/metrics.jsonl" 0 generator/logprob_diff 1e-5
# More rows in a micro batch than a tile of the LM head (PW_LM_TILE, 1024: 96 rollouts of up to
# 14 tokens, 1344 rows): the reference makes its logits a tile at a time, the actor all of them
# at once, each tile through the same product, so the exact checks hold.
run_ppo 1 single tiles episodes=96 ppo.num_rollout_samples=96 ppo.micro_batch_size=96 \
    ppo.rollout_micro_batch_size=96
"$METRICS_CHECK" zero "$WORK/tiles/metrics.jsonl" 0 objective/kl policy/approxkl_avg \
    policy/clipfrac_avg
# The same at precision bf16 with a float32 KV cache: every role's products round their operands
# to bfloat16, the generator's cache passes and the actor's and reference's forwards alike, so
# the exact checks hold there too (docs/model.md, Precision). The actor's batch attention also
# rounds q, k, v and its probabilities (the tensor-core attention's twin) where the generator's
# cache attention does not: their log-probs differ by that (measured 1.8e-4 GPT-2, 1.8e-4
# Llama), not by the products.
run_ppo 1 single bf16 episodes=8 generation.temperature=0.7 model.precision=bf16 \
    generation.kv_cache_dtype=fp32
"$METRICS_CHECK" zero "$WORK/bf16/metrics.jsonl" 0 objective/kl policy/approxkl_avg \
    policy/clipfrac_avg
"$METRICS_CHECK" below "$WORK/bf16/metrics.jsonl" 0 generator/logprob_diff 1e-3
# bf16's own cache (kv_cache_dtype auto) stores bfloat16 keys and values: the actor and the
# reference still agree exactly, and the generator's log-probs now move from the actor's by the
# rounding of k and v, which generator/logprob_diff shows (docs/model.md, KV cache).
run_ppo 1 single bf16kv episodes=8 generation.temperature=0.7 model.precision=bf16
"$METRICS_CHECK" zero "$WORK/bf16kv/metrics.jsonl" 0 objective/kl policy/approxkl_avg \
    policy/clipfrac_avg
"$METRICS_CHECK" above "$WORK/bf16kv/metrics.jsonl" 0 generator/logprob_diff 1e-5
"$METRICS_CHECK" below "$WORK/bf16kv/metrics.jsonl" 0 generator/logprob_diff 1e-2
