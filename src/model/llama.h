/* llama.h: the Llama family's parameter layout (Llama 3, Qwen2, Qwen3, Mistral, SmolLM), shared
 * by its computation (llama.c) and its Hugging Face files (llama_io.c). Internal to src/model. */
#ifndef PW_LLAMA_INTERNAL_H
#define PW_LLAMA_INTERNAL_H

#include "model_internal.h"

/* Parameters, in this order in the model's one buffer. QKV = (NH + 2 NKV) hs rows: Hugging
 * Face's q_proj, k_proj and v_proj stacked, so one matmul gives [q | k | v]; fcw stacks
 * gate_proj over up_proj, so one matmul gives [gate | up]. A tensor the model lacks (biases
 * without attention_bias, lm_head when tied or without the LM head, absent heads) has size 0
 * and a NULL pointer. */
#define PW_LLAMA_NUM_PARAM_TENSORS 17
typedef struct PwLlamaParams {
    float *wte;      /* (V, C) embed_tokens */
    float *ln1w;     /* (L, C) input_layernorm */
    float *qkvw;     /* (L, QKV, C) */
    float *qkvb;     /* (L, QKV) Qwen2 only */
    float *attprojw; /* (L, C, NH hs) o_proj: NH hs is C unless head_dim says otherwise */
    float *ln2w;     /* (L, C) post_attention_layernorm */
    float *fcw;      /* (L, 2F, C) gate_proj; up_proj */
    float *fcprojw;  /* (L, C, F) down_proj */
    float *lnfw;     /* (C) norm */
    float *lmw;      /* (V, C) lm_head, untied models with the LM head only */
    float *scorew;   /* (1, C) score head */
    float *scoreb;   /* (1) */
    float *valuew;   /* (1, C) value head */
    float *valueb;   /* (1) */
    /* After the heads, so that the models without them keep the layout they always had: */
    float *attprojb; /* (L, C) o_proj's bias (attention_bias) */
    float *qnw;      /* (L, hs) q_norm (Qwen3) */
    float *knw;      /* (L, hs) k_norm (Qwen3) */
} PwLlamaParams;

/* the tensors' indices, in that order */
enum {
    PW_LLAMA_WTE, PW_LLAMA_LN1W, PW_LLAMA_QKVW, PW_LLAMA_QKVB, PW_LLAMA_ATTPROJW, PW_LLAMA_LN2W,
    PW_LLAMA_FCW, PW_LLAMA_FCPROJW, PW_LLAMA_LNFW, PW_LLAMA_LMW, PW_LLAMA_SCOREW, PW_LLAMA_SCOREB,
    PW_LLAMA_VALUEW, PW_LLAMA_VALUEB, PW_LLAMA_ATTPROJB, PW_LLAMA_QNW, PW_LLAMA_KNW
};

static inline PwLlamaParams pw_llama_view(const PwModel *m, float *memory)
{
    PwLlamaParams p;
    pw_model_slice((float **)&p, m->tensor_size, PW_LLAMA_NUM_PARAM_TENSORS, memory);
    return p;
}
/* The float32 parameters m computes with: NULL for the tensors a frozen bf16 model keeps in
 * bfloat16 only (its products read them through pw_model_weight) */
static inline PwLlamaParams pw_llama_stored(const PwModel *m)
{
    PwLlamaParams p;
    pw_model_slice((float **)&p, m->stored_size, PW_LLAMA_NUM_PARAM_TENSORS, m->params);
    return p;
}

int pw_llama_arch_from_json(PwArch *a, const void *json_root, const char *path, PwErr *err);
int pw_llama_save(const PwModel *m, const float *host, const char *dir,
                  const PwSaveOpts *opts, PwErr *err);
int pw_llama_load(const PwModel *m, float *host, const char *dir, int value_from_score,
                  int *missing, PwErr *err);

#endif
