/* reward.c: the reward role: s = RM(x, y), the score head at the last real token, from every
 * ensemble member this rank serves; other ranks may serve others (docs/algorithm.md, Rollout). */
#include <stdlib.h>

#include "pw_task.h"
#include "roles.h"

/* The toy verifier: how many real response tokens equal the chosen token. */
static void verify_count(const PwRows *rows, int token, float *score)
{
    for (int b = 0; b < rows->n; b++) {
        int c = 0;
        for (int t = 0; t < rows->lengths[b]; t++)
            c += rows->tokens[(size_t)b * rows->R + t] == token;
        score[b] = (float)c;
    }
}

void pw_verifier_score(int token, int task, const PwRows *rows, float *score)
{
    /* the rows are the task's layout: prompt bytes + SEP left-padded with PAD, then the
     * response up to EOS (run.c requires the byte tokenizer for the task verifier) */
    if (!task) {
        verify_count(rows, token, score);
        return;
    }
    pw_task_gold_rows(rows->prompt, rows->P, rows->tokens, rows->R, rows->n, score, NULL);
    if (task == PW_VERIFIER_EXACT) /* gold 1 is exactly the answer */
        for (int b = 0; b < rows->n; b++) score[b] = score[b] == 1.0f ? 1.0f : 0.0f;
}

void pw_reward_evaluate(PwRun *r)
{
    for (int k = 0; k < r->K; k++) {
        PwMember *mem = &r->member[k];
        if (mem->me < 0) continue;
        if (pw_member_is_verifier(mem)) {
            pw_verifier_score(mem->verifier_token, mem->task, &mem->rows, mem->score);
            continue;
        }
        int *start, *count;
        int n = pw_chunks(mem->rows.n, r->s.minibatches, r->s.micro, &start, &count);
        for (int c = 0; c < n; c++)
            pw_rows_forward(r, mem->model, &mem->rows, start[c], count[c], NULL, NULL, NULL,
                            mem->score + start[c]);
        free(start);
        free(count);
    }
}
