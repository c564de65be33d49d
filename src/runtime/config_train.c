/* config_train.c: the schema of the supervised training modes (sft, rm): their table of keys
 * (defaults as the modes' former flags had them), the rules across keys, the derived warm-up. */
#include <string.h>

#include "config_internal.h"
#include "pw_placement.h" /* pw_device_names */
#include "pw_train_config.h"

/* Enum stores go through an int pointer, so every enum field must be int-sized. */
_Static_assert(sizeof(PwOverlong) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwLrDecay) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwTrainModelType) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwOnNonfinite) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwPrecision) == sizeof(int), "enum field size");
_Static_assert(sizeof(PwDevice) == sizeof(int), "enum field size");

static const char *const overlong_names[] = {"drop", "error", "truncate", NULL};
static const char *const model_type_names[] = {"gpt2", "llama", "qwen2", "qwen3", NULL};

#define OFF(field) offsetof(PwTrainConfig, field)
#define GPT3 "GPT-3 (Brown et al. 2020)"
#define TINY "ours: a tiny model that trains in seconds on a CPU"

/* Documentation order: the data, the model, the steps, the optimiser, then the machinery. */
static const PwCfgKey keys[] = {
    {"seed", PW_CFG_INT, OFF(seed), "1", 0, PW_CFG_SEED_MAX, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "seed of the initial weights (and score head), the train/valid split and the example order",
     "ours (as PPO's `seed`)"},

    /* ---- data */
    {"data.dir", PW_CFG_STRING, OFF(data.dir), "", 0, 0, 0, NULL,
     "folder of `ppo_world gen-task` files: DIR/sft_train.jsonl (sft) or DIR/prefs_train.jsonl "
     "(rm), and DIR/*_valid.jsonl when present; give this or data.train",
     "ours"},
    {"data.train", PW_CFG_STRING, OFF(data.train), "", 0, 0, 0, NULL,
     "training examples, JSONL (sft: prompt, response; rm: prompt, chosen, rejected, or HH "
     "chosen/rejected), instead of data.dir",
     "ours"},
    {"data.valid", PW_CFG_STRING, OFF(data.valid), "", 0, 0, 0, NULL,
     "validation examples, JSONL, with data.train; empty: data.valid_fraction of the training "
     "examples",
     "ours"},
    {"data.valid_fraction", PW_CFG_FLOAT, OFF(data.valid_fraction), "0.1", 0, 0.99,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "held out of the training examples when there is no validation file; 0: no validation",
     "ours"},
    {"data.tokenizer", PW_CFG_STRING, OFF(data.tokenizer), "bytes", 0, 0, 0, NULL,
     "tokenizer of the text fields (docs/data.md): bytes, or a Hugging Face byte-level BPE "
     "folder (docs/tokenizer.md); a checkpoint's vocabulary must hold it",
     "ours (the byte tokenizer of the synthetic task)"},
    {"data.prompt_template", PW_CFG_STRING, OFF(data.prompt_template), "", 0, 0, 0, NULL,
     "text a text prompt is put into before it is encoded, with {prompt} where the prompt goes "
     "(e.g. a ChatML turn; it stands in for the Jinja chat_template, docs/tokenizer.md); "
     "empty: the prompt as it is",
     "ours (as PPO's data.prompt_template)"},
    {"data.max_len", PW_CFG_INT, OFF(data.max_len), "0", 0, 65536, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "limit on prompt + response tokens of an example; 0: the model's n_positions", "ours"},
    {"data.max_prompt_len", PW_CFG_INT, OFF(data.max_prompt_len), "0", 0, 65536,
     PW_CFG_MIN | PW_CFG_MAX, NULL, "limit on prompt tokens (SEP included); 0: none", "ours"},
    {"data.max_response_len", PW_CFG_INT, OFF(data.max_response_len), "0", 0, 65536,
     PW_CFG_MIN | PW_CFG_MAX, NULL, "limit on response tokens (EOS included); 0: none", "ours"},
    {"data.overlong", PW_CFG_ENUM, OFF(data.overlong), "drop", 0, 0, 0, overlong_names,
     "an example over a limit: drop (counted), error (names file:line) or truncate",
     "ours (docs/data.md)"},

    /* ---- model */
    {"model.init", PW_CFG_STRING, OFF(model.init), "", 0, 0, 0, NULL,
     "checkpoint folder to start from (its config.json sets the size; rm adds a score head it "
     "lacks); empty: a random model of the model.type and model.n_* keys",
     "ours"},
    {"model.type", PW_CFG_ENUM, OFF(model.type), "gpt2", 0, 0, 0, model_type_names,
     "family of a random model: gpt2, llama (RMSNorm, rotary positions, SwiGLU, grouped-query "
     "attention, tied embeddings), qwen2 (llama with q/k/v biases) or qwen3 (llama with an "
     "RMSNorm over each query and key head); docs/model.md",
     "Hugging Face config.json model_type"},
    {"model.n_layer", PW_CFG_INT, OFF(model.n_layer), "2", 1, 64, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "transformer blocks of a random model", TINY},
    {"model.n_head", PW_CFG_INT, OFF(model.n_head), "2", 1, 64, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "attention heads of a random model; must divide model.n_embd unless model.head_dim is "
     "set", TINY},
    {"model.n_embd", PW_CFG_INT, OFF(model.n_embd), "64", 1, 8192, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "channels of a random model", TINY},
    {"model.n_positions", PW_CFG_INT, OFF(model.n_positions), "128", 2, 65536,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "positions (longest sequence) of a random model; its vocabulary is the tokenizer's", TINY},
    {"model.n_kv_head", PW_CFG_INT, OFF(model.n_kv_head), "0", 0, 64, PW_CFG_MIN | PW_CFG_MAX,
     NULL, "key/value heads of a random llama/qwen2 (grouped-query attention; must divide "
     "model.n_head); 0: model.n_head", "Hugging Face num_key_value_heads"},
    {"model.n_inner", PW_CFG_INT, OFF(model.n_inner), "0", 0, 1 << 20, PW_CFG_MIN | PW_CFG_MAX,
     NULL, "SwiGLU width of a random llama/qwen2; 0: 4 x model.n_embd (GPT-2's MLP is always "
     "4 x n_embd)", "Hugging Face intermediate_size"},
    {"model.head_dim", PW_CFG_INT, OFF(model.head_dim), "0", 0, 1024, PW_CFG_MIN | PW_CFG_MAX,
     NULL, "width of a random llama/qwen2/qwen3's heads, even (the attention is model.n_head "
     "times it); 0: model.n_embd / model.n_head", "Hugging Face head_dim"},
    {"model.rope_theta", PW_CFG_FLOAT, OFF(model.rope_theta), "10000", 1, 0, PW_CFG_MIN, NULL,
     "rotary base of a random llama/qwen2", "Hugging Face rope_theta (Llama 2, Qwen2 default)"},
    {"model.precision", PW_CFG_ENUM, OFF(model.precision), "fp32", 0, 0, 0, pw_precision_names,
     "fp32, or bf16: the matrix products of the trunk and the LM head take bfloat16 operands "
     "with float32 accumulation; weights, gradients and the optimizer stay float32 "
     "(docs/model.md, Precision). On the CPU bf16 is emulated (slower)",
     "ours (as PPO's model.precision)"},
    {"model.lm_head_chunk", PW_CFG_INT, OFF(model.lm_head_chunk), "0", 0, PW_CFG_COUNT_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     PW_CFG_LM_HEAD_CHUNK_DOC,
     "ours (as PPO's model.lm_head_chunk)"},
    {"model.activation_checkpointing", PW_CFG_BOOL, OFF(model.activation_checkpointing),
     "false", 0, 0, 0, NULL, PW_CFG_ACT_CKPT_DOC,
     "ours (as PPO's model.activation_checkpointing)"},
    {"model.device", PW_CFG_ENUM, OFF(model.device), "cpu", 0, 0, 0, pw_device_names,
     "cpu, or cuda: each rank trains on GPU (node-local rank) mod (GPUs it sees), the ranks of "
     "a node being numbered in job order; the gradient sum goes through host memory (MPI). "
     "A process that sees no GPU stops before training",
     "ours (as a placement's device)"},

    /* ---- steps */
    {"train.steps", PW_CFG_INT, OFF(train.steps), "200", 0, PW_CFG_COUNT_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "optimiser steps", "ours"},
    {"train.batch_size", PW_CFG_INT, OFF(train.batch_size), "16", 1, 1 << 20,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "the global batch, rows (sft) or pairs (rm) per step, split over the ranks", "ours"},

    /* ---- optimiser (AdamW) */
    {"optim.lr", PW_CFG_FLOAT, OFF(optim.lr), "1e-3", 0, 0, PW_CFG_MIN, NULL,
     "peak learning rate", "ours"},
    {"optim.warmup_steps", PW_CFG_INT, OFF(optim.warmup_steps), "auto", 0, PW_CFG_COUNT_MAX,
     PW_CFG_MIN | PW_CFG_MAX | PW_CFG_AUTO, NULL,
     "linear warm-up steps; auto: 10, or train.steps when fewer",
     "ours (PPO's 10, capped by train.steps)"},
    {"optim.decay", PW_CFG_ENUM, OFF(optim.decay), "cosine", 0, 0, 0, pw_lr_decay_names,
     "learning-rate decay after warm-up, down to min_lr at the last step",
     "ours (as PPO's optim.decay)"},
    {"optim.min_lr", PW_CFG_FLOAT, OFF(optim.min_lr), "0", 0, 0, PW_CFG_MIN, NULL,
     "learning rate at the end of the decay", "ours"},
    {"optim.weight_decay", PW_CFG_FLOAT, OFF(optim.weight_decay), "0", 0, 0, PW_CFG_MIN, NULL,
     "decoupled weight decay", "ours (" GPT3 ": 0.1)"},
    {"optim.beta1", PW_CFG_FLOAT, OFF(optim.beta1), "0.9", 0, 1,
     PW_CFG_MIN | PW_CFG_MAX | PW_CFG_MAX_OPEN, NULL, "Adam first-moment decay", GPT3},
    {"optim.beta2", PW_CFG_FLOAT, OFF(optim.beta2), "0.95", 0, 1,
     PW_CFG_MIN | PW_CFG_MAX | PW_CFG_MAX_OPEN, NULL, "Adam second-moment decay", GPT3},
    {"optim.eps", PW_CFG_FLOAT, OFF(optim.eps), "1e-8", 0, 1,
     PW_CFG_MIN | PW_CFG_MIN_OPEN | PW_CFG_MAX, NULL, "Adam epsilon", GPT3},
    {"optim.grad_clip", PW_CFG_FLOAT, OFF(optim.grad_clip), "1", 0, 0, PW_CFG_MIN, NULL,
     "clip gradients to this global norm (of the gradient summed over the ranks); 0: off", GPT3},
    {"optim.zero_stage", PW_CFG_INT, OFF(optim.zero_stage), "0", 0, 2, PW_CFG_MIN | PW_CFG_MAX,
     NULL,
     "1: the AdamW moments are split over the ranks, each rank keeping and updating its share "
     "of the weights, which an all-gather then hands to every rank; at model.precision bf16 "
     "the float32 master weights of the layers' matrices are split too (docs/model.md, The "
     "optimiser's share); 2: the gradients too, each layer's summed into its owners as soon as "
     "the backward is done with it (docs/model.md, Gradients in shares); 0: each rank keeps all "
     "of them (as does a run of one rank, which it notes)",
     "OpenRLHF and DeepSpeed `--zero_stage` (their stages 1 and 2); Megatron's distributed "
     "optimizer"},

    /* ---- evaluation, runtime */
    {"eval.every", PW_CFG_INT, OFF(eval.every), "50", 0, PW_CFG_COUNT_MAX,
     PW_CFG_MIN | PW_CFG_MAX, NULL,
     "validate every this many steps, and always at step 0 and the last step; 0: only then",
     "ours"},
    {"runtime.heartbeat_s", PW_CFG_FLOAT, OFF(runtime.heartbeat_s), "10", 0, 0, PW_CFG_MIN, NULL,
     "abort the job when a rank has given no sign of life for this long (stopped, or its host "
     "gone); 0: off", "ours (docs/runtime.md, Heartbeat)"},
    {"runtime.timeout_s", PW_CFG_FLOAT, OFF(runtime.timeout_s), "600", 0, 0, PW_CFG_MIN, NULL,
     "abort the job when a rank waits longer than this for the others; 0: never",
     "PyTorch's NCCL process-group time-out (10 min)"},
    {"runtime.on_nonfinite", PW_CFG_ENUM, OFF(runtime.on_nonfinite), "stop", 0, 0, 0,
     pw_on_nonfinite_names,
     "a NaN or infinite loss or gradient: stop with a message naming the step and the "
     "quantity, without saving, or skip_step: drop that step's update and go on; weights gone "
     "bad stop either way (docs/training.md)",
     "ours (as PPO's runtime.on_nonfinite)"},
    {"runtime.max_skipped_steps", PW_CFG_INT, OFF(runtime.max_skipped_steps), "10", 1,
     PW_CFG_COUNT_MAX, PW_CFG_MIN | PW_CFG_MAX, NULL,
     "with runtime.on_nonfinite: skip_step, stop when this many steps in a row were skipped",
     "ours (as PPO's runtime.max_skipped_steps)"},
    {"runtime.grad_bucket_mb", PW_CFG_FLOAT, OFF(runtime.grad_bucket_mb), "25", 0, 1048576,
     PW_CFG_MIN | PW_CFG_MAX | PW_CFG_FREE, NULL,
     "the gradients are summed over the ranks in buckets of about this many MiB, each as soon "
     "as the backward has written it; 0: one sum after the backward (docs/runtime.md, "
     "Gradient buckets); not used with optim.zero_stage 2, whose backwards sum their "
     "gradients group by group", "PyTorch DDP's `bucket_cap_mb` (25)"},
    {"runtime.check_memory", PW_CFG_BOOL, OFF(runtime.check_memory), "true", 0, 0, PW_CFG_FREE,
     NULL,
     "before the model is made, refuse a run whose model (weights, activations, gradients, "
     "AdamW's moments: the memory plan) is more than the memory its ranks share has free: "
     "the host's for the CPU ranks of a node, a GPU's for the ranks on it; false: make it "
     "anyway", "ours (as PPO's runtime.check_memory)"},
    {"log.tensorboard", PW_CFG_BOOL, OFF(log.tensorboard), "false", 0, 0, PW_CFG_FREE, NULL,
     "also write the numbers of metrics.jsonl as TensorBoard scalars, in an event file of "
     "out/tensorboard/ (docs/roles.md, TensorBoard)",
     "OpenRLHF `use_tensorboard`, TRL `report_to: tensorboard`"},
};

static int check_rules(const void *any, PwErr *err)
{
    const PwTrainConfig *c = any;
    if (!c->data.dir[0] && !c->data.train[0])
        return pw_errf(err, "data.dir or data.train is required (the training examples)");
    if (c->data.dir[0] && (c->data.train[0] || c->data.valid[0]))
        return pw_errf(err, "data.dir excludes data.%s: the folder names the files itself",
                       c->data.train[0] ? "train" : "valid");
    if (c->optim.warmup_steps != PW_CFG_AUTO_INT && c->optim.warmup_steps > c->train.steps)
        return pw_errf(err, "optim.warmup_steps (%lld) must not exceed train.steps (%lld)",
                       (long long)c->optim.warmup_steps, (long long)c->train.steps);
    if (pw_cfg_rule_template("data.prompt_template", c->data.prompt_template, err)) return -1;
    return pw_cfg_rule_not_above("optim.min_lr", c->optim.min_lr, "optim.lr", c->optim.lr, err);
}

const PwCfgSchema pw_train_config_schema = {
    .name = "train",
    .title = "ppo_world sft/rm: effective training configuration (every key, defaults "
             "included)",
    .keys = keys,
    .nkeys = PW_ARRAY_LEN(keys),
    .size = sizeof(PwTrainConfig),
    .check = check_rules,
};

int64_t pw_train_config_warmup(const PwTrainConfig *cfg)
{
    if (cfg->optim.warmup_steps != PW_CFG_AUTO_INT) return cfg->optim.warmup_steps;
    return cfg->train.steps < 10 ? cfg->train.steps : 10;
}
