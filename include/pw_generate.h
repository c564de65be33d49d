/* pw_generate.h: batched sampling from any model of pw_model.h through its KV cache: prefill of a
 * left-padded prompt batch, one-token decode steps, temperature / top-k / top-p, stop handling. */
#ifndef PW_GENERATE_H
#define PW_GENERATE_H

#include <stdint.h>

#include "pw_common.h"
#include "pw_model.h"

/* ------------------------------------------------------------------------------------------ */
/* sampling one row of logits (src/model/sampling.c) */

/* Applied in this order, as Hugging Face's warpers are: logits / temperature, then top-k, then
 * top-p on the distribution top-k left. Neither filter ever separates tokens of equal logit, so
 * the kept set does not depend on how the vocabulary is numbered:
 *   top-k keeps every token whose logit is >= the k-th largest logit (ties may keep more);
 *   top-p sorts by probability, finds the first token at which the running mass reaches p, and
 *   keeps every token at least that probable: the smallest such set, widened over a tie.
 * A running mass within PW_SAMPLE_TOP_P_SLACK of p counts as reaching it, so that p = 0.8 on
 * probabilities 0.5, 0.3, 0.2 keeps two tokens whatever the rounding of the softmax. */
typedef struct PwSampleConfig {
    float temperature; /* > 0 */
    int top_k;         /* >= 0; 0 = off */
    float top_p;       /* in (0, 1]; 1 = off */
} PwSampleConfig;

#define PW_SAMPLE_TOP_P_SLACK 1e-6

/* 0, or -1 with a message naming the bad field. */
int pw_sample_config_check(const PwSampleConfig *sc, PwErr *err);

/* A row's random stream: splitmix64 started from a mix of (seed, id). Giving each sample its
 * own stream (id = global sample index) makes its tokens independent of which batch or rank it
 * was generated in; every generated token consumes exactly one uniform of its row's stream. */
uint64_t pw_sample_stream(uint64_t seed, uint64_t id);
double pw_sample_uniform(uint64_t *state); /* in [0, 1), 53 bits */

/* The distribution a row is sampled from: prob (V) = softmax(logits / temperature) restricted to
 * the tokens the filters keep and renormalised, 0 elsewhere. work: V ints of scratch. Returns
 * the number of kept tokens (>= 1). logz_full (may be NULL) receives log sum_v exp(logits_v / T)
 * in double, so that the unfiltered log-prob of token v is logits_v / T - *logz_full. */
int pw_sample_distribution(double *prob, int *work, double *logz_full, const float *logits,
                           int V, const PwSampleConfig *sc);

/* Inverse CDF in token-id order: the first token whose running probability exceeds u in [0,1).
 * Never returns a token of probability 0 (rounding at the top end falls back to the last kept). */
int pw_sample_pick(const double *prob, int V, double u);

/* One row: the distribution, one uniform of *state, the chosen token and its two log-probs:
 *   logp      under the distribution it was drawn from (temperature and filters applied);
 *   logp_full under softmax(logits / temperature) without filters: what the trainer recomputes
 *             on the full sequence at the same temperature. Equal when both filters are off. */
typedef struct PwSample {
    int token;
    float logp, logp_full;
} PwSample;
PwSample pw_sample_row(double *prob, int *work, const float *logits, int V,
                       const PwSampleConfig *sc, uint64_t *state);

/* ------------------------------------------------------------------------------------------ */
/* generation with a KV cache (src/model/generate.c) */

typedef struct PwGenConfig {
    int max_new_tokens;    /* R >= 1 */
    int stop_token;        /* a row ends right after emitting it (kept as its last token); -1 none */
    int pad_token;         /* written after a row's end, in [0, V) */
    PwSampleConfig sample;
    uint64_t seed;         /* with each row's sample id, seeds the row's stream */
} PwGenConfig;

/* The state of one generator: a KV cache of the model (pw_model.h), sampling scratch and the
 * outputs of the last pw_generate. The cache reads the model's parameters at every pass, so
 * weights loaded into the model (e.g. after a PPO step) take effect at the next call. */
typedef struct PwGen {
    PwKVCache *cache;
    int maxB, maxT;      /* capacity: rows, and columns of prompt plus new tokens */
    int V;
    double *prob;        /* (V) sampling scratch */
    int *work;           /* (V) sampling scratch */
    int *next, *live;    /* (maxB) the token each row feeds back, and whether it is still going */
    uint64_t *rng;       /* (maxB) each row's stream */
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
