/* pw_model.h: the GPT-2 family model: config, parameters, activations, forward/backward through
 * the LM, score and value heads, AdamW, and checkpoints in the Hugging Face layout. */
#ifndef PW_MODEL_H
#define PW_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "pw_common.h"

/* ---- config (the subset of Hugging Face GPT2Config that changes the function) */
typedef struct PwGPT2Config {
    int n_layer;     /* L */
    int n_head;      /* NH */
    int n_embd;      /* C; n_embd % n_head == 0 */
    int vocab_size;  /* V */
    int n_positions; /* maximum T */
} PwGPT2Config;

/* 0 if the config is usable, else -1 with a message naming the bad field. */
int pw_gpt2_config_check(const PwGPT2Config *cfg, PwErr *err);

/* ---- heads: a model instance carries any subset. The LM head is tied to wte (no parameters of
 * its own); the score head (reward model) and the value head (critic) are Linear(C, 1) with bias. */
enum {
    PW_HEAD_LM = 1,    /* logits (B,T,V), logp/entropy of targets (B,T) */
    PW_HEAD_SCORE = 2, /* score (B) read at the last real token of each row */
    PW_HEAD_VALUE = 4, /* value (B,T) at every position */
};

/* ---- parameters: one allocation sliced into these pointers, in this order. Weights are stored
 * (OC, C) like torch.nn.Linear (Hugging Face's Conv1D keeps the transpose; see checkpoint.c).
 * A head the model lacks has a NULL pointer and size 0. */
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

/* ---- activations kept by forward for backward, sized for maxB x maxT at creation; a smaller
 * batch uses the front of each per-layer slice. One allocation sliced into these pointers. */
#define PW_GPT2_NUM_ACT_TENSORS 24
typedef struct PwGPT2Acts {
    float *encoded;   /* (B, T, C) */
    float *ln1;       /* (L, B, T, C) */
    float *ln1_mean;  /* (L, B, T) */
    float *ln1_rstd;  /* (L, B, T) */
    float *qkv;       /* (L, B, T, 3C) */
    float *atty;      /* (L, B, T, C) */
    float *att;       /* (L, B, NH, T, T) softmax probabilities */
    float *attproj;   /* (L, B, T, C) */
    float *residual2; /* (L, B, T, C) */
    float *ln2;       /* (L, B, T, C) */
    float *ln2_mean;  /* (L, B, T) */
    float *ln2_rstd;  /* (L, B, T) */
    float *fch;       /* (L, B, T, 4C) */
    float *fch_gelu;  /* (L, B, T, 4C) */
    float *fcproj;    /* (L, B, T, C) */
    float *residual3; /* (L, B, T, C) */
    float *lnf;       /* (B, T, C) */
    float *lnf_mean;  /* (B, T) */
    float *lnf_rstd;  /* (B, T) */
    float *logits;    /* (B, T, V) LM head only; backward overwrites it with dlogits */
    float *logp;      /* (B, T) log p(target) (0 where the target is negative) */
    float *entropy;   /* (B, T) entropy of the next-token distribution (0 where no target) */
    float *value;     /* (B, T) value head only */
    float *score;     /* (B) score head only */
} PwGPT2Acts;

/* AdamW settings. Weight decay applies to the 2D weights (wte, wpe, every Linear weight incl.
 * the heads) and never to biases or LayerNorm parameters, as nanoGPT does. */
typedef struct PwAdamWConfig {
    float lr, beta1, beta2, eps, weight_decay;
    float grad_clip; /* global L2 norm to clip gradients to; <= 0 disables clipping */
} PwAdamWConfig;

typedef struct PwGPT2 {
    PwGPT2Config config;
    int heads;             /* PW_HEAD_* bits */
    int maxB, maxT;        /* activation capacity */
    PwGPT2Params params;
    size_t param_sizes[PW_GPT2_NUM_PARAM_TENSORS];
    float *params_memory;  /* num_params floats: every parameter, one buffer */
    size_t num_params;
    PwGPT2Params grads;    /* same layout as params; NULL until first pw_gpt2_zero_grad */
    float *grads_memory;   /* num_params floats: all-reduce this one buffer */
    float *adam_m, *adam_v;/* (num_params) each, allocated by the first optimiser step */
    PwGPT2Acts acts;
    size_t act_sizes[PW_GPT2_NUM_ACT_TENSORS];
    float *acts_memory;
    size_t num_acts;
    float *scratch_memory; /* backward scratch, one layer at a time (see gpt2.c) */
    int *int_memory;       /* inputs, mask, positions, targets (maxB, maxT) and last (maxB) */
    int *inputs, *mask, *pos, *targets, *last;
    int B, T;              /* shape of the last forward; 0 before any */
    int logits_valid;      /* 1 after forward, 0 once backward reused the buffer */
} PwGPT2;

/* ---- life cycle */
/* Allocate a model with the given heads and activation capacity; parameters are zero until
 * pw_gpt2_init_random or a load. Returns NULL with a message on bad arguments or no memory. */
PwGPT2 *pw_gpt2_create(const PwGPT2Config *cfg, int heads, int maxB, int maxT, PwErr *err);
void pw_gpt2_free(PwGPT2 *m);
/* GPT-2 init, deterministic from seed: weights N(0, 0.02), attn.c_proj and mlp.c_proj scaled by
 * 1/sqrt(2 L), biases 0, LayerNorm weight 1 bias 0; head weights N(0, 1/sqrt(C+1)), bias 0.
 * Each tensor draws from its own stream, so adding a head does not change the trunk. */
void pw_gpt2_init_random(PwGPT2 *m, uint64_t seed);
/* Initialise only the score/value heads selected by `heads` (same streams as above). */
void pw_gpt2_init_heads(PwGPT2 *m, int heads, uint64_t seed);
/* A critic made from a reward model: value head := score head (both must exist). */
int pw_gpt2_copy_score_to_value(PwGPT2 *m, PwErr *err);

/* Name (our own, e.g. "qkvw") and float count of parameter tensor i. */
const char *pw_gpt2_param_name(int i);
/* Float count of each block, for callers that move or reduce them (e.g. an all-reduce). */
size_t pw_gpt2_num_params(const PwGPT2 *m);
/* Floating-point operations of one forward+backward per token at length T (6 x matmul
 * parameters plus attention), used by the benchmark. */
double pw_gpt2_flops_per_token(const PwGPT2 *m, int T);

/* ---- forward / backward */
/* Forward over inp (B,T) with mask (B,T) (1 real, 0 padding; NULL = all real). Positions come
 * from the mask (pw_positions_from_mask). targets (B,T) (may be NULL) select the tokens whose
 * logp/entropy the LM head reports; a negative target skips the position. Fills acts.logits
 * (LM), acts.logp/entropy (LM with targets), acts.value (value head), acts.score (score head).
 * Returns -1 with a message if B, T or a token id is out of range. */
int pw_gpt2_forward(PwGPT2 *m, const int *inp, const int *mask, const int *targets, int B, int T,
                    PwErr *err);
/* Zero the gradient buffer (allocating it on first use). */
int pw_gpt2_zero_grad(PwGPT2 *m);
/* Backward of a loss given its gradients w.r.t. the forward outputs of the last forward:
 * dlogp (B,T), dentropy (B,T), dvalue (B,T), dscore (B); NULL = zero. ACCUMULATES into grads.
 * Uses acts.logits as scratch when dlogp or dentropy is given. -1 if no forward came first or
 * the gradient buffer cannot be allocated. */
int pw_gpt2_backward(PwGPT2 *m, const float *dlogp, const float *dentropy, const float *dvalue,
                     const float *dscore);

/* ---- the weighted LM loss, loss = -sum_{b,t} w[b,t] logp[b,t] (SFT, the fixture test) */
/* targets[b,t] = inp[b,t+1] where mask[b,t] and mask[b,t+1] are real, else -1 (last column -1):
 * next-token prediction the way Hugging Face shifts labels. */
void pw_gpt2_next_token_targets(int *targets, const int *inp, const int *mask, int B, int T);
/* w = 1/count on positions with a target >= 0, 0 elsewhere (mean over real targets); returns
 * count. Zeroing w on prompt positions first gives SFT's response-only loss. */
int pw_gpt2_mean_weights(float *w, const int *targets, int N);
/* Loss of the last forward; NaN if the model has no LM head or forward had no targets. */
double pw_gpt2_lm_loss(const PwGPT2 *m, const float *w);
/* loss and backward in one call (dlogp = -w); returns the loss (NaN on failure). */
double pw_gpt2_lm_loss_backward(PwGPT2 *m, const float *w);

/* ---- optimiser */
/* Global L2 norm of the gradients (double accumulation). */
double pw_gpt2_grad_norm(const PwGPT2 *m);
/* Clip to cfg->grad_clip (if > 0), then one AdamW step t (>= 1). Returns the norm before
 * clipping. -1 if the moments cannot be allocated. */
double pw_gpt2_adamw_step(PwGPT2 *m, const PwAdamWConfig *cfg, int t);

/* ---- checkpoints: a folder with config.json and model.safetensors in Hugging Face GPT-2 names
 * (transformer.h.{i}.attn.c_attn.weight, ...; Conv1D weights transposed to (in, out); lm_head
 * tied and omitted), the heads as score.weight/score.bias and value_head.weight/value_head.bias.
 * Both files are written atomically. */
int pw_gpt2_config_load(PwGPT2Config *cfg, const char *path, PwErr *err);
int pw_gpt2_config_save(const PwGPT2Config *cfg, const char *path, PwErr *err);
int pw_gpt2_save(const PwGPT2 *m, const char *dir, PwErr *err);
/* Load dir/config.json and dir/model.safetensors into a new model with `heads`. A score or value
 * head the file lacks is initialised from seed (pw_gpt2_init_heads); trunk tensors must all be
 * there with the shapes the config implies. F32, BF16 and F16 tensors are accepted. */
PwGPT2 *pw_gpt2_load(const char *dir, int heads, int maxB, int maxT, uint64_t seed, PwErr *err);
/* The critic from a reward model checkpoint: trunk from dir, the file's score head copied into
 * the value head (the file must have score.weight/score.bias). heads must include VALUE. */
PwGPT2 *pw_gpt2_load_critic_from_reward(const char *dir, int heads, int maxB, int maxT,
                                        uint64_t seed, PwErr *err);

#endif
