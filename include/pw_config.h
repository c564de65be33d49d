/* pw_config.h: the run configuration of a PPO run: one typed table of every key over PwConfig,
 * read, checked and written by the schema functions of pw_cfg.h (typed entry points here). */
#ifndef PW_CONFIG_H
#define PW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pw_algo.h" /* PwKlEstimator, PwRewardObjective, PwLrDecay: one owner for each enum */
#include "pw_cfg.h"   /* the schema machinery; PwConfig is its instance for a PPO run */
#include "pw_model.h" /* PwPrecision */

/* ---- value types ---------------------------------------------------------------------- */

typedef enum { PW_STOP_EOS = 0, PW_STOP_PERIOD, PW_STOP_NONE } PwStopToken;
/* ppo.kl_penalty_in: the KL to the reference in the per-token rewards (PPO's) or as a term of
 * the actor's loss (GRPO's). */
typedef enum { PW_KL_IN_REWARD = 0, PW_KL_IN_LOSS } PwKlPenaltyIn;

/* ---- the configuration: plain data, one field per key of the table ------------------- */
/* Integers are int64_t everywhere so that the table needs one integer type; the ranges keep
 * every value small enough for an int where a consumer wants one. Strings are never NULL
 * after pw_config_defaults ("" means not given). */

typedef struct PwPpoConfig {
    double initial_policy_kl_penalty;
    bool use_absolute_kl;
    PwKlEstimator kl_estimator;
    bool adaptive_kl;
    double target_kl;
    int64_t kl_horizon;
    double discount_factor;
    double gae_lambda;
    bool normalize_advantages;
    double entropy_bonus;
    double ratio_eps;
    int64_t num_rollout_samples;
    int64_t rollout_micro_batch_size;
    int64_t micro_batch_size; /* 0: rollout_micro_batch_size */
    int64_t epochs;
    int64_t minibatches;
    PwKlPenaltyIn kl_penalty_in;
    double kl_loss_coef;
    PwLossAgg loss_aggregation;
    PwOffPolicy off_policy;
    double tis_cap;
} PwPpoConfig;

/* How far the generator may run ahead of the actor (docs/algorithm.md, Async). */
typedef struct PwAsyncConfig {
    int64_t max_staleness;
} PwAsyncConfig;

/* GRPO's group normalisation (algorithm: grpo). */
typedef struct PwGrpoConfig {
    bool scale_by_std;
    double std_eps;
} PwGrpoConfig;

typedef struct PwCriticConfig {
    double loss_clip_val;
    double lr;
    double min_lr;
} PwCriticConfig;

typedef struct PwGenerationConfig {
    int64_t max_new_tokens;
    double temperature;
    int64_t top_k;
    double top_p;
    PwStopToken stop_token;
    int64_t samples_per_prompt;
    PwKVDtype kv_cache_dtype; /* pw_model.h's */
} PwGenerationConfig;

typedef struct PwRewardConfig {
    bool normalize;
    bool non_stop_penalty;
    double penalty_reward_value;
    PwRewardObjective objective;
    double uwo_weight;
    double clip;
} PwRewardConfig;

typedef struct PwOptimConfig {
    double lr;
    int64_t warmup_steps;
    PwLrDecay decay;
    double min_lr;
    double weight_decay;
    double beta1;
    double beta2;
    double eps;
    double grad_clip;
    bool offload_adam_states;
    int64_t zero_stage;
} PwOptimConfig;

typedef struct PwCheckpointConfig {
    int64_t every;
    int64_t keep;
} PwCheckpointConfig;

typedef struct PwEvalConfig {
    int64_t every;
    int64_t num_prompts;
} PwEvalConfig;

typedef struct PwRuntimeConfig {
    double heartbeat_s;
    double timeout_s;
    PwOnNonfinite on_nonfinite;
    int64_t max_skipped_steps;
    double grad_bucket_mb;
    double progress_s;
    bool check_memory;
} PwRuntimeConfig;

typedef struct PwTraceConfig {
    char *path;
    int64_t steps;
} PwTraceConfig;

typedef struct PwLogConfig {
    bool tensorboard; /* metrics as TensorBoard scalars in RUN_DIR/tensorboard (pw_tb.h) */
} PwLogConfig;

/* "fp32", "bf16", NULL: PwPrecision's names in its order, for model.precision here and in the
 * supervised modes' configuration */
extern const char *const pw_precision_names[];

typedef struct PwModelConfig {
    char *sft;
    PwStrList reward;
    char *critic;
    char *gold;
    PwPrecision precision; /* pw_model.h's, by pw_precision_names */
    int64_t lm_head_chunk; /* PwModelOpts.lm_chunk of every model the roles make */
    bool activation_checkpointing; /* PW_ACTS_RECOMPUTE for the trained models */
} PwModelConfig;

typedef struct PwDataConfig {
    char *prompts;
    char *eval_prompts;
    int64_t max_prompt_len;
    char *tokenizer;
    char *prompt_template;
} PwDataConfig;

typedef struct PwConfig {
    int64_t seed;
    PwAsyncConfig async;
    int64_t episodes;
    PwAlgorithm algorithm;
    PwPpoConfig ppo;
    PwGrpoConfig grpo;
    PwCriticConfig critic;
    PwGenerationConfig generation;
    PwRewardConfig reward;
    PwOptimConfig optim;
    PwCheckpointConfig checkpoint;
    PwEvalConfig eval;
    PwRuntimeConfig runtime;
    PwTraceConfig trace;
    PwLogConfig log;
    PwModelConfig model;
    PwDataConfig data;
} PwConfig;

/* ---- the key table ---------------------------------------------------------------------- */

/* The PPO run's schema: its key table over PwConfig and the rules across its keys
 * (src/runtime/config_table.c). The functions below are pw_cfg.h's applied to it, typed for
 * PwConfig, so that callers cannot hand it another struct; pw_cfg.h says what each does. */
extern const PwCfgSchema pw_config_schema;

/* The table, in documentation order. */
static inline const PwCfgKey *pw_config_keys(size_t *n)
{
    if (n) *n = pw_config_schema.nkeys;
    return pw_config_schema.keys;
}
static inline const PwCfgKey *pw_config_find_key(const char *name)
{
    return pw_cfg_find_key(&pw_config_schema, name);
}

/* ---- life cycle ------------------------------------------------------------------------- */

static inline int pw_config_defaults(PwConfig *cfg)
{
    return pw_cfg_defaults(&pw_config_schema, cfg);
}
static inline void pw_config_free(PwConfig *cfg) { pw_cfg_free(&pw_config_schema, cfg); }

static inline int pw_config_load_file(PwConfig *cfg, const char *path, PwErr *err)
{
    return pw_cfg_load_file(&pw_config_schema, cfg, path, err);
}
static inline int pw_config_load_string(PwConfig *cfg, const char *text, const char *label,
                                        PwErr *err)
{
    return pw_cfg_load_string(&pw_config_schema, cfg, text, label, err);
}
static inline int pw_config_apply_override(PwConfig *cfg, const char *arg, PwErr *err)
{
    return pw_cfg_apply_override(&pw_config_schema, cfg, arg, err);
}
/* Ranges, the required paths, and the rules of docs/config.md ("Rules across keys"). */
static inline int pw_config_validate(const PwConfig *cfg, PwErr *err)
{
    return pw_cfg_validate(&pw_config_schema, cfg, err);
}
/* The whole sequence of `ppo_world --config FILE key=value ...`. On error cfg is freed. */
static inline int pw_config_build(PwConfig *cfg, const char *path, const char *const *overrides,
                                  int n, PwErr *err)
{
    return pw_cfg_build(&pw_config_schema, cfg, path, overrides, n, err);
}

/* ---- derived values --------------------------------------------------------------------- */

/* ppo.kl_estimator, with ppo.use_absolute_kl (NeMo-Aligner's spelling) turning k1 into abs. */
PwKlEstimator pw_config_kl_estimator(const PwConfig *cfg);
/* The critic's initial weights: model.critic, else the first reward model ("" if none). */
const char *pw_config_critic_init(const PwConfig *cfg);
/* PPO steps of the run: episodes / num_rollout_samples (rounded down, as open-instruct). */
int64_t pw_config_num_steps(const PwConfig *cfg);
/* The name of an enum value of a key ("k3"), or NULL. */
static inline const char *pw_config_enum_name(const char *key, int value)
{
    return pw_cfg_enum_name(pw_config_find_key(key), value);
}

/* ---- output ----------------------------------------------------------------------------- */

static inline void *pw_config_to_json(const PwConfig *cfg)
{
    return pw_cfg_to_json(&pw_config_schema, cfg);
}
static inline int pw_config_write_yaml(const PwConfig *cfg, FILE *f)
{
    return pw_cfg_write_yaml(&pw_config_schema, cfg, f);
}
static inline int pw_config_save_yaml(const PwConfig *cfg, const char *path, PwErr *err)
{
    return pw_cfg_save_yaml(&pw_config_schema, cfg, path, err);
}
/* E.g. for rank 0 to send with MPI_Bcast and the other ranks to read with
 * pw_config_load_string. */
static inline char *pw_config_yaml_string(const PwConfig *cfg)
{
    return pw_cfg_yaml_string(&pw_config_schema, cfg);
}
static inline int pw_config_check_saved(const PwConfig *cfg, const char *saved_path, PwErr *err)
{
    return pw_cfg_check_saved(&pw_config_schema, cfg, saved_path, err);
}
/* For a resume: a = the saved configuration, b = the one given now. */
static inline int pw_config_diff(const PwConfig *a, const PwConfig *b, PwErr *err)
{
    return pw_cfg_diff(&pw_config_schema, a, b, err);
}
static inline int pw_config_write_markdown(FILE *f)
{
    return pw_cfg_write_markdown(&pw_config_schema, f);
}

#endif
