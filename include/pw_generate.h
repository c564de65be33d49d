/* pw_generate.h: batched sampling from any model of pw_model.h through its KV cache: prefill of a
 * left-padded prompt batch, one-token decode steps, temperature / top-k / top-p, stop handling. */
#ifndef PW_GENERATE_H
#define PW_GENERATE_H

#include <stdint.h>

#include "pw_common.h"
#include "pw_model.h"
#include "pw_sample.h" /* sampling one row of logits, and rows through the kernel table */

/* ------------------------------------------------------------------------------------------ */
/* generation with a KV cache (src/model/generate.c) */

typedef struct PwGenConfig {
    int max_new_tokens;    /* R >= 1 */
    int stop_token;        /* a row ends right after emitting it (kept as its last token); -1 none */
    int pad_token;         /* written after a row's end, in [0, V) */
    PwSampleConfig sample;
    uint64_t seed;         /* with each row's sample id, seeds the row's stream */
    int check_every;       /* decode steps between the host's looks at which rows are still
                            * going (the only copy back while decoding); 0 = the device's own:
                            * 1 on the CPU, PW_GEN_CHECK_EVERY_GPU on a GPU. Any value gives
                            * the same tokens and log-probs: between looks, rows that stopped
                            * are decoded and drawn from but record nothing */
    int graph;             /* 1: the decode step (the pass, the draw, the bookkeeping) is
                            * captured once per planned pass as a CUDA graph and replayed until
                            * the host next replans; 0: launched kernel by kernel. No effect on
                            * the CPU (no graphs); the same tokens either way */
} PwGenConfig;

#define PW_GEN_CHECK_EVERY_GPU 16

/* The state of one generator: a KV cache of the model (pw_model.h), the sampler's buffers and
 * the outputs of the last pw_generate. The cache reads the model's parameters at every pass, so
 * weights loaded into the model (e.g. after a PPO step) take effect at the next call. */
typedef struct PwGen {
    PwKVCache *cache;
    int maxB, maxT;      /* capacity: rows, and columns of prompt plus new tokens */
    int V;
    int *live, *next;    /* (maxB) whether each row is still going, and the token it feeds
                          * back: brought from d.live and d.next when the host looks */
    uint64_t *rng;       /* (maxB) each row's stream, as the last pw_generate left it (a row
                          * that stopped between two looks drew and discarded a few more) */
    /* the sampler and the rows' bookkeeping work where the model computes (the kernel table's
     * `sample` and `record`): no row of logits and no draw comes back per step */
    uint64_t *d_rng;     /* (maxB) each row's stream, advanced by the draws */
    int *d_rows;         /* (maxB) 0, 1, ..., maxB - 1: which stream each row of d_first takes */
    int *d_out;          /* (3 maxB) per sampled row: token, then logp, then logp_full (floats) */
    PwGenRows d;         /* live, next, length (maxB), tokens, logp, logp_full (maxB, maxT) */
    float *d_first;      /* (maxB, V) the prefill's logits, where the first tokens are drawn */
    void *d_memory;      /* the device arrays above, one allocation of the model's device */
    /* outputs of the last pw_generate, dense (B, R) with R = its max_new_tokens */
    int B, R;
    int *tokens;         /* (B, R) response tokens, right-padded with pad_token */
    int *resp_mask;      /* (B, R) 1 for real response tokens (the stop token included) */
    int *lengths;        /* (B) real response tokens per row */
    int *stopped;        /* (B) 1 if the row emitted the stop token */
    float *logp;         /* (B, R) log-prob under the sampled distribution; 0 at padding */
    float *logp_full;    /* (B, R) log-prob under softmax(logits / temperature); 0 at padding */
    void *memory;        /* the arrays above live in this one allocation */
} PwGen;

/* A generator for up to maxB rows of prompt width plus max_new_tokens up to maxT
 * (<= n_positions). NULL with a message on bad arguments or no memory. */
PwGen *pw_gen_create(PwModel *model, int maxB, int maxT, PwErr *err);
/* The device bytes such a generator holds beside its model's (its KV cache and sampler), for a
 * model of `arch` made with `opts` (pw_model_plan), known before either is made. */
int pw_gen_plan(const PwArch *arch, const PwModelOpts *opts, int maxB, int maxT, size_t *bytes,
                PwErr *err);
void pw_gen_free(PwGen *g);

/* Sample responses for B prompts (B, P), left-padded: mask (B, P) is 0s then 1s in each row,
 * at least one real token per row (NULL = all real). sample_ids (B) name each row's random
 * stream (NULL = the row index). Fills g->tokens .. g->logp_full for (B, R). Stops when every
 * row has emitted the stop token or after max_new_tokens. -1 with a message if B, P or R exceed
 * the capacity, or a token, mask or setting is invalid. */
int pw_generate(PwGen *g, const int *prompt, const int *mask, int B, int P,
                const uint64_t *sample_ids, const PwGenConfig *cfg, PwErr *err);

/* The (B, P + R) layout the actor, reference, critic and reward passes feed pw_model_forward:
 * the left-padded prompt, then the right-padded response. seq_mask is 1 on real prompt and real
 * response tokens. targets (may be NULL) hold response token t at column P - 1 + t where it is
 * real and -1 elsewhere, so forward's logp[b, P - 1 + t] = log pi(y_t | x, y_<t). prompt_mask
 * NULL = all real. */
void pw_gen_sequences(int *seq, int *seq_mask, int *targets, const int *prompt,
                      const int *prompt_mask, int P, const int *resp, const int *resp_mask, int R,
                      int B, int pad_token);

#endif
