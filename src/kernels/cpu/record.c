/* record.c: the rows' bookkeeping after a draw (pw_sample_record, pw_sample.h): what the
 * generator's decode loop keeps where the draws are, so that it can run several steps before
 * the host looks at which rows are still going. */
#include "pw_sample.h"

void pw_sample_record(const PwGenRows *g, int n, const int *rows, const int *token,
                      const float *logp, const float *logp_full, int *pass_tok, int *pass_pos,
                      int *pass_slot0)
{
    for (int i = 0; i < n; i++) {
        const int b = rows[i], t = token[i];
        if (pass_tok) {
            pass_tok[i] = t;
            pass_pos[i]++;
            pass_slot0[i]++;
        }
        if (!g->live[b]) continue;
        const size_t at = (size_t)b * g->R + g->length[b];
        g->tokens[at] = t;
        g->logp[at] = logp[i];
        g->logp_full[at] = logp_full[i];
        g->length[b]++;
        g->next[b] = t;
        if (t == g->stop_token) g->live[b] = 0;
    }
}
