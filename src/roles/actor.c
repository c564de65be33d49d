/* actor.c: the actor role: logp_old of the sampled tokens, per-token rewards with the KL
 * penalty, GAE advantages whitened over the whole role, and the clipped policy loss with an
 * entropy bonus for ppo.epochs x ppo.minibatches AdamW steps (docs/algorithm.md, One PPO step). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pw_algo.h"
#include "roles.h"

/* Recomputed on the full sequences by the actor itself, never taken from the generator; the
 * chunks are the ones training uses, so epoch 0 sees exactly these numbers again. */
void pw_actor_logprobs(PwRun *r)
{
    PwRows *rows = &r->act_rows;
    int *start, *count;
    int n = pw_chunks(rows->n, r->s.minibatches, r->s.micro, &start, &count);
    for (int c = 0; c < n; c++) {
        size_t o = (size_t)start[c] * r->R;
        pw_rows_forward(r, r->actor, rows, start[c], count[c], r->logp_old + o, r->ent_old + o, NULL,
                        NULL);
    }
    free(start);
    free(count);
}

/* Ensemble objective (mean | wco | uwo), then optional running normalisation over every score
 * so far, then optional clip, then the non-stop penalty, which must win over everything. */
void pw_actor_combine_scores(PwRun *r)
{
    PwErr err;
    PwRows *rows = &r->act_rows;
    int n = rows->n;
    if (pw_ensemble_combine(r->score, NULL, r->scores_k, r->K, n, (PwRewardObjective)r->s.objective,
                            r->s.uwo_weight, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    if (r->s.reward_normalize) {
        double b[3] = {0, 0, (double)n}; /* sum, sum of squares, count over the global batch */
        for (int i = 0; i < n; i++) {
            b[0] += r->score[i];
            b[1] += (double)r->score[i] * r->score[i];
        }
        pw_roles_allreduce_f64(r, PW_ROLE_ACTOR, b, 3);
        double mean = b[0] / b[2];
        pw_running_moments_merge(&r->running, b[2], mean, b[1] - b[0] * mean);
        pw_running_moments_normalize(&r->running, r->score, n);
    }
    pw_reward_clip(r->score, n, r->s.reward_clip);
    if (r->s.non_stop_penalty && r->stop_id >= 0)
        pw_nonstop_penalty(r->score, rows->stopped, n, r->s.penalty);
}

/* Group advantages over the whole step: a group may straddle two actor ranks' blocks, so every
 * rank sums the global (N) score vector, each filling its own rows (x + 0 is exact, so the
 * numbers do not depend on the placement), computes every group and keeps its own rows. */
static void group_advantages(PwRun *r, const float *rlhf)
{
    PwErr err;
    PwRows *rows = &r->act_rows;
    int n = rows->n, R = r->R, N = r->s.N;
    double *g = pw_roles_alloc((size_t)N * sizeof(double));
    float *sc = pw_roles_alloc((size_t)N * sizeof(float));
    float *adv = pw_roles_alloc((size_t)N * sizeof(float));
    for (int b = 0; b < n; b++) g[rows->r0 + b] = r->s.kl_in_loss ? r->score[b] : rlhf[b];
    pw_roles_allreduce_f64(r, PW_ROLE_ACTOR, g, N);
    for (int i = 0; i < N; i++) sc[i] = (float)g[i];
    pw_group_stats(sc, N / r->s.group, r->s.group, &r->stats[PW_ST_ZERO_STD],
                   &r->stats[PW_ST_GROUP_STD]);
    if (pw_group_advantages(adv, sc, N / r->s.group, r->s.group, (PwAlgorithm)r->s.algorithm,
                            r->s.scale_by_std, r->s.std_eps, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    pw_sequence_to_tokens(r->adv, adv + rows->r0, rows->rmask, n, R);
    memset(r->ret, 0, (size_t)n * R * sizeof(float));
    free(g);
    free(sc);
    free(adv);
}

void pw_actor_advantages(PwRun *r)
{
    PwErr err;
    PwRows *rows = &r->act_rows;
    int n = rows->n, R = r->R;
    float *kl_sum = pw_roles_alloc((size_t)n * sizeof(float));
    float *non_score = pw_roles_alloc((size_t)n * sizeof(float));
    float *rlhf = pw_roles_alloc((size_t)n * sizeof(float));
    pw_kl_per_token(r->kl, r->logp_old, r->logp_ref, rows->rmask, n, R,
                    (PwKlEstimator)r->s.kl_estimator);
    /* ppo.kl_penalty_in: loss takes the KL out of the rewards (it is a loss term instead) */
    if (pw_rewards_with_kl(r->rewards, kl_sum, non_score, rlhf, r->kl, r->score, rows->rmask, n, R,
                           r->s.kl_in_loss ? 0.0 : r->beta, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    if (r->s.algorithm != PW_ALGO_PPO) {
        /* grpo, rloo: the sequence score is the combined score, plus the summed KL penalty
         * (rlhf = score - beta sum kl) when the KL is in the reward; no values, no GAE, no
         * whitening (the group already normalises, as TRL and open-instruct do for GRPO) */
        group_advantages(r, rlhf);
    } else {
        pw_gae(r->adv, r->ret, r->rewards, r->values, rows->rmask, n, R, r->s.gamma,
               r->s.lambda);
    }
    if (r->s.normalize_advantages && r->s.algorithm == PW_ALGO_PPO) { /* over every real token of the role: needs the all-reduce */
        PwWhitenStats ws;
        pw_whiten_partial(&ws, r->adv, rows->rmask, (size_t)n * R);
        pw_roles_allreduce_f64(r, PW_ROLE_ACTOR, &ws.sum, 3);
        pw_whiten_apply(r->adv, rows->rmask, (size_t)n * R, &ws, 1);
    }

    /* rollout statistics: per-sequence sums here, summed over the role, divided by N later */
    double st[PW_ST_COUNT] = {0};
    for (int b = 0; b < n; b++) {
        st[PW_ST_KL] += kl_sum[b];
        st[PW_ST_SCORE] += r->score[b];
        st[PW_ST_RLHF] += rlhf[b];
        st[PW_ST_NONSCORE] += non_score[b];
        st[PW_ST_LENGTH] += rows->lengths[b];
        st[PW_ST_STOPPED] += rows->stopped[b];
        for (int t = 0; t < R; t++) {
            size_t i = (size_t)b * R + t;
            if (rows->rmask[i] == 0.0f) continue;
            st[PW_ST_ENTROPY] -= r->logp_old[i]; /* open-instruct: sum of -logp, per sequence */
            st[PW_ST_GENDIFF] += fabs((double)r->gen_logp_act[i] - r->logp_old[i]);
            st[PW_ST_GENCOUNT] += 1.0;
        }
    }
    /* every row's staleness from its version tag: the updates the actor has made since the
     * weights that sampled it (0..k by construction; anything else is a scheduling bug) */
    for (int b = 0; b < n; b++) {
        int64_t lag = r->step - r->act_ver[b];
        if (lag < 0 || lag > r->k)
            pw_comm_fatal(__FILE__, __LINE__,
                          "actor: row %lld of step %lld was sampled by weights version %d: "
                          "staleness %lld outside 0..%d (async.max_staleness)",
                          (long long)(rows->r0 + b), (long long)r->step, r->act_ver[b],
                          (long long)lag, r->k);
        st[PW_ST_STALENESS] += (double)lag;
        st[PW_ST_STALE_HIST + lag] += 1.0;
    }
    if (r->iw) { /* ppo.off_policy: the step's importance weights, constants of its updates */
        PwOffPolicyStats os;
        pw_off_policy_weights(r->iw, &os, r->logp_old, r->gen_logp_act, rows->rmask,
                              (size_t)n * R, (PwOffPolicy)r->s.off_policy, r->s.tis_cap);
        st[PW_ST_IS_WEIGHT] = os.weight_sum;
        st[PW_ST_IS_CAPPED] = os.capped;
    }
    /* objective/verifiable_correct_rate: rows the first verifier member counts as correct */
    for (int k = 0; k < r->K; k++) {
        if (!pw_member_is_verifier(&r->member[k])) continue;
        const float *sk = r->scores_k + (size_t)k * n;
        for (int b = 0; b < n; b++) st[PW_ST_CORRECT] += pw_verifier_correct(r->member[k].task, sk[b]);
        break;
    }
    pw_roles_allreduce_f64(r, PW_ROLE_ACTOR, st, PW_ST_PG);
    memcpy(r->stats, st, PW_ST_PG * sizeof *st); /* the rest is set elsewhere */
    free(kl_sum);
    free(non_score);
    free(rlhf);
}

/* ratio = exp(logp - logp_old); L = -mean min(ratio A, clip(ratio) A) - bonus * mean H over the
 * real tokens of each minibatch (the global count, so the ranks' gradients sum to the whole). */
void pw_actor_train(PwRun *r)
{
    PwRows *all = &r->act_rows, ord = {0}, *rows = &ord; /* this epoch's order of the block */
    PwErr err;
    int R = r->R, M = r->s.minibatches, mb = r->s.micro, n = all->n;
    int *perm = pw_roles_alloc((size_t)n * sizeof(int));
    float *logp_old = pw_roles_alloc((size_t)n * R * sizeof(float));
    float *adv = pw_roles_alloc((size_t)n * R * sizeof(float));
    float *iw = r->iw ? pw_roles_alloc((size_t)n * R * sizeof(float)) : NULL;
    int bonus = r->s.entropy_bonus != 0.0;
    float *lp = pw_roles_alloc((size_t)mb * R * sizeof(float));
    float *ent = pw_roles_alloc((size_t)mb * R * sizeof(float));
    float *dlp = pw_roles_alloc((size_t)mb * R * sizeof(float));
    float *dent = pw_roles_alloc((size_t)mb * R * sizeof(float));
    /* ppo.loss_aggregation: sequence weighs each token 1/length (pw_loss_weights); token keeps
     * the mask itself, so its numbers are those of a run without the key */
    int seq_agg = r->s.loss_agg == PW_AGG_SEQUENCE, kl_loss = r->s.kl_in_loss;
    float *wts = seq_agg ? pw_roles_alloc((size_t)n * R * sizeof(float)) : NULL;
    float *logp_ref = kl_loss ? pw_roles_alloc((size_t)n * R * sizeof(float)) : NULL;
    float *dkl = kl_loss ? pw_roles_alloc((size_t)mb * R * sizeof(float)) : NULL;
    double acc[6] = {0}; /* per-minibatch means summed: loss, approxkl, clipfrac, ratio, H, count */
    double lr = 0.0, skipped = 0.0;
    for (int e = 0; e < r->s.epochs; e++) {
        pw_minibatch_order(r, all, e, perm);
        pw_rows_permuted(&ord, all, perm);
        pw_permute_f32(logp_old, r->logp_old, perm, n, R);
        pw_permute_f32(adv, r->adv, perm, n, R);
        if (kl_loss) pw_permute_f32(logp_ref, r->logp_ref, perm, n, R);
        if (iw) pw_permute_f32(iw, r->iw, perm, n, R);
        if (seq_agg) pw_loss_weights(wts, rows->rmask, n, R, PW_AGG_SEQUENCE);
        const float *w = seq_agg ? wts : rows->rmask;
        for (int k = 0; k < M; k++) {
            PwBlock blk = pw_block(n, M, k);
            /* the global normaliser: real tokens, or (sequence) responses, of the minibatch */
            double tok = pw_minibatch_weight(r, PW_ROLE_ACTOR, w, R, blk);
            if (pw_model_zero_grad(r->actor, &err))
                pw_comm_fatal(__FILE__, __LINE__, "actor: %s", err.msg);
            double st[6] = {0}; /* loss, approxkl*c, clipfrac*c, ratio*c, H*c, c */
            PwGradSync *gs = pw_grads_begin(&r->w, PW_ROLE_ACTOR, r->actor, r->s.grad_bucket);
            if (!blk.count) pw_grads_idle(r->actor, gs);
            int backwards = 0;
            int most = pw_grads_most(&r->w, PW_ROLE_ACTOR, r->actor,
                                     (int)((blk.count + mb - 1) / mb));
            for (int64_t i0 = blk.start; i0 < blk.start + blk.count; i0 += mb) {
                int nb = (int)(blk.start + blk.count - i0 < mb ? blk.start + blk.count - i0 : mb);
                int last = i0 + nb == blk.start + blk.count;
                size_t o = (size_t)i0 * R;
                pw_rows_forward(r, r->actor, rows, (int)i0, nb, lp, ent, NULL, NULL);
                PwPolicyStats ps;
                pw_policy_loss(&ps, dlp, dent, lp, logp_old + o, adv + o, ent, w + o,
                               iw ? iw + o : NULL, (size_t)nb * R, r->s.ratio_eps,
                               r->s.entropy_bonus, tok);
                if (kl_loss) { /* GRPO's KL term: its gradient joins the policy loss's */
                    PwKlLossStats ks;
                    pw_kl_loss(&ks, dkl, lp, logp_ref + o, w + o, (size_t)nb * R,
                               (PwKlEstimator)r->s.kl_estimator, r->s.kl_loss_coef, tok);
                    for (size_t j = 0; j < (size_t)nb * R; j++) dlp[j] += dkl[j];
                    ps.loss += ks.loss;
                }
                pw_rows_backward(r->actor, dlp, bonus ? dent : NULL, NULL, last ? gs : NULL,
                                 "actor");
                backwards++;
                st[0] += ps.loss;
                st[1] += ps.approxkl * ps.count;
                st[2] += ps.clipfrac * ps.count;
                st[3] += ps.ratio_mean * ps.count;
                st[4] += ps.entropy_mean * ps.count;
                st[5] += ps.count;
            }
            pw_grads_even(r->actor, most - backwards, "actor");
            pw_roles_allreduce_f64(r, PW_ROLE_ACTOR, st, 6);
            lr = pw_roles_lr(&r->s, r->s.lr, r->s.min_lr, r->opt_step + e * M + k);
            skipped += pw_roles_optimizer_step(r, PW_ROLE_ACTOR, r->actor, gs, lr,
                                               r->opt_step + e * M + k + 1, st[0], e, k);
            double c = st[5] > 0 ? st[5] : 1.0;
            acc[0] += st[0];
            for (int j = 1; j < 5; j++) acc[j] += st[j] / c;
            acc[5] += 1.0;
        }
    }
    r->stats[PW_ST_PG] = acc[0] / acc[5];
    r->stats[PW_ST_APPROXKL] = acc[1] / acc[5];
    r->stats[PW_ST_CLIPFRAC] = acc[2] / acc[5];
    r->stats[PW_ST_RATIO] = acc[3] / acc[5];
    r->stats[PW_ST_ENTROPY_AVG] = acc[4] / acc[5];
    r->stats[PW_ST_LR] = lr;
    r->stats[PW_ST_SKIPPED] = skipped; /* the critic's are added from its report */
    free(lp);
    free(ent);
    free(dlp);
    free(dent);
    free(wts);
    free(logp_ref);
    free(dkl);
    free(perm);
    free(logp_old);
    free(adv);
    free(iw);
    pw_rows_free(&ord);
}
