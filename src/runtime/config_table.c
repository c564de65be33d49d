/* config_table.c: the PPO run's schema: its table of keys (type, default, range, doc, where the
 * default comes from), the rules across them, and the values derived from several keys. */
#include <string.h>

#include "config_internal.h"
#include "pw_config.h"

/* Enum stores go through an int pointer, so every enum field must be int-sized. */
_Static_assert(sizeof(PwKlEstimator) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwRewardObjective) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwLrDecay) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwStopToken) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwOnNonfinite) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwAlgorithm) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwLossAgg) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwKlPenaltyIn) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwOffPolicy) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwPrecision) == sizeof(int), "enum field size");

/* The algorithm's enums take their names from the algo layer, which owns them (pw_algo.h);
 * only the stop token, a configuration matter, is named here. */
static const char *const stop_names[] = {"eos", "period", "none", NULL};
static const char *const kl_in_names[] = {"reward", "loss", NULL};
/* Shared with the sft/rm schema (pw_cfg.h): one list for the one key both have. */
const char *const pw_on_nonfinite_names[] = {"stop", "skip_step", NULL};
/* PwPrecision's names (pw_model.h) as its configuration keys read them, for both schemas */
const char *const pw_precision_names[] = {"fp32", "bf16", NULL};
_Static_assert(PW_PRECISION_FP32 == 0 && PW_PRECISION_BF16 == 1 && PW_PRECISION_COUNT == 2,
               "pw_precision_names follows PwPrecision");
/* PwKVDtype's names (pw_model.h) */
static const char *const kv_dtype_names[] = {"auto", "fp32", "bf16", NULL};
_Static_assert(PW_KV_AUTO == 0 && PW_KV_FP32 == 1 && PW_KV_BF16 == 2 && PW_KV_COUNT == 3,
               "kv_dtype_names follows PwKVDtype");

#define OFF(field) offsetof(PwConfig, field)
#define NEMO "NeMo-Aligner"
#define OI "open-instruct"
#define COSTE "Coste et al. reward ensembles"

/* Documentation order: what a run needs first, then the algorithm, then the machinery. */
static const PwCfgKey keys[] = {
    /* ---- the run */
    {"seed", PW_CFG_INT, OFF(seed), "1", 0, PW_CFG_SEED_MAX, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "seed of every random stream (data order, sampling, initialisation)", OI " `seed`"},
    {"async.max_staleness", PW_CFG_INT, OFF(async.max_staleness), "0", 0, PW_MAX_STALENESS,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "k: with a generator role, batch s is sampled with the weights of update max(0, s - k) while "
     "the actor trains on earlier batches (a queue of k batches); 0: sync, 1: one step off",
     "ours: sync is the exact on-policy algorithm (" OI " `async_mode` true is k = 1)"},
    {"episodes", PW_CFG_INT, OFF(episodes), "100000", 1, PW_CFG_COUNT_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "total rollouts to train on; steps = episodes / ppo.num_rollout_samples",
     OI " `total_episodes`"},
    {"algorithm", PW_CFG_ENUM, OFF(algorithm), "ppo", 0, 0, 0, pw_algorithm_names,
     "ppo (a critic and GAE), grpo or rloo (group baselines over generation.samples_per_prompt "
     "responses per prompt, no critic; docs/algorithm.md)",
     "ours (TRL GRPOTrainer, RLOOTrainer; verl `algorithm.adv_estimator`)"},

    /* ---- models and data */
    {"model.sft", PW_CFG_STRING, OFF(model.sft), "", 0, 0, PW_CFG_REQUIRED, NULL,
     "SFT checkpoint folder: initial actor, frozen reference and generator weights",
     NEMO " (actor starts from the SFT model)"},
    {"model.reward", PW_CFG_STRLIST, OFF(model.reward), "[]", 0, 0, PW_CFG_REQUIRED, NULL,
     "reward model checkpoint folders; two or more form an ensemble (reward.objective)",
     COSTE " `rank_config.model_names`"},
    {"model.critic", PW_CFG_STRING, OFF(model.critic), "", 0, 0, 0, NULL,
     "critic checkpoint folder with a value head (value_head.weight: a critic a run saved); "
     "empty: the first of model.reward (its score head seeds the value head)",
     NEMO " (critic starts from the RM)"},
    {"model.gold", PW_CFG_STRING, OFF(model.gold), "", 0, 0, 0, NULL,
     "gold reward model folder, scored at evaluation only; empty: none",
     COSTE " `gold_config.model_name`"},
    {"model.precision", PW_CFG_ENUM, OFF(model.precision), "fp32", 0, 0, 0, pw_precision_names,
     "fp32, or bf16: every role's matrix products (trunk and LM head) take bfloat16 operands "
     "with float32 accumulation; weights, gradients, optimizer and the rest stay float32 "
     "(docs/model.md, Precision). On the CPU bf16 is emulated (slower): it exists to check the "
     "GPU against",
     NEMO " `precision: bf16-mixed` (PyTorch autocast)"},
    {"model.lm_head_chunk", PW_CFG_INT, OFF(model.lm_head_chunk), "0", 0, PW_CFG_COUNT_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     PW_CFG_LM_HEAD_CHUNK_DOC ". The reference, which only scores, makes its logits 1024 rows "
     "at a time where this is 0 or a multiple of 1024, else in these chunks: with no backward, "
     "chunks cost it nothing",
     "Liger-Kernel's chunked linear cross-entropy"},
    {"model.activation_checkpointing", PW_CFG_BOOL, OFF(model.activation_checkpointing),
     "false", 0, 0, 0, NULL, PW_CFG_ACT_CKPT_DOC,
     NEMO " `activations_checkpoint_granularity: full`; TRL, OpenRLHF `gradient_checkpointing`"},
    {"data.prompts", PW_CFG_STRING, OFF(data.prompts), "", 0, 0, PW_CFG_REQUIRED, NULL,
     "training prompts, JSONL", "ours"},
    {"data.eval_prompts", PW_CFG_STRING, OFF(data.eval_prompts), "", 0, 0, 0, NULL,
     "evaluation prompts, JSONL; empty: the first eval.num_prompts of data.prompts", "ours"},
    {"data.max_prompt_len", PW_CFG_INT, OFF(data.max_prompt_len), "256", 1, PW_CFG_SIZE_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "prompts longer than this many tokens are skipped", OI " `max_prompt_token_length`"},
    {"data.tokenizer", PW_CFG_STRING, OFF(data.tokenizer), "", 0, 0, 0, NULL,
     "tokenizer of text prompts {\"prompt\": ...} and of the stop and pad tokens: bytes (its "
     "bytes + SEP), or a Hugging Face byte-level BPE folder (tokenizer.json; docs/tokenizer.md); "
     "empty: prompts are {\"input_ids\": [...]} and the stop token is the last id",
     "ours (open-instruct: the model's tokenizer)"},
    {"data.prompt_template", PW_CFG_STRING, OFF(data.prompt_template), "", 0, 0, 0, NULL,
     "text a text prompt is put into before it is encoded, with {prompt} where the prompt goes "
     "(e.g. a ChatML turn; it stands in for the Jinja chat_template, docs/tokenizer.md); "
     "empty: the prompt as it is",
     "ours (TRL, OpenRLHF: the tokenizer's chat template)"},

    /* ---- PPO */
    {"ppo.initial_policy_kl_penalty", PW_CFG_FLOAT, OFF(ppo.initial_policy_kl_penalty), "0.05",
     0, 0, PW_CFG_MIN, NULL, "beta: weight of the per-token KL penalty against the reference",
     OI " `beta` (" NEMO " example: 0.01)"},
    {"ppo.use_absolute_kl", PW_CFG_BOOL, OFF(ppo.use_absolute_kl), "false", 0, 0, 0, NULL,
     "penalise |kl| (the same as ppo.kl_estimator: abs)",
     OI " k1 (" NEMO " defaults to true)"},
    {"ppo.kl_estimator", PW_CFG_ENUM, OFF(ppo.kl_estimator), "k1", 0, 0, 0,
     pw_kl_estimator_names,
     "per-token KL estimator: k1 log-ratio, k2 half squared, k3 (r-1)-log r, abs |k1|",
     OI " `kl_estimator` kl1"},
    {"ppo.adaptive_kl", PW_CFG_BOOL, OFF(ppo.adaptive_kl), "false", 0, 0, 0, NULL,
     "adapt beta towards ppo.target_kl (Ziegler et al. controller)", NEMO ", " OI " (fixed beta)"},
    {"ppo.target_kl", PW_CFG_FLOAT, OFF(ppo.target_kl), "6", 0, 0, PW_CFG_MIN | PW_CFG_MIN_OPEN,
     NULL, "target KL (sum over tokens) of the adaptive controller",
     "Ziegler et al. 2019 (target 6 nats)"},
    {"ppo.kl_horizon", PW_CFG_INT, OFF(ppo.kl_horizon), "10000", 1, PW_CFG_COUNT_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "horizon (in episodes) of the adaptive controller", "Ziegler et al. 2019"},
    {"ppo.discount_factor", PW_CFG_FLOAT, OFF(ppo.discount_factor), "1", 0, 1,
     PW_CFG_MIN | PW_CFG_MAX, NULL, "gamma of GAE", NEMO " `discount_factor`, " OI " `gamma`"},
    {"ppo.gae_lambda", PW_CFG_FLOAT, OFF(ppo.gae_lambda), "0.95", 0, 1, PW_CFG_MIN | PW_CFG_MAX,
     NULL, "lambda of GAE", NEMO " `gae_lambda`, " OI " `lam`"},
    {"ppo.normalize_advantages", PW_CFG_BOOL, OFF(ppo.normalize_advantages), "true", 0, 0, 0,
     NULL, "whiten advantages over the real tokens of the global batch",
     NEMO " `normalize_advantages`; " OI " always whitens"},
    {"ppo.entropy_bonus", PW_CFG_FLOAT, OFF(ppo.entropy_bonus), "0", 0, 0, PW_CFG_MIN, NULL,
     "weight of the entropy bonus in the actor loss", NEMO " `entropy_bonus`"},
    {"ppo.ratio_eps", PW_CFG_FLOAT, OFF(ppo.ratio_eps), "0.2", 0, 1,
     PW_CFG_MIN | PW_CFG_MIN_OPEN | PW_CFG_MAX, NULL, "clip range of the policy ratio",
     NEMO " `ratio_eps`, " OI " `cliprange`"},
    {"ppo.num_rollout_samples", PW_CFG_INT, OFF(ppo.num_rollout_samples), "512", 1,
     PW_CFG_SIZE_MAX, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "rollouts generated per PPO step (the global batch)",
     NEMO " `num_rollout_samples`"},
    {"ppo.rollout_micro_batch_size", PW_CFG_INT, OFF(ppo.rollout_micro_batch_size), "8", 1,
     PW_CFG_SIZE_MAX, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "sequences per generation micro batch on one rank (and per forward and backward micro "
     "batch while ppo.micro_batch_size is 0)",
     NEMO " `rollout_micro_batch_size`"},
    {"ppo.micro_batch_size", PW_CFG_INT, OFF(ppo.micro_batch_size), "0", 0, PW_CFG_SIZE_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "sequences per forward and backward micro batch of the actor, reference, critic and reward "
     "on one rank (0: ppo.rollout_micro_batch_size)",
     NEMO " `micro_batch_size` and `forward_micro_batch_size` (one size here)"},
    /* 1000: epochs x minibatches (at most 2^20) indexes the optimizer steps of a PPO step in an
     * int */
    {"ppo.epochs", PW_CFG_INT, OFF(ppo.epochs), "1", 1, 1000, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "optimisation passes over each global batch",
     NEMO " `max_epochs` 1 (" OI " `num_epochs`: 4)"},
    {"ppo.minibatches", PW_CFG_INT, OFF(ppo.minibatches), "8", 1, PW_CFG_SIZE_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "optimiser steps per epoch; must divide ppo.num_rollout_samples",
     NEMO " 512 samples / `global_batch_size` 64 (" OI ": 1)"},
    {"ppo.kl_penalty_in", PW_CFG_ENUM, OFF(ppo.kl_penalty_in), "reward", 0, 0, 0, kl_in_names,
     "where the KL to the reference goes: reward (beta x per-token KL in the rewards) or loss "
     "(ppo.kl_loss_coef x KL with ppo.kl_estimator added to the actor loss, GRPO's)",
     OI " (reward); TRL GRPO, verl `use_kl_loss` (loss)"},
    {"ppo.kl_loss_coef", PW_CFG_FLOAT, OFF(ppo.kl_loss_coef), "0.04", 0, 0, PW_CFG_MIN, NULL,
     "weight of the KL loss term with ppo.kl_penalty_in: loss", "TRL GRPO `beta` 0.04"},
    {"ppo.loss_aggregation", PW_CFG_ENUM, OFF(ppo.loss_aggregation), "token", 0, 0, 0,
     pw_loss_agg_names,
     "token: every real token weighs 1 (mean over the minibatch's tokens); sequence: each "
     "response weighs 1 (mean of the per-response token means)",
     OI " token; GRPO paper sequence"},
    {"ppo.off_policy", PW_CFG_ENUM, OFF(ppo.off_policy), "none", 0, 0, 0, pw_off_policy_names,
     "correction for sampling by another policy than the one trained (the generator's older "
     "weights, async.max_staleness): none; tis: each token's policy loss weighted by "
     "min(pi_old / pi_gen, ppo.tis_cap); decoupled: weighted by pi_old / pi_gen, tokens above "
     "ppo.tis_cap left out (0: no cap)", "ours (Yao et al. TIS; AReaL decoupled PPO)"},
    {"ppo.tis_cap", PW_CFG_FLOAT, OFF(ppo.tis_cap), "2", 0, 1e6, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "cap of the importance weight pi_old / pi_gen with ppo.off_policy tis (> 0) or decoupled",
     "Yao et al. C = 2"},
    {"grpo.scale_by_std", PW_CFG_BOOL, OFF(grpo.scale_by_std), "true", 0, 0, 0, NULL,
     "grpo: divide r - group mean by the group's standard deviation (false: Dr. GRPO)",
     "TRL `scale_rewards`"},
    {"grpo.std_eps", PW_CFG_FLOAT, OFF(grpo.std_eps), "1e-4", 0, 1, PW_CFG_MIN | PW_CFG_MAX,
     NULL, "grpo: added to the group standard deviation before dividing", "TRL 1e-4"},

    /* ---- critic */
    {"critic.loss_clip_val", PW_CFG_FLOAT, OFF(critic.loss_clip_val), "0.2", 0, 0, PW_CFG_MIN,
     NULL, "value clip around the rollout values; 0: plain squared error",
     NEMO " `loss_clip_val`, " OI " `cliprange_value`"},
    {"critic.lr", PW_CFG_FLOAT, OFF(critic.lr), "9e-6", 0, 0, PW_CFG_MIN | PW_CFG_MIN_OPEN, NULL,
     "critic peak learning rate (other optimiser settings: optim.*)", NEMO " critic `optim.lr`"},
    {"critic.min_lr", PW_CFG_FLOAT, OFF(critic.min_lr), "9e-7", 0, 0, PW_CFG_MIN, NULL,
     "critic learning rate at the end of the decay", NEMO " critic `sched.min_lr`"},

    /* ---- generation */
    {"generation.max_new_tokens", PW_CFG_INT, OFF(generation.max_new_tokens), "53", 1,
     PW_CFG_SIZE_MAX, PW_CFG_MIN | PW_CFG_MAX, NULL, "response length limit in tokens",
     OI " `response_length`"},
    {"generation.temperature", PW_CFG_FLOAT, OFF(generation.temperature), "1", 0, 0,
     PW_CFG_MIN | PW_CFG_MIN_OPEN, NULL,
     "sampling temperature (the actor scores with the same temperature)",
     NEMO " `sampling_params.temperature` (" OI ": 0.7)"},
    {"generation.top_k", PW_CFG_INT, OFF(generation.top_k), "0", 0, PW_CFG_COUNT_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "sample from the k most likely tokens; 0: off", NEMO " `sampling_params.top_k`"},
    {"generation.top_p", PW_CFG_FLOAT, OFF(generation.top_p), "1", 0, 1,
     PW_CFG_MIN | PW_CFG_MIN_OPEN | PW_CFG_MAX, NULL, "nucleus sampling mass; 1: off",
     NEMO " `sampling_params.top_p`"},
    {"generation.stop_token", PW_CFG_ENUM, OFF(generation.stop_token), "eos", 0, 0, 0,
     stop_names, "token that ends a response: eos (end of text), period ('.') or none",
     OI " PPO docs: `--stop_token eos`"},
    {"generation.kv_cache_dtype", PW_CFG_ENUM, OFF(generation.kv_cache_dtype), "auto", 0, 0, 0,
     kv_dtype_names,
     "what the KV cache of generation stores: auto (bf16 when model.precision is bf16, else "
     "fp32), fp32, or bf16 (keys and values rounded to bfloat16: half the memory and the bytes "
     "each decode step reads; the attention still computes in float32) (docs/model.md, KV cache)",
     "vLLM `kv_cache_dtype` (auto: the model's dtype)"},
    /* 1024: a group is one prompt's responses; more than this is no use on one batch */
    {"generation.samples_per_prompt", PW_CFG_INT, OFF(generation.samples_per_prompt), "1", 1,
     1024, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "responses per prompt n: a step's ppo.num_rollout_samples rows hold N/n prompts, each n "
     "times in consecutive rows; grpo and rloo need n >= 2", "TRL `num_generations`, verl "
     "`rollout.n`"},

    /* ---- reward */
    {"reward.objective", PW_CFG_ENUM, OFF(reward.objective), "mean", 0, 0, 0,
     pw_reward_objective_names,
     "ensemble score: mean, wco (min over members) or uwo (mean - uwo_weight * variance)",
     COSTE " `objective_name`"},
    {"reward.uwo_weight", PW_CFG_FLOAT, OFF(reward.uwo_weight), "0.1", 0, 0, PW_CFG_MIN, NULL,
     "variance weight of the uwo objective", COSTE " `uwo_weight` example"},
    {"reward.normalize", PW_CFG_BOOL, OFF(reward.normalize), "false", 0, 0, 0, NULL,
     "normalise scores by the running mean and variance of all scores so far (before clip)",
     NEMO " `reward_standardization.enable` (off); " OI " has none"},
    {"reward.non_stop_penalty", PW_CFG_BOOL, OFF(reward.non_stop_penalty), "true", 0, 0, 0,
     NULL, "a response without the stop token scores reward.penalty_reward_value",
     OI " PPO docs, implementation details (code flag `non_stop_penalty`)"},
    {"reward.penalty_reward_value", PW_CFG_FLOAT, OFF(reward.penalty_reward_value), "-10", 0, 0,
     0, NULL, "score of a response that never emitted the stop token",
     OI " PPO docs: `--penalty_reward_value -10.0` (code default -1)"},
    {"reward.clip", PW_CFG_FLOAT, OFF(reward.clip), "0", 0, 0, PW_CFG_MIN, NULL,
     "clip scores to [-clip, clip]; 0: off", NEMO ", " OI " (no clipping)"},

    /* ---- actor optimiser (AdamW) */
    {"optim.lr", PW_CFG_FLOAT, OFF(optim.lr), "9e-7", 0, 0, PW_CFG_MIN | PW_CFG_MIN_OPEN, NULL,
     "actor peak learning rate", NEMO " actor `optim.lr` (" OI ": 2e-5)"},
    {"optim.warmup_steps", PW_CFG_INT, OFF(optim.warmup_steps), "10", 0, PW_CFG_COUNT_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "linear warm-up steps (actor and critic)", NEMO " `sched.warmup_steps`"},
    {"optim.decay", PW_CFG_ENUM, OFF(optim.decay), "cosine", 0, 0, 0,
     pw_lr_decay_names,
     "learning-rate decay after warm-up, down to min_lr at the last step",
     NEMO " `CosineAnnealing` (" OI ": linear)"},
    {"optim.min_lr", PW_CFG_FLOAT, OFF(optim.min_lr), "9e-8", 0, 0, PW_CFG_MIN, NULL,
     "actor learning rate at the end of the decay", NEMO " actor `sched.min_lr`"},
    {"optim.weight_decay", PW_CFG_FLOAT, OFF(optim.weight_decay), "0.1", 0, 0, PW_CFG_MIN, NULL,
     "decoupled weight decay (actor and critic)", NEMO " `optim.weight_decay`"},
    {"optim.beta1", PW_CFG_FLOAT, OFF(optim.beta1), "0.9", 0, 1, PW_CFG_MIN | PW_CFG_MAX |
     PW_CFG_MAX_OPEN, NULL, "Adam first-moment decay", NEMO " `optim.betas[0]`"},
    {"optim.beta2", PW_CFG_FLOAT, OFF(optim.beta2), "0.98", 0, 1, PW_CFG_MIN | PW_CFG_MAX |
     PW_CFG_MAX_OPEN, NULL, "Adam second-moment decay", NEMO " `optim.betas[1]`"},
    {"optim.eps", PW_CFG_FLOAT, OFF(optim.eps), "1e-8", 0, 0, PW_CFG_MIN | PW_CFG_MIN_OPEN, NULL,
     "Adam epsilon", "AdamW's usual 1e-8 (" OI ": 1e-5)"},
    {"optim.grad_clip", PW_CFG_FLOAT, OFF(optim.grad_clip), "1", 0, 0, PW_CFG_MIN, NULL,
     "clip gradients to this global norm; 0: off", NEMO " `gradient_clip_val`"},
    {"optim.offload_adam_states", PW_CFG_BOOL, OFF(optim.offload_adam_states), "false", 0, 0, 0,
     NULL,
     "the actor's and critic's AdamW moments move to host memory after each update and back "
     "before the next, leaving their device memory to generation and scoring; on the CPU it "
     "changes nothing",
     NEMO " `offload_adam_states`"},
    {"optim.zero_stage", PW_CFG_INT, OFF(optim.zero_stage), "0", 0, 2,
     PW_CFG_MIN | PW_CFG_MAX | PW_CFG_FREE, NULL,
     "1: the actor's and the critic's AdamW moments are split over their role's ranks, each "
     "rank keeping and updating its share of the weights, which an all-gather then hands to "
     "every rank; at model.precision bf16 the float32 master weights of the layers' matrices "
     "are split too (docs/model.md, The optimiser's share); 2: the gradients too, each layer's "
     "summed into its owners as soon as the backward is done with it (docs/model.md, Gradients "
     "in shares); 0: each rank keeps all of them (as does a role of one rank, which the run "
     "notes)",
     "OpenRLHF and DeepSpeed `--zero_stage` (their stages 1 and 2); Megatron's distributed "
     "optimizer"},

    /* ---- checkpoints, evaluation, runtime */
    {"checkpoint.every", PW_CFG_INT, OFF(checkpoint.every), "10", 0, PW_CFG_COUNT_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "save a checkpoint every this many steps (and at the end); 0: only at the end",
     NEMO " `save_interval`"},
    {"checkpoint.keep", PW_CFG_INT, OFF(checkpoint.keep), "1", 0, PW_CFG_COUNT_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "newest checkpoints kept on disk; 0: keep all", NEMO " `save_top_k`"},
    {"eval.every", PW_CFG_INT, OFF(eval.every), "10", 0, PW_CFG_COUNT_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "evaluate every this many steps; 0: never", NEMO " `val_check_interval`"},
    {"eval.num_prompts", PW_CFG_INT, OFF(eval.num_prompts), "512", 1, PW_CFG_SIZE_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "prompts per evaluation", NEMO " `num_val_samples`"},
    {"runtime.heartbeat_s", PW_CFG_FLOAT, OFF(runtime.heartbeat_s), "10", 0, 0, PW_CFG_MIN | PW_CFG_FREE,
     NULL,
     "abort the job when a rank has given no sign of life for this long (stopped, or its host "
     "gone), whatever the others wait for; 0: off", "ours (docs/runtime.md, Heartbeat)"},
    {"runtime.timeout_s", PW_CFG_FLOAT, OFF(runtime.timeout_s), "600", 0, 0, PW_CFG_MIN | PW_CFG_FREE, NULL,
     "abort the job when a message or collective waits longer than this; 0: never",
     "PyTorch's NCCL process-group time-out (10 min)"},
    {"runtime.on_nonfinite", PW_CFG_ENUM, OFF(runtime.on_nonfinite), "stop", 0, 0, 0,
     pw_on_nonfinite_names,
     "a NaN or infinite loss or gradient: stop the run with a message naming the step and the "
     "quantity, or skip_step: drop that optimiser step's update and go on; weights gone bad "
     "stop either way, and no checkpoint is written after it (docs/roles.md)",
     "ours (Megatron-LM stops on a NaN loss or gradient; PyTorch's GradScaler skips such steps)"},
    {"runtime.max_skipped_steps", PW_CFG_INT, OFF(runtime.max_skipped_steps), "10", 1,
     PW_CFG_COUNT_MAX, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "with runtime.on_nonfinite: skip_step, stop when this many optimiser steps of one model "
     "in a row were skipped (the run is not recovering)", "ours"},
    {"runtime.grad_bucket_mb", PW_CFG_FLOAT, OFF(runtime.grad_bucket_mb), "25", 0, 1048576,
     PW_CFG_MIN | PW_CFG_MAX | PW_CFG_FREE, NULL,
     "the actor's and critic's gradients are summed over their ranks in buckets of about this "
     "many MiB, each as soon as the backward of the last micro batch has written it, while "
     "the lower layers are still in backward; 0: one sum of all of them after the backward "
     "(docs/runtime.md, Gradient buckets); not used with optim.zero_stage 2, whose backwards "
     "sum their gradients group by group", "PyTorch DDP's `bucket_cap_mb` (25)"},
    {"runtime.progress_s", PW_CFG_FLOAT, OFF(runtime.progress_s), "30", 0, 86400,
     PW_CFG_MIN | PW_CFG_MAX | PW_CFG_FREE, NULL,
     "print a progress line (step, steps/s, time left, score, KL) at most this often, and "
     "after the last step; 0: off", "ours (as the quickstart's stage lines)"},
    {"runtime.check_memory", PW_CFG_BOOL, OFF(runtime.check_memory), "true", 0, 0, PW_CFG_FREE,
     NULL,
     "before the models load, refuse a run whose memory plan (`--dry-run --config`) is more "
     "than the memory its ranks share has free: the host's for the CPU ranks of a node "
     "(MemAvailable, the cgroup's limit), a GPU's for the ranks on it (docs/placement.md, "
     "Memory plan); false: load anyway",
     "ours"},
    {"trace.path", PW_CFG_STRING, OFF(trace.path), "", 0, 0, PW_CFG_FREE, NULL,
     "write a timeline of every rank here at the end of the run, a Chrome trace event file "
     "(docs/trace.md); its folder must exist; empty: no trace", "ours"},
    {"trace.steps", PW_CFG_INT, OFF(trace.steps), "3", 1, 10000,
     PW_CFG_MIN | PW_CFG_MAX | PW_CFG_FREE, NULL,
     "steps traced, from the first step of the run: bounds the file (each step adds a few "
     "hundred spans per rank)", "ours"},
    {"log.tensorboard", PW_CFG_BOOL, OFF(log.tensorboard), "false", 0, 0, PW_CFG_FREE, NULL,
     "also write the numbers of metrics.jsonl and eval.jsonl as TensorBoard scalars, in an "
     "event file of RUN_DIR/tensorboard/ (`tensorboard --logdir RUN_DIR`; docs/roles.md, "
     "TensorBoard); a resumed run adds a file that hides the steps after its checkpoint",
     "OpenRLHF `use_tensorboard`, TRL `report_to: tensorboard`, NeMo-Aligner "
     "`create_tensorboard_logger`"},
};

/* ---- rules across keys ---------------------------------------------------------------- */

static int check_reward_list(const PwStrList *l, PwErr *err)
{
    for (int i = 0; i < l->n; i++) {
        if (!l->items[i][0]) return pw_errf(err, "model.reward: member %d is empty", i + 1);
        for (int j = 0; j < i; j++)
            if (!strcmp(l->items[i], l->items[j]))
                return pw_errf(err, "model.reward: member %d repeats member %d ('%s')", i + 1,
                               j + 1, l->items[i]);
    }
    return 0;
}

static int check_rules(const void *any, PwErr *err)
{
    const PwConfig *cfg = any;
    if (check_reward_list(&cfg->model.reward, err)) return -1;

    const PwPpoConfig *p = &cfg->ppo;
    if (p->num_rollout_samples % p->minibatches)
        return pw_errf(err, "ppo.minibatches (%lld) must divide ppo.num_rollout_samples (%lld)",
                       (long long)p->minibatches, (long long)p->num_rollout_samples);
    int64_t n = cfg->generation.samples_per_prompt;
    if (cfg->algorithm != PW_ALGO_PPO && n < 2)
        return pw_errf(err,
                       "algorithm: %s needs generation.samples_per_prompt >= 2 (got %lld): its "
                       "baseline is the other responses to the same prompt",
                       pw_algorithm_name(cfg->algorithm), (long long)n);
    if (p->num_rollout_samples % n)
        return pw_errf(err,
                       "ppo.num_rollout_samples (%lld) must be a multiple of "
                       "generation.samples_per_prompt (%lld): every prompt gets all its responses "
                       "in one step",
                       (long long)p->num_rollout_samples, (long long)n);
    if (p->rollout_micro_batch_size > p->num_rollout_samples)
        return pw_errf(err,
                       "ppo.rollout_micro_batch_size (%lld) must not exceed "
                       "ppo.num_rollout_samples (%lld)",
                       (long long)p->rollout_micro_batch_size, (long long)p->num_rollout_samples);
    if (p->micro_batch_size > p->num_rollout_samples)
        return pw_errf(err,
                       "ppo.micro_batch_size (%lld) must not exceed ppo.num_rollout_samples (%lld)",
                       (long long)p->micro_batch_size, (long long)p->num_rollout_samples);
    if (cfg->episodes < p->num_rollout_samples)
        return pw_errf(err,
                       "episodes (%lld) must be at least ppo.num_rollout_samples (%lld), "
                       "or the run has no PPO step",
                       (long long)cfg->episodes, (long long)p->num_rollout_samples);
    if (p->use_absolute_kl && p->kl_estimator != PW_KL_K1 && p->kl_estimator != PW_KL_ABS)
        return pw_errf(err,
                       "ppo.use_absolute_kl: true conflicts with ppo.kl_estimator: %s "
                       "(use_absolute_kl means kl_estimator: abs)",
                       pw_config_enum_name("ppo.kl_estimator", (int)p->kl_estimator));
    if (p->adaptive_kl && p->initial_policy_kl_penalty <= 0)
        return pw_errf(err, "ppo.adaptive_kl needs ppo.initial_policy_kl_penalty > 0: the "
                            "controller scales beta and cannot move it from 0");
    if (pw_cfg_rule_not_above("optim.min_lr", cfg->optim.min_lr, "optim.lr", cfg->optim.lr, err) ||
        pw_cfg_rule_not_above("critic.min_lr", cfg->critic.min_lr, "critic.lr", cfg->critic.lr,
                              err))
        return -1;
    if (p->off_policy == PW_OFFPOL_TIS && p->tis_cap <= 0)
        return pw_errf(err, "ppo.off_policy: tis needs ppo.tis_cap > 0 (got %g): it is the "
                            "largest importance weight a token gets", p->tis_cap);
    if (pw_cfg_rule_template("data.prompt_template", cfg->data.prompt_template, err)) return -1;
    if (cfg->data.prompt_template[0] && !cfg->data.tokenizer[0])
        return pw_errf(err, "data.prompt_template needs data.tokenizer: it applies to text "
                            "prompts, and {\"input_ids\"} prompts are used as given");
    if (cfg->reward.non_stop_penalty && cfg->generation.stop_token == PW_STOP_NONE)
        return pw_errf(err, "reward.non_stop_penalty: true needs a stop token, but "
                            "generation.stop_token is none (every response would be penalised)");
    return 0;
}

const PwCfgSchema pw_config_schema = {
    .name = "ppo",
    .title = "ppo_world: effective run configuration (every key, defaults included)",
    .keys = keys,
    .nkeys = PW_ARRAY_LEN(keys),
    .size = sizeof(PwConfig),
    .check = check_rules,
};

/* ---- derived values --------------------------------------------------------------------- */

PwKlEstimator pw_config_kl_estimator(const PwConfig *cfg)
{
    if (cfg->ppo.use_absolute_kl && cfg->ppo.kl_estimator == PW_KL_K1) return PW_KL_ABS;
    return cfg->ppo.kl_estimator;
}

const char *pw_config_critic_init(const PwConfig *cfg)
{
    if (cfg->model.critic && cfg->model.critic[0]) return cfg->model.critic;
    if (cfg->model.reward.n > 0) return cfg->model.reward.items[0];
    return "";
}

int64_t pw_config_num_steps(const PwConfig *cfg)
{
    return cfg->ppo.num_rollout_samples > 0 ? cfg->episodes / cfg->ppo.num_rollout_samples : 0;
}
