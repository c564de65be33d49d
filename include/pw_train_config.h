/* pw_train_config.h: the configuration of the supervised training modes (`ppo_world sft` and
 * `ppo_world rm`): one typed table of keys over PwTrainConfig, read and checked by pw_cfg.h. */
#ifndef PW_TRAIN_CONFIG_H
#define PW_TRAIN_CONFIG_H

#include <stdint.h>

#include "pw_algo.h" /* PwLrDecay */
#include "pw_cfg.h"
#include "pw_config.h" /* PwPrecision, pw_precision_names */
#include "pw_data.h" /* PwOverlong */

/* One field per key (docs/training.md); the key names follow PPO's where the meaning is the
 * same (seed, optim.*, eval.every, runtime.*, data.tokenizer). Strings are never NULL
 * after pw_cfg_defaults ("" means not given). */
/* model.type: which Hugging Face model_type a random model is (a model.init folder says its own). */
typedef enum PwTrainModelType {
    PW_TRAIN_MODEL_GPT2 = 0,
    PW_TRAIN_MODEL_LLAMA,
    PW_TRAIN_MODEL_QWEN2,
    PW_TRAIN_MODEL_QWEN3,
} PwTrainModelType;

typedef struct PwTrainConfig {
    int64_t seed;
    struct {
        char *dir, *train, *valid;
        double valid_fraction;
        char *tokenizer, *prompt_template;
        int64_t max_len, max_prompt_len, max_response_len;
        PwOverlong overlong;
    } data;
    struct {
        char *init;
        int type; /* PwTrainModelType: the family of a random model */
        int64_t n_layer, n_head, n_embd, n_positions, n_kv_head, n_inner, head_dim;
        double rope_theta;
        PwPrecision precision;
        int64_t lm_head_chunk; /* PwModelOpts.lm_chunk */
        bool activation_checkpointing; /* PW_ACTS_RECOMPUTE */
        PwDevice device; /* where the model, its gradients and its optimizer state live */
    } model;
    struct {
        int64_t steps, batch_size;
    } train;
    struct {
        double lr;
        int64_t warmup_steps; /* PW_CFG_AUTO_INT: pw_train_config_warmup decides */
        PwLrDecay decay;
        double min_lr, weight_decay, beta1, beta2, eps, grad_clip;
        int64_t zero_stage;
    } optim;
    struct {
        int64_t every;
    } eval;
    struct {
        double heartbeat_s;
        double timeout_s;
        PwOnNonfinite on_nonfinite;
        int64_t max_skipped_steps;
        double grad_bucket_mb;
        bool check_memory;
    } runtime;
    struct {
        bool tensorboard; /* metrics as TensorBoard scalars in out/tensorboard (pw_tb.h) */
    } log;
} PwTrainConfig;

/* The schema: give it to pw_cfg_build, pw_cfg_save_yaml, ... with a PwTrainConfig. */
extern const PwCfgSchema pw_train_config_schema;

/* Warm-up steps of the run: optim.warmup_steps, or for `auto` 10, or train.steps when fewer. */
int64_t pw_train_config_warmup(const PwTrainConfig *cfg);

#endif
