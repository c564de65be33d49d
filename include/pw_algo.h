/* pw_algo.h: the PPO-for-RLHF math as pure functions on arrays (KL, rewards, GAE, whitening,
 * losses and their gradients, ensemble objectives, KL control, learning-rate schedule).
 *
 * Nothing here knows about ranks, models or files; docs/algorithm.md gives every formula.
 * Conventions shared by every function:
 *   - a batch of responses is a (B,T) float32 array, row-major; mask (B,T) is 1 for a real
 *     response token (the stop token included) and 0 for the padding after it. Any non-zero
 *     mask value counts as real.
 *   - sums and means are accumulated in double; per-token outputs are float32.
 *   - functions that can fail on bad input return 0 on success, -1 after filling a PwErr.
 *   - "n" is the number of tokens of a flattened (B,T) array, i.e. B*T. */
#ifndef PW_ALGO_H
#define PW_ALGO_H

#include <stddef.h>

#include "pw_common.h"

/* ============================================================================== helpers === */

/* Index of name in names[0..count) ignoring case; -1 with a message naming the config key and
 * the valid values otherwise. The matching rule of every parser below ("K3" and "k3", "UWO"
 * and "uwo" are the same). pw_name_of is the way back ("?" when out of range). */
int pw_name_lookup(const char *key, const char *name, const char *const *names, int count,
                   PwErr *err);
const char *pw_name_of(const char *const *names, int count, int i);

/* ======================================================================== response mask ===== */

/* mask (B,T) from sampled tokens (B,T): 1 up to and including the first stop_token_id, 0 after.
 * lengths (B) (may be NULL) gets the number of real tokens; stopped (B) (may be NULL) gets 1
 * where the row contains the stop token and 0 where generation hit the length limit. */
void pw_response_mask(float *mask, int *lengths, int *stopped, const int *tokens, int B, int T,
                      int stop_token_id);

/* ==================================================================================== KL === */

/* Per-token estimators of KL(pi_old || pi_ref) from the two log-probs of the sampled token.
 * With d = logp_old - logp_ref and r = pi_ref/pi_old = exp(-d):
 *   K1: d      K2: 0.5*d^2      K3: (r - 1) - log r = exp(-d) - 1 + d      ABS: |d| */
typedef enum PwKlEstimator { PW_KL_K1 = 0, PW_KL_K2, PW_KL_K3, PW_KL_ABS } PwKlEstimator;

/* The names, indexed by the enum and ended by NULL: the one list behind the parser, the printer
 * and the configuration's ppo.kl_estimator key. */
extern const char *const pw_kl_estimator_names[];
/* "k1" | "k2" | "k3" | "abs", any case (ppo.kl_estimator); -1 with a message naming the valid
 * values. */
int pw_kl_estimator_parse(const char *name, PwKlEstimator *out, PwErr *err);
const char *pw_kl_estimator_name(PwKlEstimator est);
/* ppo.use_absolute_kl = true overrides ppo.kl_estimator with ABS (NeMo-Aligner's switch). */
PwKlEstimator pw_kl_estimator_resolve(PwKlEstimator est, int use_absolute_kl);

double pw_kl_token(PwKlEstimator est, double logp_old, double logp_ref);

/* kl (B,T) per token; 0 where mask is 0. */
void pw_kl_per_token(float *kl, const float *logp_old, const float *logp_ref, const float *mask,
                     int B, int T, PwKlEstimator est);

/* =============================================================================== rewards === */

/* Per-token rewards with the KL penalty: rewards[b,t] = -beta * kl[b,t] on real tokens, plus
 * scores[b] at the last real token of row b; 0 on padding.
 * Per-sequence outputs for metrics (each may be NULL):
 *   kl_sum[b]     = sum_t kl[b,t]                        (objective/kl, before the mean over b)
 *   non_score[b]  = -beta * kl_sum[b]                    (objective/non_score_reward)
 *   rlhf[b]       = scores[b] + non_score[b]             (objective/rlhf_reward)
 * Fails if a row has no real token (its score would be silently lost). */
int pw_rewards_with_kl(float *rewards, float *kl_sum, float *non_score, float *rlhf,
                       const float *kl, const float *scores, const float *mask, int B, int T,
                       double beta, PwErr *err);

/* ============================================================ reward ensemble / scoring === */

typedef enum PwRewardObjective {
    PW_OBJECTIVE_MEAN = 0, /* mean_k s_k */
    PW_OBJECTIVE_WCO,      /* worst case: min_k s_k */
    PW_OBJECTIVE_UWO       /* uncertainty weighted: mean_k s_k - uwo_weight * var_k s_k */
} PwRewardObjective;

/* The names, indexed by the enum and ended by NULL (also the configuration's reward.objective). */
extern const char *const pw_reward_objective_names[];
/* "mean" | "wco" | "uwo", any case (reward.objective; seed 004 spells them mean/WCO/UWO). */
int pw_reward_objective_parse(const char *name, PwRewardObjective *out, PwErr *err);
const char *pw_reward_objective_name(PwRewardObjective obj);

/* Combine K scores per sequence. scores is (K,B): row k holds reward model k's scores for the
 * B sequences (what each reward model produces). score (B) gets the objective; var (B) (may be
 * NULL) gets the ensemble variance, unbiased (divides by K-1; 0 when K == 1), the variance UWO
 * subtracts. Fails when K < 1. */
int pw_ensemble_combine(float *score, float *var, const float *scores, int K, int B,
                        PwRewardObjective obj, double uwo_weight, PwErr *err);

/* Non-stop penalty: score[b] = penalty_reward_value where stopped[b] == 0
 * (reward.penalty_reward_value, e.g. -10). */
void pw_nonstop_penalty(float *score, const int *stopped, int B, double penalty_reward_value);

/* Clamp scores to [-clip, clip]; clip <= 0 leaves them unchanged (reward.clip). */
void pw_reward_clip(float *score, int B, double clip);

/* Running mean/variance of scores across steps (Chan et al.'s parallel update), for optional
 * score normalisation: s' = (s - mean) / sqrt(var + 1e-8) with the statistics including the
 * current batch. Plain struct: the runtime may all-reduce a batch's (count, mean, m2) first. */
typedef struct PwRunningMoments {
    double count; /* values seen */
    double mean;
    double m2; /* sum of squared deviations from the mean */
} PwRunningMoments;

void pw_running_moments_init(PwRunningMoments *m);
void pw_running_moments_update(PwRunningMoments *m, const float *x, int n);
/* Fold in a batch given by its count, mean and sum of squared deviations (e.g. sums gathered
 * from the ranks of a role: mean = sum / n, m2 = sumsq - sum * mean). */
void pw_running_moments_merge(PwRunningMoments *m, double n, double mean, double m2);
/* Unbiased variance of everything seen (0 when fewer than two values). */
double pw_running_moments_var(const PwRunningMoments *m);
/* x[i] = (x[i] - mean) / sqrt(var + 1e-8), in place (one division, not a reciprocal). */
void pw_running_moments_normalize(const PwRunningMoments *m, float *x, int n);

/* ================================================================================== GAE ==== */

/* Generalised advantage estimation along each row, backwards from the last real token:
 *   delta_t = r_t + gamma * V_{t+1} - V_t,   V = 0 past the last real token
 *   A_t     = delta_t + gamma * lambda * A_{t+1}
 *   R_t     = A_t + V_t
 * adv, ret (B,T); 0 where mask is 0. A padded position ends the row's recursion (the mask is
 * expected to be a prefix of ones). gamma = ppo.discount_factor, lambda = ppo.gae_lambda. */
void pw_gae(float *adv, float *ret, const float *rewards, const float *values, const float *mask,
            int B, int T, double gamma, double lambda);

/* ============================================================================ whitening === */

/* Whitening over all real tokens of the GLOBAL batch, in two halves so that the runtime can
 * all-reduce between them. The struct is three contiguous doubles: all-reduce it as
 * 3 x MPI_DOUBLE with MPI_SUM (or pw_whiten_stats_add for ranks simulated in one process). */
typedef struct PwWhitenStats {
    double sum;   /* sum of x over real tokens */
    double sumsq; /* sum of x^2 over real tokens */
    double count; /* number of real tokens */
} PwWhitenStats;

/* (a) this rank's partial sums over its n = B*T values. */
void pw_whiten_partial(PwWhitenStats *s, const float *x, const float *mask, size_t n);
void pw_whiten_stats_add(PwWhitenStats *acc, const PwWhitenStats *other);
/* Mean and unbiased variance (divides by count - 1, as TRL's masked_var; 0 when count < 2). */
void pw_whiten_moments(const PwWhitenStats *s, double *mean, double *var);
/* (b) x = (x - mean) / sqrt(var + 1e-8) on real tokens with the given global stats; with
 * shift_mean = 0 the mean is added back (only the scale changes). Padding is set to 0. */
void pw_whiten_apply(float *x, const float *mask, size_t n, const PwWhitenStats *global,
                     int shift_mean);
/* Single-rank convenience: partial sums then apply. */
void pw_whiten(float *x, const float *mask, size_t n, int shift_mean);

/* ============================================================================== losses ===== */

/* A loss is sum over real tokens / normaliser. normaliser <= 0 means "this call's real-token
 * count" (a plain masked mean). A data-parallel caller passes the GLOBAL real-token count of
 * the minibatch, so that the losses and gradients of its ranks sum to those of the whole
 * minibatch (and the gradient all-reduce must then SUM, not average).
 * Statistics (approxkl, clipfrac, ratio, entropy, value means) are always means over this
 * call's real tokens, with `count` given so that ranks can combine them weighted by count. */

/* 1/N for a loss over n tokens weighted by w: N = normaliser, or sum_t w_t when normaliser <= 0
 * (the real-token count for a 0/1 mask); 0 when N is 0. *count gets the tokens with w != 0. */
double pw_loss_inv_normaliser(const float *w, size_t n, double normaliser, double *count);

typedef struct PwPolicyStats {
    double loss;         /* pg_loss + entropy_loss, the value whose gradient is returned */
    double pg_loss;      /* -sum min(ratio*A, clip(ratio)*A) / normaliser */
    double entropy_loss; /* -entropy_bonus * sum H / normaliser (0 without entropies) */
    double approxkl;     /* 0.5 * mean (logp_new - logp_old)^2 */
    double clipfrac;     /* fraction of real tokens where the clipped term is strictly the min */
    double ratio_mean;   /* mean ratio */
    double entropy_mean; /* mean H (0 without entropies) */
    double count;        /* real tokens in this call */
} PwPolicyStats;

/* Clipped PPO policy loss with an entropy bonus (arrays of n tokens), each token's terms weighted
 * by its mask value w_t (1 for a real token; pw_loss_weights gives other aggregations) and its
 * policy term by an importance weight u_t (pw_off_policy_weights; iw NULL: u_t = 1):
 *   ratio = exp(logp_new - logp_old)
 *   L = -sum_t w_t u_t min(ratio_t*A_t, clip(ratio_t, 1-eps, 1+eps)*A_t) / N
 *       - entropy_bonus * sum_t w_t H_t / N
 * normaliser <= 0 means sum_t w_t (the real-token count for a 0/1 mask).
 * eps = ppo.ratio_eps, entropy_bonus = ppo.entropy_bonus.
 * dlogp_new (n) gets dL/dlogp_new: -w*u*ratio*A/N where the unclipped term is the min, else 0.
 * dentropy (n) gets dL/dH = -w*entropy_bonus/N. Both 0 on padding; either may be NULL, and
 * entropy may be NULL (no bonus, dentropy zeroed). */
void pw_policy_loss(PwPolicyStats *st, float *dlogp_new, float *dentropy, const float *logp_new,
                    const float *logp_old, const float *adv, const float *entropy,
                    const float *mask, const float *iw, size_t n, double ratio_eps,
                    double entropy_bonus, double normaliser);

/* Correction for tokens sampled by a behaviour policy mu (the generator, possibly some updates
 * behind) other than the proximal policy pi_old the ratio is taken against (ppo.off_policy):
 *   none       u_t = 1 (the generator's log-probs only feed generator/logprob_diff)
 *   tis        u_t = min(exp(logp_old_t - logp_gen_t), cap)       truncated importance sampling
 *   decoupled  u_t = exp(logp_old_t - logp_gen_t), or 0 where that exceeds cap (cap <= 0: never)
 *              the decoupled objective: trust region around pi_old, importance weight to mu */
/* The largest async.max_staleness (updates a sample's weights may lag the actor's): the
 * generator's queue holds at most this many batches. */
#define PW_MAX_STALENESS 8

typedef enum PwOffPolicy { PW_OFFPOL_NONE = 0, PW_OFFPOL_TIS, PW_OFFPOL_DECOUPLED } PwOffPolicy;
extern const char *const pw_off_policy_names[];
const char *pw_off_policy_name(PwOffPolicy m);

typedef struct PwOffPolicyStats {
    double weight_sum; /* sum of u over the real tokens */
    double capped;     /* real tokens whose weight the cap changed (truncated or left out) */
    double count;      /* real tokens (mask != 0) */
} PwOffPolicyStats;

/* u (n) as above on the tokens with mask != 0, 0 on the others; the stats are sums (add them
 * over ranks, then divide by count). Never fails: exp of a finite difference is finite or +inf,
 * which tis caps and decoupled (with a cap) leaves out. */
void pw_off_policy_weights(float *u, PwOffPolicyStats *st, const float *logp_old,
                           const float *logp_gen, const float *mask, size_t n, PwOffPolicy mode,
                           double cap);

typedef struct PwValueStats {
    double loss;       /* 0.5 * sum max(unclipped, clipped squared error) / normaliser */
    double clipfrac;   /* fraction of real tokens where the clipped error is strictly larger */
    double value_mean; /* mean V */
    double count;      /* real tokens in this call */
} PwValueStats;

/* Clipped value loss: Vc = clip(V, Vold - c, Vold + c),
 *   L = 0.5 * sum_t max((V_t - R_t)^2, (Vc_t - R_t)^2) / N
 * c = critic.loss_clip_val; c <= 0 gives the plain 0.5 * squared error.
 * dvalue (n) (may be NULL) gets dL/dV: (V - R)/N unless the clipped term is strictly larger
 * (then V is outside the clip range and the gradient is 0); 0 on padding. */
void pw_value_loss(PwValueStats *st, float *dvalue, const float *values, const float *values_old,
                   const float *returns, const float *mask, size_t n, double clip,
                   double normaliser);

typedef struct PwBtStats {
    double loss;        /* -sum log sigmoid(s_c - s_r) / normaliser */
    double accuracy;    /* fraction of pairs with s_c > s_r (ties count as wrong) */
    double margin_mean; /* mean (s_c - s_r) */
    double count;       /* pairs in this call */
} PwBtStats;

/* Bradley-Terry reward-model loss over n pairs, L = -sum log sigmoid(s_c - s_r) / N, evaluated
 * stably as softplus(-(s_c - s_r)). dchosen/drejected (n) (may be NULL) get dL/ds_c =
 * -sigmoid(s_r - s_c)/N and dL/ds_r = +sigmoid(s_r - s_c)/N. normaliser <= 0 means n. */
void pw_bt_loss(PwBtStats *st, float *dchosen, float *drejected, const float *s_chosen,
                const float *s_rejected, size_t n, double normaliser);

/* ================================================================ critic-free algorithms === */

/* algorithm: ppo (a critic and GAE) | grpo | rloo (group baselines over the n responses of each
 * prompt, no critic). Names indexed by the enum, ended by NULL. */
typedef enum PwAlgorithm { PW_ALGO_PPO = 0, PW_ALGO_GRPO, PW_ALGO_RLOO } PwAlgorithm;
extern const char *const pw_algorithm_names[];
int pw_algorithm_parse(const char *name, PwAlgorithm *out, PwErr *err);
const char *pw_algorithm_name(PwAlgorithm a);
/* 1 for ppo; a placement holds a critic exactly when this says so. */
int pw_algorithm_needs_critic(PwAlgorithm a);

/* Per-sequence advantages from the scores of n_groups groups of n responses, group g being
 * scores[g*n .. g*n+n) (the n responses of one prompt, consecutive). With m, s the group's mean
 * and unbiased standard deviation (divides by n - 1, as torch.std):
 *   GRPO:  A_i = (r_i - m) / (s + eps), or r_i - m without scale_by_std (Dr. GRPO)
 *   RLOO:  A_i = r_i - (sum_{j != i} r_j) / (n - 1)      (scale_by_std and eps unused)
 * Equal scores give exactly 0. Fails for n < 2 (no baseline), for ppo, or eps < 0. */
int pw_group_advantages(float *adv, const float *scores, int n_groups, int n, PwAlgorithm alg,
                        int scale_by_std, double eps, PwErr *err);
/* For the metrics of a step's groups (same layout): *equal_frac the fraction of groups whose
 * scores are all equal (they teach nothing: objective/zero_std_groups), *std_mean the mean of the
 * groups' unbiased standard deviations (objective/group_std_mean). n >= 2. */
void pw_group_stats(const float *scores, int n_groups, int n, double *equal_frac,
                    double *std_mean);
/* adv_tok (B,T) = adv_seq[b] on the real tokens of row b, 0 on padding (outcome supervision). */
void pw_sequence_to_tokens(float *adv_tok, const float *adv_seq, const float *mask, int B, int T);

/* How a loss sums its per-token terms (ppo.loss_aggregation):
 *   token:     every real token weighs 1; the normaliser is the real-token count
 *              (one long response weighs as much as its tokens)
 *   sequence:  a token of a response of length l weighs 1/l; the normaliser is the number of
 *              responses (each response weighs the same, GRPO's original mean of means) */
typedef enum PwLossAgg { PW_AGG_TOKEN = 0, PW_AGG_SEQUENCE } PwLossAgg;
extern const char *const pw_loss_agg_names[];
int pw_loss_agg_parse(const char *name, PwLossAgg *out, PwErr *err);
const char *pw_loss_agg_name(PwLossAgg a);
/* w (B,T): each real token's weight under agg, 0 on padding. Pass w as the mask of
 * pw_policy_loss and pw_kl_loss; their default normaliser, the sum of the weights, is then the
 * token count or the response count. */
void pw_loss_weights(float *w, const float *mask, int B, int T, PwLossAgg agg);

typedef struct PwKlLossStats {
    double loss;    /* coef * sum_t w_t k_t / N */
    double kl_mean; /* mean k over the tokens with w != 0 */
    double count;   /* tokens with w != 0 */
} PwKlLossStats;

/* The KL to the reference policy as a loss term (GRPO's), per token with estimator est applied to
 * (logp_new, logp_ref) as pw_kl_token does:  L = coef * sum_t w_t k(logp_new_t, logp_ref_t) / N.
 * dlogp_new (n) (may be NULL) gets dL/dlogp_new = coef * w_t * k'_t / N with k' = 1 (k1), d (k2),
 * 1 - exp(-d) (k3), sign(d) (abs) and d = logp_new - logp_ref. normaliser <= 0 means sum_t w_t. */
void pw_kl_loss(PwKlLossStats *st, float *dlogp_new, const float *logp_new, const float *logp_ref,
                const float *weight, size_t n, PwKlEstimator est, double coef, double normaliser);

/* ========================================================================= KL control ===== */

/* beta for the KL penalty, starting at ppo.initial_policy_kl_penalty. Fixed: beta never
 * changes. Adaptive (ppo.adaptive_kl; Ziegler et al. 2019): after each rollout batch of n_steps
 * sequences with measured KL (objective/kl, nats per sequence),
 *   e = clip(kl / target - 1, -0.2, 0.2);  beta *= 1 + e * n_steps / horizon. */
typedef struct PwKlController {
    int adaptive;
    double beta;
    double target;  /* ppo.target_kl (adaptive only) */
    double horizon; /* ppo.kl_horizon, in sequences (adaptive only) */
} PwKlController;

void pw_kl_controller_fixed(PwKlController *c, double beta);
/* Fails unless target > 0 and horizon > 0. */
int pw_kl_controller_adaptive(PwKlController *c, double beta, double target, double horizon,
                              PwErr *err);
/* Returns the beta to use for the next batch. */
double pw_kl_controller_update(PwKlController *c, double current_kl, double n_steps);

/* ======================================================================= LR schedule ===== */

typedef enum PwLrDecay { PW_LR_CONSTANT = 0, PW_LR_LINEAR, PW_LR_COSINE } PwLrDecay;

/* The names, indexed by the enum and ended by NULL (also the configuration's optim.decay). */
extern const char *const pw_lr_decay_names[];
/* "constant" | "linear" | "cosine", any case (optim.decay). */
int pw_lr_decay_parse(const char *name, PwLrDecay *out, PwErr *err);
const char *pw_lr_decay_name(PwLrDecay d);

typedef struct PwLrSchedule {
    PwLrDecay decay;    /* optim.decay */
    double lr;          /* peak learning rate: optim.lr (critic.lr for the critic) */
    double min_lr;      /* floor the decay ends at: optim.min_lr (0 as in Hugging Face) */
    long warmup_steps;  /* linear warm-up from 0 over this many optimizer steps */
    long total_steps;   /* optimizer steps of the whole run (decay ends here) */
} PwLrSchedule;

/* Fails on negative steps, warmup_steps > total_steps, lr < 0 or min_lr outside [0, lr]. */
int pw_lr_schedule_check(const PwLrSchedule *s, PwErr *err);
/* Learning rate of the optimizer step with 0-based index `step` (Hugging Face LambdaLR
 * convention: step 0 of a warm-up has lr 0):
 *   warm-up   step < W:   lr * step / W
 *   constant:             lr
 *   linear:               min_lr + (lr - min_lr) * (1 - p)
 *   cosine:               min_lr + (lr - min_lr) * 0.5 * (1 + cos(pi * p))
 * with p = (step - W) / (total - W) clamped to [0, 1]. */
double pw_lr_at(const PwLrSchedule *s, long step);

#endif
