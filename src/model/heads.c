/* heads.c: the LM, value and score heads on a family's final hidden states, forward and
 * backward, shared by every family: each family only says where its buffers and weights are. */
#include "model_internal.h"

#include "pw_kernels.h" /* PW_LP_STATS */

/* Rows [r0, r0 + n) of the LM head's logits into the logits buffer (n <= m->lm_rows), divided
 * by the temperature: all Vp columns (the padding rows of the weight give 0 there), so the
 * product keeps its aligned shape, and the softmax reads the V real columns only. Sampling at
 * temperature tau draws from softmax(logits / tau): the log-probs of the sampled tokens are
 * taken from the same distribution. */
static void lm_logits(const PwModel *m, const PwHeads *h, int r0, int n)
{
    const int C = m->arch.n_embd, Vp = m->Vp;
    /* a tile at a time: a product's rounding depends on its shape (BLAS kernels block the rows
     * their own way), and tiles keep it the same for a row in every model */
    for (int t = 0; t < n; t += PW_LM_TILE) {
        int k = n - t < PW_LM_TILE ? n - t : PW_LM_TILE;
        pw_model_matmul_forward(m, h->logits + (size_t)t * Vp, h->lnf + (size_t)(r0 + t) * C,
                                NULL, h->lmw, NULL, k, C, Vp);
    }
    if (m->inv_temperature != 1.0f)
        m->ops->scale(m->ops, h->logits, m->inv_temperature, (size_t)n * Vp);
}

/* where row r's log-softmax statistics are kept: the forward writes them, the backward reads
 * them instead of a second pass over the logits (pw_logprobs_forward). A chunk made again in the
 * backward is the same product on the same rows, so its statistics are still those. */
static size_t stat_at(int r) { return (size_t)r * PW_LP_STATS; }

/* The LM head a chunk of m->lm_rows rows at a time (one chunk, all rows, unless the model was
 * made with an lm_chunk): only one chunk's (rows, Vp) logits exist at once. */
static int chunk_rows(const PwModel *m, int r0, int BT)
{
    return BT - r0 < m->lm_rows ? BT - r0 : m->lm_rows;
}

int pw_model_heads_forward(const PwModel *m, const PwHeads *h)
{
    const PwOps *o = m->ops;
    const int C = m->arch.n_embd, V = m->arch.vocab_size, Vp = m->Vp, B = m->B, T = m->T;
    const int BT = B * T;
    if (m->heads & PW_HEAD_LM)
        for (int r0 = 0; r0 < BT; r0 += m->lm_rows) {
            int n = chunk_rows(m, r0, BT);
            lm_logits(m, h, r0, n);
            o->logprobs_forward(o, h->logp + r0, h->entropy + r0, h->lpstats + stat_at(r0),
                                h->logits, m->d_targets + r0, n, V, Vp);
        }
    if (m->heads & PW_HEAD_VALUE)
        o->matmul_forward(o, h->value, h->lnf, h->valuew, h->valueb, BT, C, 1);
    if (m->heads & PW_HEAD_SCORE) {
        /* the score is read at the last real token, wherever padding put it; a row of padding
         * only has no score */
        o->zero(o, h->score, (size_t)B * sizeof(float));
        for (int b = 0; b < B; b++)
            if (m->h_last[b] >= 0)
                o->matmul_forward(o, h->score + b, h->lnf + ((size_t)b * T + m->h_last[b]) * C,
                                  h->scorew, h->scoreb, 1, C, 1);
    }
    return (m->heads & PW_HEAD_LM) && BT <= m->lm_rows;
}

int pw_model_heads_backward(const PwModel *m, const PwHeads *h, float *dlnf, const float *dlogp,
                            const float *dentropy, const float *dvalue, const float *dscore)
{
    const PwOps *o = m->ops;
    const int C = m->arch.n_embd, V = m->arch.vocab_size, Vp = m->Vp, B = m->B, T = m->T;
    const int BT = B * T;
    int lm = (m->heads & PW_HEAD_LM) && (dlogp || dentropy);
    /* the LM head's chunks cover every row: their products set dlnf; without it, zeros */
    if (!lm) {
        o->zero(o, dlnf, (size_t)BT * C * sizeof(float));
    } else {
        /* the logits are dead after this step, so their buffer takes dlogits; its padding
         * columns get 0, so the padding rows of the weight get no gradient. In chunks the last
         * one first: the forward left its logits in the buffer, the others are made again. */
        int last = (BT - 1) / m->lm_rows * m->lm_rows;
        for (int r0 = last; r0 >= 0; r0 -= m->lm_rows) {
            int n = chunk_rows(m, r0, BT);
            if (r0 != last) lm_logits(m, h, r0, n);
            const float *dl = dlogp ? dlogp + r0 : NULL, *de = dentropy ? dentropy + r0 : NULL;
            if (m->precision == PW_PRECISION_BF16) {
                /* rounded as the product would round them, over the rows they come from
                 * (2 Vp halves apart), the temperature's 1 / tau folded in */
                uint16_t *d16 = (uint16_t *)h->logits;
                o->logprobs_backward_bf16(o, d16, h->logits, h->lpstats + stat_at(r0),
                                          m->d_targets + r0, dl, de, n, V, Vp,
                                          m->inv_temperature);
                pw_model_matmul_backward16(m, dlnf + (size_t)r0 * C, h->dlmw, NULL, d16,
                                           (size_t)2 * Vp, h->lnf + (size_t)r0 * C, NULL,
                                           h->lmw, n, C, Vp, 1);
                continue;
            }
            o->logprobs_backward(o, h->logits, h->logits, h->lpstats + stat_at(r0),
                                 m->d_targets + r0, dl, de, n, V, Vp);
            if (m->inv_temperature != 1.0f) /* d(logits / tau) / d logits = 1 / tau */
                o->scale(o, h->logits, m->inv_temperature, (size_t)n * Vp);
            pw_model_matmul_backward(m, dlnf + (size_t)r0 * C, h->dlmw, NULL, h->logits,
                                     h->lnf + (size_t)r0 * C, NULL, h->lmw, n, C, Vp, 1);
        }
    }
    if ((m->heads & PW_HEAD_VALUE) && dvalue)
        o->matmul_backward(o, dlnf, h->dvaluew, h->dvalueb, dvalue, h->lnf, h->valuew, BT, C, 1,
                           0);
    if ((m->heads & PW_HEAD_SCORE) && dscore)
        for (int b = 0; b < B; b++) {
            if (m->h_last[b] < 0) continue;
            size_t row = ((size_t)b * T + m->h_last[b]) * C;
            o->matmul_backward(o, dlnf + row, h->dscorew, h->dscoreb, dscore + b, h->lnf + row,
                               h->scorew, 1, C, 1, 0);
        }
    return lm;
}
