/* settings.c: the configuration keys the roles read, copied into plain numbers.
 * The one file of src/roles that reads PwConfig, so the roles see one flat, validated struct. */
#include <string.h>

#include "pw_config.h"
#include "roles.h"

int pw_settings_from_config(PwSettings *s, const PwConfig *c, PwErr *err)
{
    memset(s, 0, sizeof *s);
    s->seed = (uint64_t)c->seed;
    s->staleness = (int)c->async.max_staleness;
    s->episodes = c->episodes;
    s->steps = pw_config_num_steps(c);
    s->N = (int)c->ppo.num_rollout_samples;
    s->gen_micro = (int)c->ppo.rollout_micro_batch_size;
    s->micro = c->ppo.micro_batch_size ? (int)c->ppo.micro_batch_size : s->gen_micro;
    s->epochs = (int)c->ppo.epochs;
    s->minibatches = (int)c->ppo.minibatches;
    s->beta = c->ppo.initial_policy_kl_penalty;
    s->adaptive_kl = c->ppo.adaptive_kl;
    s->target_kl = c->ppo.target_kl;
    s->kl_horizon = (double)c->ppo.kl_horizon;
    s->kl_estimator = (int)pw_config_kl_estimator(c);
    s->gamma = c->ppo.discount_factor;
    s->lambda = c->ppo.gae_lambda;
    s->normalize_advantages = c->ppo.normalize_advantages;
    s->algorithm = (int)c->algorithm;
    s->group = (int)c->generation.samples_per_prompt;
    s->kl_in_loss = c->ppo.kl_penalty_in == PW_KL_IN_LOSS;
    s->loss_agg = (int)c->ppo.loss_aggregation;
    s->off_policy = (int)c->ppo.off_policy;
    s->tis_cap = c->ppo.tis_cap;
    s->kl_loss_coef = c->ppo.kl_loss_coef;
    s->std_eps = c->grpo.std_eps;
    s->scale_by_std = c->grpo.scale_by_std;
    s->entropy_bonus = c->ppo.entropy_bonus;
    s->ratio_eps = c->ppo.ratio_eps;
    s->vclip = c->critic.loss_clip_val;
    s->critic_lr = c->critic.lr;
    s->critic_min_lr = c->critic.min_lr;
    s->max_new_tokens = (int)c->generation.max_new_tokens;
    s->temperature = c->generation.temperature;
    s->top_k = (int)c->generation.top_k;
    s->top_p = c->generation.top_p;
    s->stop_kind = (int)c->generation.stop_token;
    s->reward_normalize = c->reward.normalize;
    s->non_stop_penalty = c->reward.non_stop_penalty;
    s->penalty = c->reward.penalty_reward_value;
    s->objective = (int)c->reward.objective;
    s->uwo_weight = c->reward.uwo_weight;
    s->reward_clip = c->reward.clip;
    s->lr = c->optim.lr;
    s->min_lr = c->optim.min_lr;
    s->weight_decay = c->optim.weight_decay;
    s->beta1 = c->optim.beta1;
    s->beta2 = c->optim.beta2;
    s->eps = c->optim.eps;
    s->grad_clip = c->optim.grad_clip;
    s->offload_adam = c->optim.offload_adam_states;
    s->zero_stage = (int)c->optim.zero_stage;
    s->warmup = c->optim.warmup_steps;
    s->decay = (int)c->optim.decay;
    s->eval_every = c->eval.every;
    s->eval_num = c->eval.num_prompts;
    s->eval_prompts = c->data.eval_prompts;
    s->gold = c->model.gold;
    s->precision = c->model.precision;
    s->lm_chunk = (int)c->model.lm_head_chunk;
    s->recompute = c->model.activation_checkpointing;
    s->kv_dtype = c->generation.kv_cache_dtype;
    s->checkpoint_every = c->checkpoint.every;
    s->checkpoint_keep = c->checkpoint.keep;
    s->heartbeat_s = c->runtime.heartbeat_s;
    s->timeout_s = c->runtime.timeout_s;
    s->progress_s = c->runtime.progress_s;
    s->check_memory = c->runtime.check_memory;
    s->trace_path = c->trace.path;
    s->trace_steps = c->trace.steps;
    s->tensorboard = c->log.tensorboard;
    s->skip_nonfinite = c->runtime.on_nonfinite == PW_NONFINITE_SKIP_STEP;
    s->max_skipped = c->runtime.max_skipped_steps;
    s->grad_bucket = (size_t)(c->runtime.grad_bucket_mb * 1048576.0);
    s->sft = c->model.sft;
    s->critic = c->model.critic;
    s->prompts = c->data.prompts;
    s->max_prompt_len = (int)c->data.max_prompt_len;
    s->tokenizer = c->data.tokenizer;
    s->prompt_template = c->data.prompt_template;
    if (c->model.reward.n > PW_MAX_MEMBERS)
        return pw_errf(err, "model.reward: %d members, at most %d are supported",
                       c->model.reward.n, PW_MAX_MEMBERS);
    s->n_reward = c->model.reward.n;
    for (int k = 0; k < s->n_reward; k++) s->reward[k] = c->model.reward.items[k];
    if (s->N < 1 || s->steps < 1)
        return pw_errf(err, "episodes (%lld) / ppo.num_rollout_samples (%d) gives no PPO step",
                       (long long)c->episodes, s->N);
    if (s->n_reward < 1) return pw_errf(err, "model.reward: at least one reward model is needed");
    if (!s->sft || !*s->sft)
        return pw_errf(err, "model.sft: the SFT checkpoint folder is required");
    if (!s->prompts || !*s->prompts)
        return pw_errf(err, "data.prompts: the prompt file (JSONL) is required");
    return 0;
}

int pw_settings_save_config(const PwConfig *cfg, const char *path, PwErr *err)
{
    return pw_config_save_yaml(cfg, path, err);
}

int pw_settings_check_saved(const PwConfig *cfg, const char *path, PwErr *err)
{
    return pw_config_check_saved(cfg, path, err);
}
