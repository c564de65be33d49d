/* heads.c: the LM, value and score heads on a family's final hidden states, forward and
 * backward, shared by every family: each family only says where its buffers and weights are. */
#include "model_internal.h"

void pw_model_heads_forward(const PwModel *m, const PwHeads *h)
{
    const PwOps *o = m->ops;
    const int C = m->arch.n_embd, V = m->arch.vocab_size, Vp = m->Vp, B = m->B, T = m->T;
    const int BT = B * T;
    if (m->heads & PW_HEAD_LM) {
        /* all Vp columns (the padding rows of the weight give 0 there): the product keeps its
         * aligned shape, and the softmax below reads the V real columns only */
        pw_model_matmul_forward(m, h->logits, h->lnf, NULL, h->lmw, NULL, BT, C, Vp);
        /* sampling at temperature tau draws from softmax(logits / tau): the log-probs of the
         * sampled tokens are taken from the same distribution */
        if (m->inv_temperature != 1.0f)
            o->scale(o, h->logits, m->inv_temperature, (size_t)BT * Vp);
        o->logprobs_forward(o, h->logp, h->entropy, h->logits, m->d_targets, BT, V, Vp);
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
}

int pw_model_heads_backward(const PwModel *m, const PwHeads *h, float *dlnf, const float *dlogp,
                            const float *dentropy, const float *dvalue, const float *dscore)
{
    const PwOps *o = m->ops;
    const int C = m->arch.n_embd, V = m->arch.vocab_size, Vp = m->Vp, B = m->B, T = m->T;
    const int BT = B * T;
    int lm = (m->heads & PW_HEAD_LM) && (dlogp || dentropy);
    o->zero(o, dlnf, (size_t)BT * C * sizeof(float));
    if (lm) {
        /* the logits are dead after this step, so their buffer takes dlogits; its padding
         * columns get 0, so the padding rows of the weight get no gradient */
        o->logprobs_backward(o, h->logits, h->logits, m->d_targets, dlogp, dentropy, BT, V, Vp);
        if (m->inv_temperature != 1.0f) /* d(logits / tau) / d logits = 1 / tau */
            o->scale(o, h->logits, m->inv_temperature, (size_t)BT * Vp);
        pw_model_matmul_backward(m, dlnf, h->dlmw, NULL, h->logits, h->lnf, NULL, h->lmw, BT, C,
                                 Vp);
    }
    if ((m->heads & PW_HEAD_VALUE) && dvalue)
        o->matmul_backward(o, dlnf, h->dvaluew, h->dvalueb, dvalue, h->lnf, h->valuew, BT, C, 1);
    if ((m->heads & PW_HEAD_SCORE) && dscore)
        for (int b = 0; b < B; b++) {
            if (m->h_last[b] < 0) continue;
            size_t row = ((size_t)b * T + m->h_last[b]) * C;
            o->matmul_backward(o, dlnf + row, h->dscorew, h->dscoreb, dscore + b, h->lnf + row,
                               h->scorew, 1, C, 1);
        }
    return lm;
}
