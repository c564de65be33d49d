/* train.h: what `ppo_world sft` and `ppo_world rm` share: configuration, the data-parallel world,
 * data sets, model, optimizer step and metrics. Internal to src/roles (sft.c, rm.c, train.c). */
#ifndef PW_ROLES_TRAIN_H
#define PW_ROLES_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "pw_algo.h"
#include "grads.h"
#include "shard.h"
#include "pw_comm.h"
#include "pw_data.h"
#include "pw_model.h"
#include "pw_train_config.h"

/* The settings as the loops read them, derived once from the configuration (PwTrainConfig): a
 * path not given is NULL, the warm-up resolved, out is the --out flag. */
typedef struct PwTrainArgs {
    const char *data, *train, *valid, *init, *out, *tokenizer, *prompt_template;
    double valid_fraction;
    PwArch arch;           /* a random model's (model.init absent); vocab_size the tokenizer's */
    long steps, warmup, eval_every;
    int batch;
    double lr, min_lr, weight_decay, grad_clip, beta1, beta2, eps, timeout;
    PwLrDecay decay;
    uint64_t seed;
    int max_len, max_prompt_len, max_response_len;
    PwOverlong overlong;
    int skip_nonfinite;    /* runtime.on_nonfinite is skip_step */
    long max_skipped;      /* runtime.max_skipped_steps */
    size_t grad_bucket;    /* runtime.grad_bucket_mb, in bytes */
    int zero_stage;        /* optim.zero_stage */
} PwTrainArgs;

typedef struct PwTrainer {
    const char *mode;      /* "sft" | "rm": messages and metrics */
    PwDataShape shape;
    PwRole role;           /* the role every rank holds: actor (sft) or reward (rm) */
    int heads;
    PwTrainConfig cfg;     /* defaults, --config, key=value: written to out/config.yaml */
    int have_cfg;
    PwTrainArgs a;
    PwWorld w;
    int have_world;
    int rank, nranks;      /* data-parallel worker index and count */
    int local_rank;        /* index among the ranks of this node */
    PwDevice device;       /* model.device */
    int gpu;               /* with PW_DEVICE_CUDA: local_rank mod the GPUs this process sees */
    const PwTokenizer *tok;
    PwDataset train, valid;
    int have_valid;
    PwSampler sampler;
    PwModel *model;
    int local_max;         /* rows of the largest local block */
    int maxB, maxT;        /* the model's batch capacity: rows (2 local_max for pairs), width */
    FILE *metrics;         /* rank 0 only */
    struct PwTb *tb;       /* out/tensorboard's event file, rank 0 only (log.tensorboard) */
    double t0;
    long skip_run;         /* steps skipped in a row (runtime.on_nonfinite: skip_step) */
    int64_t *shard;        /* optim.zero_stage 1: the ranks' blocks (shard.h); NULL: none */
} PwTrainer;

/* Builds the world (every rank holding t->role), reads the flags and the configuration, loads
 * the data sets and the model and opens the output folder. Returns 1 to train; 0 when the mode
 * ends here, with the trainer freed and *exit_code set: 0 after --help, 2 on bad usage or a bad
 * configuration (said by rank 0 only), 1 when a data set, the model or the folder failed on
 * any rank (agreed over all ranks, each failing rank having printed its own message).
 * local_rank: the rank's index on its node, which picks its GPU (model.device: cuda). */
int pw_train_open(PwTrainer *t, int argc, char **argv, MPI_Comm comm, int nranks,
                  int local_rank, int *exit_code);
void pw_train_end(PwTrainer *t);

/* Sum of x (n) over the data-parallel ranks, in place. */
void pw_train_sum(PwTrainer *t, double *x, int n);
/* Gradients summed over the ranks (gs: the buckets begun before the step's backward, grads.h;
 * NULL with one rank), then the schedule's learning rate, clipping and AdamW step
 * `step` (0-based), unless `loss` (of the global batch, summed over the ranks; `what` names it)
 * or the gradient is NaN or infinite. Returns 0 after the update; 1 when runtime.on_nonfinite
 * is skip_step and the update was dropped; -1 when the run must stop, rank 0 having said why
 * (that setting is stop, too many skips in a row, or weights gone bad in the update). Loss and
 * gradient norm are global, so every rank returns the same and the ranks stop together. */
int pw_train_optimize(PwTrainer *t, PwGradSync *gs, long step, double loss, const char *what);

/* The global batch of a step: rows (B) and this rank's block of them. */
void pw_train_rows(PwTrainer *t, long step, int *rows, int64_t *start, int64_t *count);
/* One line of out/metrics.jsonl (rank 0): keys and values, n pairs; bit i of `none` set: value i
 * does not exist and is written null (a NaN or infinity among the others is written as the
 * string "nan", "inf" or "-inf", pw_metrics.h). */
void pw_train_log(PwTrainer *t, long step, const char *const *keys, const double *vals, int n,
                  unsigned none);
/* Writes out/model.safetensors, out/config.json, the tokenizer's files and (sft) model.init's
 * generation_config.json (rank 0); fatal on failure. */
void pw_train_save(PwTrainer *t);

#endif
