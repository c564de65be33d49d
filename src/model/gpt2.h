/* gpt2.h: the GPT-2 family's parameter layout, shared by its computation (gpt2.c) and its
 * Hugging Face checkpoints (gpt2_io.c). Internal to src/model. */
#ifndef PW_GPT2_INTERNAL_H
#define PW_GPT2_INTERNAL_H

#include "model_internal.h"

/* Parameters, in this order in the model's one buffer. Weights are stored (OC, C) like
 * torch.nn.Linear (Hugging Face's Conv1D keeps the transpose; gpt2_io.c turns it). A head the
 * model lacks has a NULL pointer and size 0. */
#define PW_GPT2_NUM_PARAM_TENSORS 20
typedef struct PwGPT2Params {
    float *wte;      /* (V, C), also the LM head */
    float *wpe;      /* (n_positions, C) */
    float *ln1w;     /* (L, C) */
    float *ln1b;     /* (L, C) */
    float *qkvw;     /* (L, 3C, C) */
    float *qkvb;     /* (L, 3C) */
    float *attprojw; /* (L, C, C) */
    float *attprojb; /* (L, C) */
    float *ln2w;     /* (L, C) */
    float *ln2b;     /* (L, C) */
    float *fcw;      /* (L, 4C, C) */
    float *fcb;      /* (L, 4C) */
    float *fcprojw;  /* (L, C, 4C) */
    float *fcprojb;  /* (L, C) */
    float *lnfw;     /* (C) */
    float *lnfb;     /* (C) */
    float *scorew;   /* (1, C) score head */
    float *scoreb;   /* (1) */
    float *valuew;   /* (1, C) value head */
    float *valueb;   /* (1) */
} PwGPT2Params;

/* the tensors' indices, in that order */
enum {
    PW_GPT2_WTE, PW_GPT2_WPE, PW_GPT2_LN1W, PW_GPT2_LN1B, PW_GPT2_QKVW, PW_GPT2_QKVB,
    PW_GPT2_ATTPROJW, PW_GPT2_ATTPROJB, PW_GPT2_LN2W, PW_GPT2_LN2B, PW_GPT2_FCW, PW_GPT2_FCB,
    PW_GPT2_FCPROJW, PW_GPT2_FCPROJB, PW_GPT2_LNFW, PW_GPT2_LNFB, PW_GPT2_SCOREW, PW_GPT2_SCOREB,
    PW_GPT2_VALUEW, PW_GPT2_VALUEB
};

/* The parameter pointers of a buffer laid out as m's parameters (its own, a gradient buffer,
 * or a host copy). */
static inline PwGPT2Params pw_gpt2_view(const PwModel *m, float *memory)
{
    PwGPT2Params p;
    pw_model_slice((float **)&p, m->tensor_size, PW_GPT2_NUM_PARAM_TENSORS, memory);
    return p;
}
/* The float32 parameters m computes with: NULL for the tensors a frozen bf16 model keeps in
 * bfloat16 only (its products read them through pw_model_weight) */
static inline PwGPT2Params pw_gpt2_stored(const PwModel *m)
{
    PwGPT2Params p;
    pw_model_slice((float **)&p, m->stored_size, PW_GPT2_NUM_PARAM_TENSORS, m->params);
    return p;
}

int pw_gpt2_arch_from_json(PwArch *a, const void *json_root, const char *path, PwErr *err);
int pw_gpt2_save(const PwModel *m, const float *host, const char *dir,
                 const PwSaveOpts *opts, PwErr *err);
int pw_gpt2_load(const PwModel *m, float *host, const char *dir, int value_from_score,
                 int *missing, PwErr *err);

#endif
