/* roles.h: what the files of src/roles share: the run settings, the prompt data, the rollout rows
 * of one block, the state of every role a rank may hold, and the phase exchange between roles.
 * Internal: nothing outside src/roles includes it but the roles' unit tests. settings.c alone
 * reads the configuration and copies what the roles use into PwSettings (see docs/roles.md). */
#ifndef PW_ROLES_INTERNAL_H
#define PW_ROLES_INTERNAL_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "pw_algo.h"
#include "grads.h"
#include "pw_comm.h"
#include "pw_data.h"
#include "pw_fanout.h"
#include "pw_common.h"
#include "pw_message.h"
#include "pw_model.h"
#include "pw_role.h"
#include "pw_tokenizer.h"

struct PwConfig;
struct PwPlacement;
typedef struct PwRun PwRun;
struct PwGen;

/* ============================================================================ settings === */

#define PW_MAX_MEMBERS 16

/* The configuration keys the roles read, as plain numbers (settings.c). Enum fields hold
 * pw_algo.h's enums (pw_config.h uses the same ones). */
typedef struct PwSettings {
    uint64_t seed;
    int staleness;                           /* async.max_staleness */
    int64_t episodes, steps;
    int N, micro, epochs, minibatches;       /* ppo.num_rollout_samples, ...micro_batch_size */
    int gen_micro;                           /* ppo.rollout_micro_batch_size: generation's */
    double beta, target_kl, kl_horizon;
    int adaptive_kl, kl_estimator;           /* PwKlEstimator after use_absolute_kl */
    double gamma, lambda, entropy_bonus, ratio_eps;
    int normalize_advantages;
    int algorithm, group;                    /* PwAlgorithm; generation.samples_per_prompt */
    int kl_in_loss, loss_agg;                /* ppo.kl_penalty_in is loss; PwLossAgg */
    int off_policy;                          /* PwOffPolicy */
    double tis_cap;
    double kl_loss_coef, std_eps;
    int scale_by_std;
    double vclip, critic_lr, critic_min_lr;
    int max_new_tokens, top_k, stop_kind;    /* stop_kind: 0 eos, 1 period, 2 none */
    double temperature, top_p;
    int reward_normalize, non_stop_penalty, objective;
    double penalty, uwo_weight, reward_clip;
    double lr, min_lr, weight_decay, beta1, beta2, eps, grad_clip;
    int offload_adam;        /* optim.offload_adam_states */
    int zero_stage;          /* optim.zero_stage */
    int64_t warmup;
    int decay;
    int64_t eval_every, eval_num, checkpoint_every, checkpoint_keep;
    double heartbeat_s;
    double timeout_s;
    double progress_s;                       /* runtime.progress_s; 0: no progress line */
    int check_memory;                        /* runtime.check_memory */
    const char *trace_path;                  /* trace.path; empty: no trace */
    int64_t trace_steps;
    int tensorboard;                         /* log.tensorboard */
    int skip_nonfinite;                      /* runtime.on_nonfinite is skip_step */
    int64_t max_skipped;                     /* runtime.max_skipped_steps */
    size_t grad_bucket;                      /* runtime.grad_bucket_mb, in bytes */
    const char *sft, *critic, *prompts, *eval_prompts, *gold; /* borrowed from the PwConfig */
    PwPrecision precision;   /* of every model the roles load (model.precision) */
    int lm_chunk;            /* their LM heads' rows at once (model.lm_head_chunk) */
    int recompute;           /* model.activation_checkpointing: for the trained models */
    PwKVDtype kv_dtype;      /* of every KV cache they make (generation.kv_cache_dtype) */
    const char *tokenizer, *prompt_template;
    int n_reward;
    const char *reward[PW_MAX_MEMBERS];
    int max_prompt_len;
} PwSettings;

int pw_settings_from_config(PwSettings *s, const struct PwConfig *cfg, PwErr *err);

/* ============================================================================== prompts === */

typedef struct PwPrompts {
    PwDataset ds;       /* the prompts (pw_data.h): ds.n kept, ds.max_total the widest */
    int *perm;          /* order of the epoch `perm_epoch` */
    int64_t perm_epoch;
} PwPrompts;

/* Reads the JSONL file `path` of configuration key `key` (data.prompts, data.eval_prompts; the
 * key starts every message) through pw_data.h: {"input_ids": [...]} lines as they are, ids in
 * [0, vocab); with a tokenizer (data.tokenizer) also {"prompt": "text"} lines, which become the
 * text's tokens + SEP, and rows are padded with the tokenizer's PAD. A prompt longer than
 * max_len is skipped (data.max_prompt_len); one longer than `context` is an error naming its
 * line, as is an empty file or one whose every prompt was skipped. */
int pw_prompts_load(PwPrompts *d, const char *key, const char *path, const PwTokenizer *tok,
                    const char *tmpl, int vocab, int max_len, int context, PwErr *err);
void pw_prompts_free(PwPrompts *d);
/* The prompt of global episode e: epoch e / n in an order reshuffled from (seed, epoch). */
int pw_prompts_pick(PwPrompts *d, uint64_t seed, int64_t episode);

/* ========================================================================= rollout rows === */

/* One block of rows of the global batch: global rows [r0, r0 + n). Every rank builds the prompts
 * of its block itself from the data set (so prompts never travel); the response tokens arrive
 * from the generator. The layout fed to the models is (n, T = P + R): the left-padded prompt,
 * then the right-padded response, so that the response token t sits at column P + t and its
 * log-prob / value is read at column P - 1 + t. */
typedef struct PwRows {
    int64_t r0;
    int n, P, R, T;
    int *prompt, *pmask;      /* (n, P) */
    int *tokens;              /* (n, R) */
    float *rmask;             /* (n, R) 1 on real response tokens (stop token included) */
    int *lengths, *stopped;   /* (n) */
    int *seq, *smask, *tgt;   /* (n, T) */
} PwRows;

void pw_rows_free(PwRows *r);
/* Allocates the block and fills its prompts for PPO step `step` (prompt width P): the step's N
 * rows hold N / G prompts of the data order, each G times in consecutive rows
 * (generation.samples_per_prompt); N <= 0: the prompts in file order (evaluation; G unused). */
int pw_rows_prompts(PwRows *r, PwPrompts *d, uint64_t seed, int64_t step, int N, int G,
                    int64_t r0, int n, int P, int R);
/* After tokens arrived: mask, lengths, stop flags and the (n, T) model inputs. */
void pw_rows_finish(PwRows *r, int stop_id);

/* Forward of rows [i0, i0 + nb) of the block through the model interface, which gathers the
 * per-response-position outputs into (nb, R) arrays (any may be NULL; 0 after a row's end):
 * logp, entropy, value; score (nb) for a score head. Log-probs are those of the sampling
 * distribution: logits over generation.temperature. Ends the job on a model error (the inputs
 * were checked before). */
void pw_rows_forward(const PwRun *run, PwModel *m, const PwRows *r, int i0, int nb, float *logp,
                     float *entropy, float *value, float *score);
/* Backward of the last pw_rows_forward from gradients in the same (nb, R) layout (NULL = 0);
 * gs (NULL: none) gets the gradients as they are ready (the last micro batch's backward). */
void pw_rows_backward(PwModel *m, const float *dlogp, const float *dentropy, const float *dvalue,
                      PwGradSync *gs, const char *who);
/* The chunks every role forwards a block in: the minibatches of the block, each cut into micro
 * batches of at most `micro` rows. Using one rule everywhere makes the actor's train-time
 * forward of epoch 0 the same computation as its rollout forward (ratio == 1 bit for bit).
 * Returns the number of chunks; *start and *count are allocated (free them). */
int pw_chunks(int n, int minibatches, int micro, int **start, int **count);
/* The order of the block's rows in PPO epoch `epoch` of this step (perm (rows->n)), cut into
 * contiguous minibatches. Epoch 0 keeps the rollout order: its rows are already prompts in the
 * data set's shuffled order, and its forward is then the rollout forward (ratio == 1 exactly).
 * Later epochs reshuffle from (seed, step, epoch, first row of the block), so each cuts other
 * minibatches (as TRL and open-instruct do) and every placement with the same data-parallel
 * degree cuts the same ones. */
void pw_minibatch_order(const PwRun *r, const PwRows *rows, int epoch, int *perm);
/* dst = the rows of src in the order perm (the arrays a forward and a loss read). */
void pw_rows_permuted(PwRows *dst, const PwRows *src, const int *perm);
/* dst (n, R) = rows of src (n, R) in the order perm. */
void pw_permute_f32(float *dst, const float *src, const int *perm, int n, int R);
/* Learning rate of optimizer step `step` (0-based) for a peak lr and floor min_lr with the run's
 * warm-up and decay; total = steps x epochs x minibatches optimizer steps. */
double pw_roles_lr(const PwSettings *s, double lr, double min_lr, int64_t step);
/* The sum of the token weights w (rows of R) of minibatch `blk` over all ranks of `role` (at
 * least 1): the normaliser that makes the ranks' loss gradients sum to the gradient of the whole
 * minibatch. With the response mask as w it is the real-token count; with sequence weights
 * (pw_loss_weights) the number of responses. */
double pw_minibatch_weight(PwRun *r, PwRole role, const float *w, int R, PwBlock blk);
/* Optimiser step t (1-based) of `role` on minibatch `mb` of epoch `epoch`: the gradient buffer
 * summed over the ranks of the role, then AdamW at learning rate lr, unless `loss` (the
 * minibatch's, summed over the role) or the gradient is NaN or infinite. Then, as
 * runtime.on_nonfinite says, the job stops with a message naming the step and the quantity, or
 * the update is dropped: returns 1 (every rank of the role alike: loss and gradient norm are
 * sums over all of them), 0 after an update. Weights that are bad after an update end the job
 * whatever the setting (docs/roles.md, Non-finite values). gs: that sum over the ranks, in
 * buckets of runtime.grad_bucket_mb (grads.h), begun before the backward of the minibatch's last
 * micro batch and given to it (pw_rows_backward; pw_grads_idle on a rank without rows), ended
 * here; NULL for a role of one rank. */
int pw_roles_optimizer_step(PwRun *r, PwRole role, PwModel *m, PwGradSync *gs, double lr,
                            int64_t t, double loss, int epoch, int mb);

/* ============================================================================= phases ===== */

enum { PW_PH_GENERATE = 0, PW_PH_EVALUATE, PW_PH_ADVANTAGES, PW_PH_TRAIN, PW_PH_WEIGHTS,
       PW_PH_IDLE, PW_PH_COUNT };
extern const char *const pw_phase_names[PW_PH_COUNT];

/* A set of ranks of one role that a batch is block-distributed over: rank i of the set is role
 * rank idx[i] (idx NULL: role ranks 0..n-1). Reward ensemble members use subsets. */
typedef struct PwGroup {
    PwRole role;
    int n;
    const int *idx;
} PwGroup;

/* Messages of one phase. Every rank posts all the sends of the phase for every role it holds,
 * then all its receives, then waits once: sends never block, so no order of ranks and no
 * co-location of roles can deadlock, and same-rank messages are in the mailbox before their
 * receive is matched. */
#define PW_XFER_BLOCK 32
typedef struct PwXfer {
    PwMsgReq **blk; /* blocks of PW_XFER_BLOCK requests: a posted request never moves, since
                     * MPI writes its header and status where it was posted */
    int n, nblk;
} PwXfer;

void pw_xfer_send(PwXfer *x, PwWorld *w, PwRole src, PwRole dst, int dst_idx, PwMsgKind kind,
                  int64_t step, const PwTensor *t);
void pw_xfer_recv(PwXfer *x, PwWorld *w, PwRole dst, PwRole src, int src_idx, PwMsgKind kind,
                  int64_t step, PwTensor *t);
/* Rows of a global batch of N rows: `local` is producer `me`'s block (dimension 0). */
void pw_xfer_send_rows(PwXfer *x, PwWorld *w, PwGroup prod, int me, PwGroup cons, PwMsgKind kind,
                       int64_t step, int64_t N, const PwTensor *local);
void pw_xfer_recv_rows(PwXfer *x, PwWorld *w, PwGroup prod, PwGroup cons, int me, PwMsgKind kind,
                       int64_t step, int64_t N, PwTensor *local);
/* The broadcast of f: its sender's send, a receiver's receive (pw_fanout.h). */
void pw_xfer_fanout_send(PwXfer *x, PwWorld *w, PwFanout *f, PwMsgKind kind, int64_t step,
                         const PwTensor *t);
void pw_xfer_fanout_recv(PwXfer *x, PwWorld *w, PwFanout *f, PwMsgKind kind, int64_t step,
                         PwTensor *t);
/* Waits for everything posted; returns the seconds waited. Errors end the job. */
double pw_xfer_wait(PwXfer *x, PwWorld *w);
void pw_xfer_free(PwXfer *x);

/* ======================================================================== run state ===== */

/* One member of the reward ensemble: a checkpoint folder, or a verifier written as
 * "verifier:count:K" (the score is the number of response tokens equal to K), "verifier:task"
 * (the synthetic tasks' gold scorer, pw_task.h, on byte-tokenizer rows: 2^-edits) or
 * "verifier:exact" (1 for the task's exact answer, else 0). */
#define PW_TASK_VERIFIER "verifier:task"
#define PW_EXACT_VERIFIER "verifier:exact"
enum { PW_VERIFIER_GOLD = 1, PW_VERIFIER_EXACT = 2 }; /* PwMember.task, PwRun.gold_task */
typedef struct PwMember {
    const char *name;
    int verifier_token;       /* >= 0 for a counting verifier */
    int task;                 /* PW_VERIFIER_GOLD or _EXACT for a task verifier, else 0 */
    int nranks;
    int idx[64];              /* reward role ranks serving it */
    int me;                   /* this rank's position among them, -1 if it does not serve it */
    PwModel *model;           /* loaded where served (NULL for a verifier) */
    PwRows rows;              /* this rank's block of the member's rows, this step */
    float *score;             /* (rows.n) */
} PwMember;

/* Per-step numbers the actor reports; indices of PwRun.stats. */
enum {
    PW_ST_KL,
    PW_ST_SCORE,
    PW_ST_RLHF,
    PW_ST_NONSCORE,
    PW_ST_ENTROPY,
    PW_ST_LENGTH,
    PW_ST_STOPPED,
    PW_ST_GENDIFF,
    PW_ST_GENCOUNT,
    PW_ST_CORRECT,
    PW_ST_STALENESS,      /* staleness summed over the samples (their version tags) */
    PW_ST_STALE_HIST,     /* samples of staleness j at PW_ST_STALE_HIST + j, j <= k */
    PW_ST_IS_WEIGHT = PW_ST_STALE_HIST + PW_MAX_STALENESS + 1, /* ppo.off_policy: sum of u */
    PW_ST_IS_CAPPED,      /* tokens whose weight the cap changed */
    PW_ST_PG,
    PW_ST_APPROXKL,
    PW_ST_CLIPFRAC,
    PW_ST_ENTROPY_AVG,
    PW_ST_RATIO,
    PW_ST_VLOSS,
    PW_ST_VCLIPFRAC,
    PW_ST_LR,
    PW_ST_CRITIC_LR,
    PW_ST_BETA,
    PW_ST_SKIPPED,        /* optimiser steps of actor and critic skipped (runtime.on_nonfinite) */
    PW_ST_ZERO_STD,       /* grpo, rloo: fraction of groups whose scores are all equal */
    PW_ST_GROUP_STD,      /* grpo, rloo: mean over groups of the scores' standard deviation */
    PW_ST_COUNT
};

/* One batch the generator sampled ahead of the actor (async): its block, the log-probs the
 * sampler saw, and the version of the weights that sampled it. */
typedef struct PwQueued {
    int64_t batch; /* the step that trains on it */
    int64_t version;
    PwRows rows;
    float *logp;   /* (n, R) */
} PwQueued;

struct PwRun {
    PwWorld w;
    PwSettings s;
    PwPrompts data;
    int V, R, maxT, stop_id, pad_id;
    PwRole producer; /* who generates: the generator role, or the actor without one */
    int gpu;         /* this rank's GPU (the placement's binding) for roles with device: cuda */

    PwModel *actor, *ref, *critic, *gen; /* the models this rank holds (NULL otherwise) */
    struct PwGen *sampler;              /* KV-cache sampler of the producing model */
    int K;
    PwMember member[PW_MAX_MEMBERS];
    PwPrompts eval_data; /* data.eval_prompts; empty: the evaluation reads `data` in file order */
    int eval_n;          /* prompts per evaluation */
    PwModel *gold;       /* model.gold on reward rank 0, scored at evaluation only */
    int gold_token, gold_task; /* model.gold as a verifier (count >= 0, or the task) instead */
    const PwTokenizer *tok;    /* data.tokenizer, NULL without one */
    FILE *eval_file;     /* RUN_DIR/eval.jsonl on actor rank 0 */

    /* this step's blocks, one per role held */
    int P;               /* prompt width of this step */
    PwRows gen_rows;     /* the producer's block */
    float *gen_logp;     /* (n, R) log-probs the sampler saw */
    int *gen_ver;        /* (n) the weights version (actor updates) that sampled each row */
    int k;               /* async.max_staleness with a generator role, else 0 (docs/roles.md) */
    int async;           /* k >= 1 */
    int64_t gen_version; /* the generator's weights: the actor updates in them */
    PwQueued queue[PW_MAX_STALENESS]; /* async: batches sampled ahead, oldest first */
    int queue_n;
    PwXfer carry;        /* async: the actor's weight sends, finished in the next step */
    PwFanout weights;    /* actor rank 0 -> every generator rank, one broadcast per transfer */
    PwRows act_rows;
    float *logp_old, *ent_old, *logp_ref, *values, *gen_logp_act, *scores_k, *score;
    int *act_ver;        /* (n) the version tags of the actor's block */
    float *iw;           /* (n, R) ppo.off_policy importance weights; NULL with none */
    float *kl, *rewards, *adv, *ret;
    PwRows ref_rows;
    float *ref_logp;
    PwRows crit_rows;
    float *vold, *vret;

    double beta;
    int64_t step;        /* the PPO step being run */
    int64_t first_step;  /* 0, or the step a --resume starts at */
    int64_t opt_step;    /* optimizer steps taken (the schedule's index) */
    PwRunningMoments running; /* running score moments for reward.normalize */

    double time[PW_ROLE_COUNT][PW_PH_COUNT]; /* this step's seconds per role and phase */
    double step_seconds;                     /* wall time of the step on this actor rank */
    uint64_t sent0, coll0;                   /* the world's byte counters when the step began */
    double bytes_sent, bytes_coll;           /* actor rank 0: this step's, summed over ranks */
    double peak_mb[PW_ROLE_COUNT];           /* actor rank 0: peak RSS, largest of a role's ranks */
    double device_peak_mb[PW_ROLE_COUNT];    /* and the most device memory, likewise (0: none) */
    double run_t0, progress_last;            /* pw_now() at the first step, at the last line */
    double stats[PW_ST_COUNT];
    double critic_stats[4]; /* value loss, clipfrac, lr, skipped steps: critic rank 0 to actor 0 */
    int64_t skip_run[PW_ROLE_COUNT]; /* optimiser steps skipped in a row, per trained role */
    int64_t *shard[PW_ROLE_COUNT];   /* optim.zero_stage 1: a trained role's shares (shard.h) */
    FILE *metrics;
    struct PwTb *tb;     /* RUN_DIR/tensorboard's event file on actor rank 0 (log.tensorboard) */
};

static inline int pw_member_is_verifier(const PwMember *m)
{
    return m->verifier_token >= 0 || m->task;
}
/* A verifier's scores of a block of rows: the count of `token`, or with `task` the task's gold
 * score (PW_VERIFIER_GOLD) or exact-answer 1/0 (PW_VERIFIER_EXACT) (reward.c). */
void pw_verifier_score(int token, int task, const PwRows *rows, float *score);
/* Whether a verifier's score means a correct answer (verifiable_correct_rate): any counted token,
 * or the task's exact answer (gold 1). */
static inline int pw_verifier_correct(int task, float score)
{
    return task ? score >= 1.0f : score > 0.0f;
}

static inline int pw_run_has(const PwRun *r, PwRole role) { return pw_world_has_role(&r->w, role); }
static inline int pw_run_nranks(const PwRun *r, PwRole role) { return r->w.map.role[role].nranks; }
static inline PwGroup pw_run_group(const PwRun *r, PwRole role)
{
    return (PwGroup){role, pw_run_nranks(r, role), NULL};
}
static inline PwGroup pw_member_group(const PwMember *m)
{
    return (PwGroup){PW_ROLE_REWARD, m->nranks, m->idx};
}
/* A host tensor (a, b), or (a) when b is 0. */
static inline PwTensor pw_tensor2(void *data, PwDtype dt, int64_t a, int64_t b)
{
    int64_t shape[2] = {a, b};
    return pw_tensor_host(data, dt, b > 0 ? 2 : 1, shape);
}

/* The role paragraphs of docs/roles.md. Each works on this rank's block of its role. */
/* Samples rows->tokens and logp (n, R) for the rows of PPO step `step` with model m. */
void pw_generator_generate(PwRun *r, PwModel *m, PwRows *rows, float *logp, int64_t step);
void pw_reference_evaluate(PwRun *r);
void pw_reward_evaluate(PwRun *r);
void pw_critic_evaluate(PwRun *r);
void pw_critic_train(PwRun *r);
void pw_actor_logprobs(PwRun *r);
void pw_actor_combine_scores(PwRun *r);
void pw_actor_advantages(PwRun *r);
void pw_actor_train(PwRun *r);

/* Evaluation after step `step`, or of the initial policy with step -1 (eval.c): every rank
 * calls it; eval.jsonl gets one line ("episode": 0 for the initial one). */
void pw_eval_run(PwRun *r, int64_t step);

/* Checkpoints (checkpoint.c). */
/* Makes RUN_DIR and RUN_DIR/checkpoints at start-up, so that a file in the place of either or a
 * folder that cannot be made is an error before the first step, not at the first checkpoint. */
int pw_ckpt_prepare(const char *out_dir, PwErr *err);
void pw_ckpt_save(PwRun *r, const char *out_dir, int64_t done);
int64_t pw_ckpt_latest(const char *out_dir); /* newest complete step_N, -1 if none */
int pw_ckpt_load_state(PwRun *r, const char *out_dir, int64_t step, PwErr *err);
/* Async --resume on a generator rank: its block of the batches the generator had sampled ahead
 * (the checkpoint's generator/queue.safetensors) back into its queue. */
int pw_ckpt_load_queue(PwRun *r, const char *out_dir, PwErr *err);
void pw_ckpt_load_optimizer(PwModel *m, const char *dir);
void pw_ckpt_dir(char *buf, size_t n, const char *out_dir, int64_t step, const char *part);
/* The run configuration saved in RUN_DIR, and its check on --resume (settings.c). */
int pw_settings_save_config(const struct PwConfig *cfg, const char *path, PwErr *err);
int pw_settings_check_saved(const struct PwConfig *cfg, const char *path, PwErr *err);

/* One PPO step across all roles (ppo_step.c). */
void pw_ppo_step(PwRun *r, int64_t step);
/* `role`'s block of the rows of step `step` (its prompts; its width is that step's). */
void pw_ppo_block_rows(PwRun *r, PwRows *rows, int64_t step, PwRole role);
/* Async: gives the generator the actor's current weights before an evaluation after `step`. */
void pw_ppo_weights_for_eval(PwRun *r, int64_t step);
/* The metrics line of a step (metrics.c); actor rank 0 only. */
void pw_metrics_write(PwRun *r, int64_t step);
/* A metrics.jsonl or eval.jsonl line after `step` (-1: before the first) as TensorBoard scalars
 * at step + 1, the PPO steps done, when log.tensorboard is on, and an evaluation's sample
 * responses as a table in a text summary; a failed write warns once and ends the TensorBoard
 * file, not the run (metrics.c). */
void pw_metrics_tb(PwRun *r, int64_t step, const json_t *line);
/* The progress line after step `step` on stdout, if runtime.progress_s has passed since the
 * last one or it was the last step (metrics.c); actor rank 0 only. */
void pw_progress_line(PwRun *r, int64_t step);

/* Allocation that ends the job on failure: role buffers are small and a NULL is no recovery. */
void *pw_roles_alloc(size_t bytes);
/* The run's settings and its checked inputs (the data read, the models' config.json checked),
 * nothing loaded or joined: what pw_ppo_run starts from, and what a memory plan reads. NULL
 * with the message pw_ppo_run would give. */
PwRun *pw_run_prepare(const struct PwConfig *cfg, const struct PwPlacement *pl, PwErr *err);
void pw_run_free(PwRun *r);
/* The options of the models of `role` on `dev` with `heads`: the run's sizes and precision, and
 * what their forwards keep (the actor and the critic: every layer's activations, or with
 * model.activation_checkpointing the layers' inputs; every other role's models only score or
 * decode: one layer's). The scoring models (reference, reward, gold) are frozen and make their
 * logits PW_LM_TILE rows at a time (or in the trained models' chunks, where those are not a
 * multiple of it). pw_ppo_run loads with them, the memory plan sizes with them. */
PwModelOpts pw_run_model_opts(const PwRun *r, PwRole role, PwDevice dev, int heads);
/* World rank `rank`'s most bytes at once on its device by the memory plan (memory_plan.c), from
 * a prepared run: what pw_ppo_run checks against its node's memory before anything loads. */
int pw_ppo_rank_memory(const PwRun *r, const struct PwPlacement *pl, int rank, size_t *peak,
                       PwErr *err);
/* In-role all-reduce (sum) of n doubles; ends the job on error. */
void pw_roles_allreduce_f64(PwRun *r, PwRole role, double *x, int n);

#endif
