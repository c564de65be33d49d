/* reference.c: the reference role: logp_ref_t = log pi_ref(y_t | x, y_<t) of the response
 * tokens under the frozen initial policy, no gradients, no state (docs/algorithm.md, Rollout). */
#include <stdlib.h>

#include "roles.h"

void pw_reference_evaluate(PwRun *r)
{
    PwRows *rows = &r->ref_rows;
    int *start, *count;
    int n = pw_chunks(rows->n, r->s.minibatches, r->s.micro, &start, &count);
    /* The same chunks as the actor's rollout pass: with equal blocks the two forwards are the
     * same computation, so KL is exactly 0 while the weights are equal. */
    for (int c = 0; c < n; c++)
        pw_rows_forward(r, r->ref, rows, start[c], count[c], r->ref_logp + (size_t)start[c] * r->R,
                        NULL, NULL, NULL);
    free(start);
    free(count);
}
