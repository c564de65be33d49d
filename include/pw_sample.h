/* pw_sample.h: how a row of next-token logits becomes a token: temperature, top-k, top-p, a draw
 * from the row's own random stream, the log-probs the generator reports; the same for n rows at
 * once, the kernel table's `sample` entry (pw_ops.h), which the CUDA table runs on the GPU; and
 * its `record` entry, the rows' bookkeeping after a draw, on the same device. */
#ifndef PW_SAMPLE_H
#define PW_SAMPLE_H

#include <stdint.h>

#include "pw_common.h"

/* ------------------------------------------------------------------------------------------ */
/* sampling one row of logits (src/kernels/cpu/sample.c) */

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

/* n rows at once: row i of logits at logits + i * ld (V <= ld columns read), drawn from the
 * stream rng[rows[i]] (one uniform), into token[i], logp[i] and logp_full[i]: pw_sample_row for
 * each. The kernel table's `sample` entry on the CPU; the CUDA twin (pw_kernels_cuda.h) takes
 * the same arguments in device memory and draws the same tokens, up to the order of its sums.
 * The rows[i] of a call are distinct: the GPU draws all rows at once, so two rows of one stream
 * would race on it (the generator gives each row its own). */
void pw_sample_rows(const float *logits, int ld, int n, int V, const int *rows,
                    const PwSampleConfig *sc, uint64_t *rng, int *token, float *logp,
                    float *logp_full);

/* ------------------------------------------------------------------------------------------ */
/* after a draw: the rows' bookkeeping where the draws are (src/kernels/cpu/record.c), the kernel
 * table's `record` entry, so that a decode loop needs no host round trip per token */

/* The rows of a batch being generated, in the memory of the draws' device. */
typedef struct PwGenRows {
    int *live;         /* (B) 1 until the row emits the stop token */
    int *next;         /* (B) the row's last drawn token: what it feeds back */
    int *length;       /* (B) tokens recorded */
    int *tokens;       /* (B, R) the recorded tokens */
    float *logp;       /* (B, R) and their two log-probs (pw_sample_row) */
    float *logp_full;
    int R;             /* columns of tokens, logp and logp_full */
    int stop_token;    /* -1: none */
} PwGenRows;

/* A step's draws of n rows (row rows[i] drew token[i], logp[i], logp_full[i]): a row still live
 * records them at its column length[b] (a live row has recorded every step before, so that is
 * the step's index: no step number is passed, and a captured step can run again unchanged),
 * sets next, grows length by one, and leaves when it drew the stop token (kept as its last); a
 * row that left records nothing. When the draws came from a decode
 * pass (pass_tok not NULL), that pass's segment i (row rows[i], one token) becomes the row's
 * next step: pass_tok[i] = token[i], pass_pos[i] and pass_slot0[i] one further, so that the pass
 * runs again with no upload. The CUDA twin (pw_kernels_cuda.h) does the same on the GPU. */
void pw_sample_record(const PwGenRows *g, int n, const int *rows, const int *token,
                      const float *logp, const float *logp_full, int *pass_tok, int *pass_pos,
                      int *pass_slot0);

#endif
