/* config_internal.h: what the config_*.c files share and nobody else needs: setting one key from
 * text (the one place where the type rules live), spelling a value back as text, shared rules. */
#ifndef PW_CONFIG_INTERNAL_H
#define PW_CONFIG_INTERNAL_H

#include "pw_cfg.h"

/* How a YAML scalar was written: type rules differ for quoted text and for null. */
typedef enum { PW_SCALAR_PLAIN, PW_SCALAR_QUOTED, PW_SCALAR_NULL } PwScalarStyle;

/* Convert `text` to the key's type, check its range and store it. On failure, `why` holds
 * "<key>: <reason>" with no location: the caller prefixes file:line:column or the argument. */
int pw_cfg_set_scalar(void *cfg, const PwCfgKey *k, const char *text, PwScalarStyle style,
                      char *why, size_t why_len);
/* Range check of the value already in cfg (for values set by code, not read from text). */
int pw_cfg_check_range(const void *cfg, const PwCfgKey *k, char *why, size_t why_len);
/* Replace a string-list key with n items (copied). */
int pw_cfg_set_list(void *cfg, const PwCfgKey *k, const char *const *items, int n,
                    char *why, size_t why_len);

/* The value of a key as it would be written in YAML (strings double-quoted, lists in
 * brackets); floats use the shortest spelling that reads back to the same double. */
void pw_cfg_format_value(const void *cfg, const PwCfgKey *k, char *buf, size_t len);
/* The range of a key for messages and docs: "[0, 1]", "> 0", ">= 1", or "" when none. */
void pw_cfg_format_range(const PwCfgKey *k, char *buf, size_t len);
/* Shortest "%.Ng" spelling of x that strtod reads back exactly. */
void pw_cfg_format_double(double x, char *buf, size_t len);
/* What a key wants, for messages: "an integer", "one of mean|wco|uwo", ... */
const char *pw_cfg_expected(const PwCfgKey *k, char *buf, size_t len);
/* The name of a type as docs and messages say it. */
const char *pw_cfg_type_name(PwCfgType t);

/* "a_key (a) must not exceed b_key (b)" when a > b: the rule of every decaying learning rate. */
int pw_cfg_rule_not_above(const char *a_key, double a, const char *b_key, double b, PwErr *err);
/* A prompt template (empty: none) must hold {prompt} exactly once. */
int pw_cfg_rule_template(const char *key, const char *tmpl, PwErr *err);

/* Upper bounds of the integer keys: the roles cast most integers to int, so a count stops at
 * INT_MAX (a larger one would wrap to a small number, not fail); a batch, a sequence or a number
 * of prompts stops at 2^20, far past what fits in memory; a seed, kept in 64 bits, stops at
 * 2^53 - 1, the last integer that a double (ranges are compared in double) and JSON readers of
 * the run folder hold exactly. */
#define PW_CFG_COUNT_MAX 2147483647.0
#define PW_CFG_SIZE_MAX 1048576.0
#define PW_CFG_SEED_MAX 9007199254740991.0

/* model.lm_head_chunk's description, the same in the PPO and the training tables */
#define PW_CFG_LM_HEAD_CHUNK_DOC                                                              \
    "rows of the LM head's logits made at once (the vocabulary-wide (rows, V) float32 tensor, "  \
    "the largest a step holds for a large vocabulary); 0: every row of the batch. Fewer rows "   \
    "hold less memory and cost the backward one more LM-head product (docs/model.md, The LM "   \
    "head in chunks)"

/* model.activation_checkpointing, in both tables */
#define PW_CFG_ACT_CKPT_DOC                                                                   \
    "the trained models' forward keeps each layer's input alone, and the backward makes "     \
    "the layer's activations again before its gradients: a layer's activations in memory "   \
    "instead of every layer's, for one more forward's work; the same numbers (docs/model.md, " \
    "Activation memory). Models that only score keep one layer's whatever this says"

/* Pointer to the field of key k inside cfg (the schema's struct). */
#define PW_CFG_FIELD(cfg, k, T) ((T *)((char *)(cfg) + (k)->offset))
#define PW_CFG_CFIELD(cfg, k, T) ((const T *)((const char *)(cfg) + (k)->offset))

#endif
