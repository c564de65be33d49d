/* critic.c: the critic role: V_t, the value head at each response position (the value of the
 * state before y_t), and its training on the actor's returns with the clipped value loss. */
#include <stdlib.h>
#include <string.h>

#include "pw_algo.h"
#include "roles.h"

void pw_critic_evaluate(PwRun *r)
{
    PwRows *rows = &r->crit_rows;
    int *start, *count;
    int n = pw_chunks(rows->n, r->s.minibatches, r->s.micro, &start, &count);
    for (int c = 0; c < n; c++)
        pw_rows_forward(r, r->critic, rows, start[c], count[c], NULL, NULL,
                        r->vold + (size_t)start[c] * r->R, NULL);
    free(start);
    free(count);
}

/* L_v = 0.5 * mean max((V - R)^2, (clip(V, Vold - c, Vold + c) - R)^2) over the real tokens of
 * each minibatch, for ppo.epochs passes; gradients summed over the critic ranks. */
void pw_critic_train(PwRun *r)
{
    PwErr err;
    PwRows *all = &r->crit_rows, ord = {0}, *rows = &ord; /* this epoch's order of the block */
    int R = r->R, M = r->s.minibatches, mb = r->s.micro, n = all->n;
    int *perm = pw_roles_alloc((size_t)n * sizeof(int));
    float *vold = pw_roles_alloc((size_t)n * R * sizeof(float));
    float *vret = pw_roles_alloc((size_t)n * R * sizeof(float));
    float *v = pw_roles_alloc((size_t)mb * R * sizeof(float));
    float *dv = pw_roles_alloc((size_t)mb * R * sizeof(float));
    double acc[3] = {0, 0, 0}; /* sum of minibatch losses, clipfrac, minibatches */
    double lr = 0.0, skipped = 0.0;
    for (int e = 0; e < r->s.epochs; e++) {
        pw_minibatch_order(r, all, e, perm);
        pw_rows_permuted(&ord, all, perm);
        pw_permute_f32(vold, r->vold, perm, n, R);
        pw_permute_f32(vret, r->vret, perm, n, R);
        for (int k = 0; k < M; k++) {
            PwBlock blk = pw_block(n, M, k);
            double tok = pw_minibatch_weight(r, PW_ROLE_CRITIC, rows->rmask, R, blk);
            if (pw_model_zero_grad(r->critic, &err))
                pw_comm_fatal(__FILE__, __LINE__, "critic: %s", err.msg);
            double st[3] = {0, 0, 0}; /* loss, clipfrac * count, count */
            PwGradSync *gs = pw_grads_begin(&r->w, PW_ROLE_CRITIC, r->critic, r->s.grad_bucket);
            if (!blk.count) pw_grads_idle(r->critic, gs);
            int backwards = 0;
            int most = pw_grads_most(&r->w, PW_ROLE_CRITIC, r->critic,
                                     (int)((blk.count + mb - 1) / mb));
            for (int64_t i0 = blk.start; i0 < blk.start + blk.count; i0 += mb) {
                int nb = (int)(blk.start + blk.count - i0 < mb ? blk.start + blk.count - i0 : mb);
                int last = i0 + nb == blk.start + blk.count;
                size_t o = (size_t)i0 * R;
                pw_rows_forward(r, r->critic, rows, (int)i0, nb, NULL, NULL, v, NULL);
                PwValueStats vs;
                pw_value_loss(&vs, dv, v, vold + o, vret + o, rows->rmask + o,
                              (size_t)nb * R, r->s.vclip, tok);
                pw_rows_backward(r->critic, NULL, NULL, dv, last ? gs : NULL, "critic");
                backwards++;
                st[0] += vs.loss;
                st[1] += vs.clipfrac * vs.count;
                st[2] += vs.count;
            }
            pw_grads_even(r->critic, most - backwards, "critic");
            pw_roles_allreduce_f64(r, PW_ROLE_CRITIC, st, 3);
            lr = pw_roles_lr(&r->s, r->s.critic_lr, r->s.critic_min_lr, r->opt_step + e * M + k);
            skipped += pw_roles_optimizer_step(r, PW_ROLE_CRITIC, r->critic, gs, lr,
                                               r->opt_step + e * M + k + 1, st[0], e, k);
            acc[0] += st[0];
            acc[1] += st[2] > 0 ? st[1] / st[2] : 0.0;
            acc[2] += 1.0;
        }
    }
    r->critic_stats[0] = acc[0] / acc[2];
    r->critic_stats[1] = acc[1] / acc[2];
    r->critic_stats[2] = lr;
    r->critic_stats[3] = skipped;
    free(v);
    free(dv);
    free(perm);
    free(vold);
    free(vret);
    pw_rows_free(&ord);
}
