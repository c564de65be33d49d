/* pw_config.h: the run configuration of ppo_world: one typed table of every key, a YAML loader,
 * dotted command-line overrides, cross-key validation, dumps and the Markdown reference. */
#ifndef PW_CONFIG_H
#define PW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pw_algo.h" /* PwKlEstimator, PwRewardObjective, PwLrDecay: one owner for each enum */
#include "pw_common.h"

/* ---- value types ---------------------------------------------------------------------- */

/* A list of strings (model.reward): items are owned by the list. */
typedef struct PwStrList {
    char **items;
    int n;
} PwStrList;

typedef enum { PW_STOP_EOS = 0, PW_STOP_PERIOD, PW_STOP_NONE } PwStopToken;

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
    int64_t epochs;
    int64_t minibatches;
} PwPpoConfig;

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
    double timeout_s;
} PwRuntimeConfig;

typedef struct PwModelConfig {
    char *sft;
    PwStrList reward;
    char *critic;
    char *gold;
} PwModelConfig;

typedef struct PwDataConfig {
    char *prompts;
    char *eval_prompts;
    int64_t max_prompt_len;
    char *tokenizer;
} PwDataConfig;

typedef struct PwConfig {
    int64_t seed;
    bool async;
    int64_t episodes;
    PwPpoConfig ppo;
    PwCriticConfig critic;
    PwGenerationConfig generation;
    PwRewardConfig reward;
    PwOptimConfig optim;
    PwCheckpointConfig checkpoint;
    PwEvalConfig eval;
    PwRuntimeConfig runtime;
    PwModelConfig model;
    PwDataConfig data;
} PwConfig;

/* ---- the key table ---------------------------------------------------------------------- */

typedef enum {
    PW_CFG_BOOL,
    PW_CFG_INT,
    PW_CFG_FLOAT,
    PW_CFG_STRING,
    PW_CFG_ENUM,
    PW_CFG_STRLIST
} PwCfgType;

/* Range flags: which bounds apply and whether they are open (excluded). */
enum {
    PW_CFG_MIN = 1u << 0,
    PW_CFG_MAX = 1u << 1,
    PW_CFG_MIN_OPEN = 1u << 2,
    PW_CFG_MAX_OPEN = 1u << 3,
    PW_CFG_REQUIRED = 1u << 4 /* string / list that must be non-empty for a run */
};

typedef struct PwCfgKey {
    const char *name;              /* dotted: "ppo.gae_lambda" */
    PwCfgType type;
    size_t offset;                 /* into PwConfig */
    const char *def;               /* the default, spelled as in a YAML file */
    double min, max;               /* used as flags say */
    unsigned flags;
    const char *const *enum_names; /* NULL-terminated, index = stored value */
    const char *doc;               /* one line */
    const char *source;            /* where the default comes from */
} PwCfgKey;

/* The table, in documentation order. */
const PwCfgKey *pw_config_keys(size_t *n);
/* The key of that dotted name, or NULL. */
const PwCfgKey *pw_config_find_key(const char *name);

/* ---- life cycle ------------------------------------------------------------------------- */

/* Fill every field with its default (any previous content is overwritten, not freed).
 * Returns 0, or -1 on allocation failure. */
int pw_config_defaults(PwConfig *cfg);
/* Free the strings and lists; cfg may be reused after pw_config_defaults. */
void pw_config_free(PwConfig *cfg);

/* Read a YAML file over cfg (keys not in the file keep their value). An empty file (or one
 * holding only comments) is valid and changes nothing; a top level that is not a mapping,
 * an unknown key, a key given twice, a wrong type or an out-of-range value is an error that
 * names path:line:column and the dotted key. Ranges are checked here; cross-key rules are
 * pw_config_validate's. After an error cfg may hold part of the file: report and stop. */
int pw_config_load_file(PwConfig *cfg, const char *path, PwErr *err);
/* The same from a string; `label` stands for the file name in messages. */
int pw_config_load_string(PwConfig *cfg, const char *text, const char *label, PwErr *err);

/* Apply one "key.sub=value" argument: the value is read as a YAML value with the type rules
 * of the file (so model.reward=[a,b] is a list, and a bare word is a string). */
int pw_config_apply_override(PwConfig *cfg, const char *arg, PwErr *err);

/* Cross-key rules and required keys; the message names the keys involved. */
int pw_config_validate(const PwConfig *cfg, PwErr *err);

/* The whole sequence of `ppo_world --config FILE key=value ...`: defaults, then the file (if
 * path is not NULL), then the overrides in order, then validation. On error cfg is freed. */
int pw_config_build(PwConfig *cfg, const char *path, const char *const *overrides, int n,
                    PwErr *err);

/* ---- derived values --------------------------------------------------------------------- */

/* ppo.kl_estimator, with ppo.use_absolute_kl (NeMo-Aligner's spelling) turning k1 into abs. */
PwKlEstimator pw_config_kl_estimator(const PwConfig *cfg);
/* The critic's initial weights: model.critic, else the first reward model ("" if none). */
const char *pw_config_critic_init(const PwConfig *cfg);
/* PPO steps of the run: episodes / num_rollout_samples (rounded down, as open-instruct). */
int64_t pw_config_num_steps(const PwConfig *cfg);
/* The name of an enum value of a key ("k3"), or NULL. */
const char *pw_config_enum_name(const char *key, int value);

/* ---- output ----------------------------------------------------------------------------- */

/* The effective configuration as nested JSON objects (a jansson json_t *, returned as void *
 * so that this header does not pull jansson into every file; free with json_decref). */
void *pw_config_to_json(const PwConfig *cfg);
/* Write it as YAML that pw_config_load_file reads back to the same values. */
int pw_config_write_yaml(const PwConfig *cfg, FILE *f);
/* Write cfg as YAML to path atomically (temporary name, fsync, rename). */
int pw_config_save_yaml(const PwConfig *cfg, const char *path, PwErr *err);
/* The YAML of pw_config_write_yaml in a malloc'd string (free it), e.g. for rank 0 to send
 * with MPI_Bcast and the other ranks to read with pw_config_load_string. NULL on no memory. */
char *pw_config_yaml_string(const PwConfig *cfg);
/* For a resume: load the configuration saved in the run folder and fail, naming every changed
 * key (up to four), if it differs from cfg. */
int pw_config_check_saved(const PwConfig *cfg, const char *saved_path, PwErr *err);
/* Number of keys whose values differ; err (if given and any differ) lists the first few as
 * "key: a -> b". For a resume: a = the saved configuration, b = the one given now. */
int pw_config_diff(const PwConfig *a, const PwConfig *b, PwErr *err);

/* The Markdown table of every key (key, type, default, range, description, default from). */
int pw_config_write_markdown(FILE *f);

#endif
