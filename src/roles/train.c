/* train.c: the harness of the supervised modes (sft, rm): configuration, a world where every rank
 * is a data-parallel worker of one role, data sets, the model, the summed-gradient AdamW step. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "devices_file.h"
#include "pw_cli.h"
#include "pw_collective.h"
#include "pw_device.h"
#include "pw_file.h"
#include "pw_memcheck.h"
#include "pw_metrics.h"
#include "pw_tb.h"
#include "train.h"

/* -------------------------------------------------------------------------- configuration */

static void usage(FILE *f, const char *mode)
{
    const char *stem = strcmp(mode, "rm") ? "sft" : "prefs";
    fprintf(f,
            "usage: [mpirun -np N] ppo_world %s [--config FILE] --out DIR [key=value ...]\n"
            "\n"
            "  --config FILE  the training configuration, YAML (docs/training.md)\n"
            "  --out DIR      model.safetensors, config.json, config.yaml, metrics.jsonl\n"
            "  key=value      a key of the configuration, after the file; the examples come from\n"
            "                 data.dir=DIR (DIR/%s_train.jsonl, DIR/%s_valid.jsonl if present)\n"
            "                 or data.train=FILE [data.valid=FILE]\n"
            "  --help         this text\n"
            "\n"
            "keys (default, meaning):\n",
            mode, stem, stem);
    pw_cfg_write_help(&pw_train_config_schema, f);
}

static int bad(PwTrainer *t, const char *fmt, const char *x)
{
    if (t->rank == 0) {
        fprintf(stderr, "ppo_world %s: ", t->mode);
        fprintf(stderr, fmt, x);
        fprintf(stderr, "\n");
        usage(stderr, t->mode);
    }
    return 2;
}

/* The values the loops read, taken from the configuration once (as settings.c does for PPO):
 * a path not given is NULL, the warm-up is resolved, a time-out of 0 (never) is a long one. */
/* The architecture of a random model from the model.* keys: GPT-2, or the Llama family with the
 * choices small Llama-family checkpoints make (tied embeddings, RMSNorm eps 1e-5). */
static void random_arch(PwArch *a, const PwTrainConfig *c)
{
    *a = (PwArch){.family = PW_FAMILY_GPT2, .n_layer = (int)c->model.n_layer,
                  .n_head = (int)c->model.n_head, .n_embd = (int)c->model.n_embd,
                  .n_positions = (int)c->model.n_positions};
    if (c->model.type == PW_TRAIN_MODEL_GPT2) return;
    a->family = PW_FAMILY_LLAMA;
    a->n_kv_head = c->model.n_kv_head ? (int)c->model.n_kv_head : a->n_head;
    a->n_inner = c->model.n_inner ? (int)c->model.n_inner : 4 * a->n_embd;
    a->norm_eps = 1e-5f;
    a->rope_theta = c->model.rope_theta;
    a->tied = 1;
    a->qkv_bias = c->model.type == PW_TRAIN_MODEL_QWEN2;
    a->head_dim = (int)c->model.head_dim;
    a->qk_norm = c->model.type == PW_TRAIN_MODEL_QWEN3;
    a->hf_type = c->model.type == PW_TRAIN_MODEL_QWEN2   ? PW_HF_QWEN2
                 : c->model.type == PW_TRAIN_MODEL_QWEN3 ? PW_HF_QWEN3
                                                         : PW_HF_LLAMA;
}

static void derive(PwTrainer *t, const char *out)
{
    const PwTrainConfig *c = &t->cfg;
    PwTrainArgs *a = &t->a;
    memset(a, 0, sizeof *a);
    a->data = c->data.dir[0] ? c->data.dir : NULL;
    a->train = c->data.train[0] ? c->data.train : NULL;
    a->valid = c->data.valid[0] ? c->data.valid : NULL;
    a->init = c->model.init[0] ? c->model.init : NULL;
    a->out = out;
    a->tokenizer = c->data.tokenizer;
    a->prompt_template = c->data.prompt_template;
    a->valid_fraction = c->data.valid_fraction;
    random_arch(&a->arch, c);
    a->steps = (long)c->train.steps;
    a->warmup = (long)pw_train_config_warmup(c);
    a->eval_every = (long)c->eval.every;
    a->batch = (int)c->train.batch_size;
    a->lr = c->optim.lr;
    a->min_lr = c->optim.min_lr;
    a->weight_decay = c->optim.weight_decay;
    a->grad_clip = c->optim.grad_clip;
    a->beta1 = c->optim.beta1;
    a->beta2 = c->optim.beta2;
    a->eps = c->optim.eps;
    a->timeout = c->runtime.timeout_s > 0 ? c->runtime.timeout_s : 1e9;
    a->decay = c->optim.decay;
    a->seed = (uint64_t)c->seed;
    a->max_len = (int)c->data.max_len;
    a->max_prompt_len = (int)c->data.max_prompt_len;
    a->max_response_len = (int)c->data.max_response_len;
    a->overlong = c->data.overlong;
    a->skip_nonfinite = c->runtime.on_nonfinite == PW_NONFINITE_SKIP_STEP;
    a->max_skipped = (long)c->runtime.max_skipped_steps;
    a->grad_bucket = (size_t)(c->runtime.grad_bucket_mb * 1048576.0);
    a->zero_stage = (int)c->optim.zero_stage;
}

/* --config FILE, --out DIR, key=value operands: the same configuration on every rank, each
 * reading the file itself, so every rank reaches the same verdict and rank 0 alone says it. */
static int parse(PwTrainer *t, int argc, char **argv)
{
    static const struct option flags[] = {
        {"config", required_argument, NULL, 'c'},
        {"out", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *out = NULL;
    const char **overrides = malloc((size_t)(argc > 0 ? argc : 1) * sizeof *overrides);
    if (!overrides) pw_comm_fatal(__FILE__, __LINE__, "out of memory");
    int n = 0, rc = 0;
    PwCli cli;
    pw_cli_init(&cli, argc, argv, "h", flags);
    for (int o; rc == 0 && (o = pw_cli_next(&cli)) != PW_CLI_END;) {
        switch (o) {
        case 'c': config = cli.arg; break;
        case 'o': out = cli.arg; break;
        case 'h':
            if (t->rank == 0) usage(stdout, t->mode);
            rc = 1;
            break;
        case PW_CLI_OPERAND: overrides[n++] = cli.arg; break;
        default: rc = bad(t, "%s", cli.msg); break;
        }
    }
    if (rc == 0 && !out) rc = bad(t, "%s", "--out DIR is required");
    PwErr err;
    if (rc == 0 && pw_cfg_build(&pw_train_config_schema, &t->cfg, config, overrides, n, &err)) {
        /* A configuration error names its file:line:column or argument and key: no usage. */
        if (t->rank == 0) fprintf(stderr, "ppo_world %s: %s\n", t->mode, err.msg);
        rc = 2;
    }
    free(overrides);
    if (rc) return rc;
    t->have_cfg = 1;
    derive(t, out);
    return 0;
}

/* ----------------------------------------------------------------------------- the world */

static int begin(PwTrainer *t, int argc, char **argv, MPI_Comm comm, int nranks)
{
    /* Every rank holds the one role: its communicator is the data-parallel group, and the
     * gradient sum goes through the runtime's collective like any role's. The role is a CPU
     * role even with model.device: cuda, so the sum takes the collective's MPI path, which
     * stages a GPU tensor through host memory (or gives it to a CUDA-aware MPI): no NCCL
     * communicator, whose GPU would have to be chosen before the configuration is read. */
    int *ranks = malloc((size_t)nranks * sizeof *ranks);
    if (!ranks) pw_comm_fatal(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < nranks; i++) ranks[i] = i;
    PwRoleMap map;
    memset(&map, 0, sizeof map);
    map.world_size = nranks;
    map.role[t->role].nranks = nranks;
    map.role[t->role].ranks = ranks;
    map.role[t->role].device = PW_DEVICE_CPU;
    PwErr err;
    int rc = pw_world_init(&t->w, comm, &map, 600.0, &err);
    free(ranks);
    if (rc) pw_comm_fatal(__FILE__, __LINE__, "ppo_world %s: %s", t->mode, err.msg);
    t->have_world = 1;
    t->rank = t->w.role_rank[t->role];
    t->nranks = nranks;
    rc = parse(t, argc, argv);
    if (!rc) t->w.timeout_s = t->a.timeout;
    /* Every rank reads the same configuration, so all start it or none does. */
    if (!rc && pw_heartbeat_start(&t->w, t->cfg.runtime.heartbeat_s, &err))
        pw_comm_fatal(__FILE__, __LINE__, "ppo_world %s: %s", t->mode, err.msg);
    return rc;
}

void pw_train_sum(PwTrainer *t, double *x, int n)
{
    if (t->nranks <= 1) return;
    PwErr err;
    int64_t shape[1] = {n};
    PwTensor v = pw_tensor_host(x, PW_DTYPE_F64, 1, shape);
    if (pw_allreduce(&t->w, t->role, &v, PW_REDUCE_SUM, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
}

/* ------------------------------------------------------------------------------- setup */

static int load_data(PwTrainer *t, int n_positions, PwErr *err)
{
    PwTrainArgs *a = &t->a;
    const char *stem = t->shape == PW_DATA_PREFS ? "prefs" : "sft";
    char tpath[1024], vpath[1024];
    const char *tp = a->train, *vp = a->valid;
    if (a->data) {
        snprintf(tpath, sizeof tpath, "%s/%s_train.jsonl", a->data, stem);
        snprintf(vpath, sizeof vpath, "%s/%s_valid.jsonl", a->data, stem);
        tp = tpath;
        struct stat st;
        vp = stat(vpath, &st) == 0 ? vpath : NULL;
    }
    int max_len = a->max_len > 0 ? a->max_len : n_positions;
    if (max_len > n_positions)
        return pw_errf(err, "data.max_len %d exceeds the model's n_positions %d", max_len,
                       n_positions);
    PwDataOpts o = {t->shape, t->tok, a->max_prompt_len, a->max_response_len, max_len,
                    a->overlong, 0, a->prompt_template};
    if (!vp) {
        PwDataset all;
        if (pw_dataset_load(&all, tp, &o, err)) return -1;
        t->train.dropped = all.dropped;
        if (a->valid_fraction > 0) {
            int rc = pw_dataset_split(&all, a->valid_fraction, a->seed, &t->train, &t->valid, err);
            t->train.dropped = all.dropped;
            t->train.truncated = all.truncated;
            pw_dataset_free(&all);
            if (rc) return -1;
            t->have_valid = 1;
        } else {
            t->train = all;
        }
    } else {
        if (pw_dataset_load(&t->train, tp, &o, err)) return -1;
        if (pw_dataset_load(&t->valid, vp, &o, err)) return -1;
        t->have_valid = 1;
    }
    return 0;
}

/* The model's options: its batch capacity from the data (the largest local block; pairs for
 * rm), its width from the longest example. */
static PwModelOpts model_opts(PwTrainer *t)
{
    int T = t->train.max_total;
    if (t->have_valid && t->valid.max_total > T) T = t->valid.max_total;
    int64_t s0, c0;
    pw_data_shard(t->a.batch, t->nranks, 0, &s0, &c0); /* block 0 is the largest */
    t->local_max = c0 > 0 ? (int)c0 : 1;
    t->maxB = t->local_max * (t->shape == PW_DATA_PREFS ? 2 : 1);
    t->maxT = T;
    /* rm trains the score head, so an SFT folder without one is its usual start */
    return (PwModelOpts){.heads = t->heads, .maxB = t->maxB, .maxT = T, .device = t->device,
                         .device_id = t->gpu, .seed = t->a.seed,
                         .fresh_heads = t->heads & PW_HEAD_SCORE,
                         .precision = t->cfg.model.precision,
                         .lm_chunk = (int)t->cfg.model.lm_head_chunk,
                         .acts = t->cfg.model.activation_checkpointing ? PW_ACTS_RECOMPUTE
                                                                       : PW_ACTS_KEEP};
}

/* Collective, before the model is made: everything it will hold to train (pw_model_plan)
 * against what this rank's memory has free, with the ranks that share that memory. */
static int check_memory(PwTrainer *t, const PwArch *cfg, PwErr *err)
{
    PwModelOpts o = model_opts(t);
    PwModelBytes b;
    /* optim.zero_stage 1: this rank's share of the moments, and at bf16 of the float32 weights */
    int failed = pw_shard_plan(t->a.zero_stage, t->nranks, t->rank, cfg, &o, &b, err) ? 1 : 0;
    if (pw_comm_agree(t->w.comm, failed, err)) return -1;
    size_t need = pw_model_bytes_most(&b);
    return pw_world_check_memory(&t->w, t->device, t->gpu, need,
                                 "A smaller train.batch_size or more ranks (fewer rows each) make "
                                 "room for the activations; the weights, gradients and AdamW's "
                                 "moments (16 bytes a parameter) stay (runtime.check_memory: "
                                 "false makes the model anyway)", err);
}

static int make_model(PwTrainer *t, const PwArch *cfg, PwErr *err)
{
    PwModelOpts o = model_opts(t);
    if (t->a.init) {
        t->model = pw_model_load(t->a.init, &o, err);
    } else {
        t->model = pw_model_create(cfg, &o, err);
        if (t->model) pw_model_init_random(t->model, t->a.seed);
    }
    if (!t->model) return -1;
    t->shard = pw_shard_begin(&t->w, t->role, t->model, t->a.zero_stage, "the run");
    int V = pw_model_arch(t->model)->vocab_size;
    if (V < t->tok->vocab_size)
        return pw_errf(err, "the model's vocab_size %d is smaller than tokenizer '%s''s %d", V,
                       t->tok->name, t->tok->vocab_size);
    return 0;
}

/* model.device: cuda takes GPU local_rank mod the GPUs this process sees; none is an error
 * said before anything is read or written. */
static int pick_device(PwTrainer *t, PwErr *err)
{
    t->device = PW_DEVICE_CPU;
    t->gpu = 0;
    if (t->cfg.model.device != PW_DEVICE_CUDA) return 0;
    int n = pw_device_count();
    if (n <= 0) { /* the placement check's words */
        char why[256];
        pw_device_why_none(why, sizeof why);
        return pw_errf(err, "model.device: cuda, but this process sees no GPU (%s); expected cpu",
                       why);
    }
    t->device = PW_DEVICE_CUDA;
    t->gpu = t->local_rank % n;
    return 0;
}

/* The device, the tokenizer, the architecture (`arch`), the data. */
static int setup_inputs(PwTrainer *t, PwArch *arch, PwErr *err)
{
    PwTrainArgs *a = &t->a;
    if (pick_device(t, err)) return -1;
    t->tok = pw_tokenizer_get(a->tokenizer, err);
    if (!t->tok) return -1;
    PwArch cfg = a->arch;
    cfg.vocab_size = t->tok->vocab_size;
    if (a->init) {
        if (pw_arch_load(&cfg, a->init, err)) return -1;
    } else if (pw_arch_check(&cfg, err)) {
        return -1;
    }
    if (load_data(t, cfg.n_positions, err)) return -1;
    if (pw_sampler_init(&t->sampler, t->train.n, a->seed, err)) return -1;
    PwLrSchedule sc = {a->decay, a->lr, a->min_lr, a->warmup, a->steps};
    if (pw_lr_schedule_check(&sc, err)) return -1;
    *arch = cfg;
    return 0;
}

/* The model, the schedule, the run folder. */
static int setup_model(PwTrainer *t, const PwArch *cfg, PwErr *err)
{
    PwTrainArgs *a = &t->a;
    if (make_model(t, cfg, err)) return -1;
    if (mkdir(a->out, 0755) != 0 && errno != EEXIST)
        return pw_errf(err, "--out: cannot create '%s': %s", a->out, strerror(errno));
    if (t->rank == 0) {
        char path[1100];
        PwErr e;
        /* first: a bad TensorBoard folder leaves nothing written */
        snprintf(path, sizeof path, "%s/tensorboard", a->out);
        if (t->cfg.log.tensorboard && !(t->tb = pw_tb_open(path, pw_tb_now(), &e)))
            return pw_errf(err, "log.tensorboard: %s", e.msg);
        /* The effective configuration, every key included, as PPO keeps its config.yaml. */
        snprintf(path, sizeof path, "%s/config.yaml", a->out);
        if (pw_cfg_save_yaml(&pw_train_config_schema, &t->cfg, path, err)) return -1;
        pw_devices_file_write(a->out, -1);
        snprintf(path, sizeof path, "%s/metrics.jsonl", a->out);
        if (!(t->metrics = pw_file_append(path, "", 0, err))) return -1;
    }
    return 0;
}

static int setup(PwTrainer *t)
{
    PwErr err = {{0}};
    PwArch arch;
    int failed = setup_inputs(t, &arch, &err) ? 1 : 0;
    if (failed) fprintf(stderr, "ppo_world %s: %s\n", t->mode, err.msg);
    /* Every rank reads the files itself, so a bad file usually fails everywhere; the sum makes
     * sure a failure seen by one rank alone (a file missing on one node) stops them all. */
    double f = failed;
    pw_train_sum(t, &f, 1);
    if (f > 0) return -1;
    /* one message for every rank, said once */
    if (t->cfg.runtime.check_memory && check_memory(t, &arch, &err)) {
        if (t->rank == 0) fprintf(stderr, "ppo_world %s: %s\n", t->mode, err.msg);
        return -1;
    }
    failed = setup_model(t, &arch, &err) ? 1 : 0;
    if (failed) fprintf(stderr, "ppo_world %s: %s\n", t->mode, err.msg);
    f = failed;
    pw_train_sum(t, &f, 1);
    if (f > 0) return -1;
    if (t->rank == 0) {
        const PwArch *ma = pw_model_arch(t->model);
        printf("ppo_world %s: %d ranks; train %d examples (%d dropped, %d truncated) from %s; "
               "valid %d; model %s L=%d H=%d C=%d T=%d V=%d, %zu parameters\n",
               t->mode, t->nranks, t->train.n, t->train.dropped, t->train.truncated,
               t->train.path, t->have_valid ? t->valid.n : 0, pw_family_name(ma->family),
               ma->n_layer, ma->n_head, ma->n_embd, ma->n_positions, ma->vocab_size,
               pw_model_num_weights(t->model));
        if (t->train.dropped)
            fprintf(stderr, "ppo_world %s: warning: %d over-long examples dropped from %s\n",
                    t->mode, t->train.dropped, t->train.path);
        if (t->have_valid && t->valid.dropped)
            fprintf(stderr, "ppo_world %s: warning: %d over-long examples dropped from %s\n",
                    t->mode, t->valid.dropped, t->valid.path);
        fflush(stdout);
    }
    t->t0 = pw_now();
    return 0;
}

int pw_train_open(PwTrainer *t, int argc, char **argv, MPI_Comm comm, int nranks,
                  int local_rank, int *exit_code)
{
    t->local_rank = local_rank;
    int rc = begin(t, argc, argv, comm, nranks);
    *exit_code = rc == 1 ? 0 : rc; /* 1: --help was printed */
    if (!rc && setup(t)) *exit_code = rc = 1;
    if (rc) pw_train_end(t);
    return rc == 0;
}

void pw_train_end(PwTrainer *t)
{
    if (t->metrics) fclose(t->metrics);
    pw_tb_close(t->tb);
    pw_model_free(t->model);
    free(t->shard);
    t->shard = NULL;
    pw_sampler_free(&t->sampler);
    pw_dataset_free(&t->train);
    pw_dataset_free(&t->valid);
    if (t->have_world) pw_world_free(&t->w);
    if (t->have_cfg) pw_cfg_free(&pw_train_config_schema, &t->cfg);
    t->have_cfg = 0;
    t->metrics = NULL;
    t->model = NULL;
    t->have_world = 0;
}

/* ------------------------------------------------------------------------------- steps */

void pw_train_rows(PwTrainer *t, long step, int *rows, int64_t *start, int64_t *count)
{
    pw_sampler_batch(&t->sampler, step, t->a.batch, rows);
    pw_data_shard(t->a.batch, t->nranks, t->rank, start, count);
}

/* A NaN or infinite loss or gradient norm of step `step` (0-based; messages count from 1 as
 * the metrics do): -1 to stop, or 1 for a skipped update (runtime.on_nonfinite). */
static int nonfinite(PwTrainer *t, long step, const char *quantity, double v, const char *what)
{
    const char *val = isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf";
    int stop = !t->a.skip_nonfinite || ++t->skip_run >= t->a.max_skipped;
    if (t->rank == 0) {
        char then[160];
        if (!t->a.skip_nonfinite)
            snprintf(then, sizeof then, "stopping without saving: runtime.on_nonfinite is stop");
        else if (stop)
            snprintf(then, sizeof then, "stopping without saving: %ld steps in a row were "
                     "skipped (runtime.max_skipped_steps)", t->skip_run);
        else
            snprintf(then, sizeof then, "the update is skipped (runtime.on_nonfinite is "
                     "skip_step)");
        /* one write, so that the line does not interleave with another stream's */
        fprintf(stderr, "ppo_world %s: step %ld: %s is %s (%s); %s\n", t->mode, step + 1,
                quantity, val, what, then);
        fflush(stderr);
    }
    return stop ? -1 : 1;
}

int pw_train_optimize(PwTrainer *t, PwGradSync *gs, long step, double loss, const char *what)
{
    PwModel *m = t->model;
    PwErr err;
    /* Each rank's loss was divided by the GLOBAL normaliser (tokens or pairs of the whole
     * batch), so the sum over ranks is the gradient of the global batch: the same step a single
     * rank would take on all of it. The buckets posted during the backward are waited for
     * whatever the loss is. */
    if (pw_grad_sync_end(gs, NULL, &err)) pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    /* The loss is summed over the ranks already: a NaN anywhere is seen everywhere, and its
     * gradient is NaN too, so nothing is stepped. */
    if (!isfinite(loss)) return nonfinite(t, step, "the loss", loss, what);
    PwLrSchedule sc = {t->a.decay, t->a.lr, t->a.min_lr, t->a.warmup, t->a.steps};
    double lr = pw_lr_at(&sc, step), norm = 0.0;
    PwAdamWConfig ac = {(float)lr, (float)t->a.beta1, (float)t->a.beta2, (float)t->a.eps,
                        (float)t->a.weight_decay, (float)t->a.grad_clip};
    int rc = pw_model_adamw_step(m, &ac, (int)(step + 1), &norm, &err);
    if (rc < 0) pw_comm_fatal(__FILE__, __LINE__, "%s: %s", t->mode, err.msg);
    if (rc == PW_ADAMW_SKIPPED)
        return nonfinite(t, step, "the gradient norm", norm, "summed over the ranks");
    pw_shard_gather_weights(&t->w, t->role, m, t->shard); /* optim.zero_stage 1 */
    /* A finite gradient can still make bad weights (a learning rate of 1e30); every rank took
     * the same step on the same sum, so every rank finds them. Nothing undoes an update. */
    if (pw_model_check_params(m, &err)) {
        if (t->rank == 0)
            fprintf(stderr, "ppo_world %s: step %ld: the weights went bad in the update "
                    "(learning rate %g): %s; stopping without saving, whatever "
                    "runtime.on_nonfinite says: an applied update cannot be undone\n", t->mode,
                    step + 1, lr, err.msg);
        return -1;
    }
    t->skip_run = 0;
    return 0;
}

/* A value as the line prints it (fmt), read back: the TensorBoard scalars are the line's numbers,
 * not more precise ones. */
static double as_written(const char *fmt, double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    return strtod(buf, NULL);
}

/* The line's numbers as TensorBoard scalars at `step` (those that exist); a failed write warns
 * once and ends the TensorBoard file, not the run. */
static void train_tb(PwTrainer *t, long step, const char *const *keys, const double *vals, int n,
                     unsigned none, double elapsed)
{
    /* examples, at most 32 keys (`none` is a 32-bit mask), time/elapsed_s */
    const char *tags[34] = {"examples"};
    double v[34] = {(double)step * t->a.batch};
    int m = 1;
    for (int i = 0; i < n && i < 32; i++)
        if (!(none & (1u << i))) {
            tags[m] = keys[i];
            v[m++] = as_written("%.9g", vals[i]);
        }
    tags[m] = "time/elapsed_s";
    v[m++] = as_written("%.3f", elapsed);
    PwErr err;
    if (!pw_tb_scalars(t->tb, step, pw_tb_now(), m, tags, v, &err)) return;
    char who[64];
    snprintf(who, sizeof who, "ppo_world %s", t->mode);
    pw_tb_give_up(&t->tb, who, &err);
}

void pw_train_log(PwTrainer *t, long step, const char *const *keys, const double *vals, int n,
                  unsigned none)
{
    if (!t->metrics) return;
    fprintf(t->metrics, "{\"step\": %ld, \"mode\": \"%s\", \"examples\": %lld", step, t->mode,
            (long long)step * t->a.batch);
    for (int i = 0; i < n; i++) {
        /* null says the value does not exist (no validation set); a loss that came out NaN or
         * infinite is a different thing and says so (pw_metrics.h): JSON has neither. */
        const char *bad = pw_metric_nonfinite_name(vals[i]);
        if (none & (1u << i))
            fprintf(t->metrics, ", \"%s\": null", keys[i]);
        else if (bad)
            fprintf(t->metrics, ", \"%s\": \"%s\"", keys[i], bad);
        else
            fprintf(t->metrics, ", \"%s\": %.9g", keys[i], vals[i]);
    }
    double elapsed = pw_now() - t->t0;
    fprintf(t->metrics, ", \"time/elapsed_s\": %.3f}\n", elapsed);
    fflush(t->metrics);
    if (t->tb) train_tb(t, step, keys, vals, n, none, elapsed);
}

void pw_train_save(PwTrainer *t)
{
    /* optim.zero_stage 1 at bf16: every rank hands its share of the float32 weights to rank 0 */
    float *hw = pw_shard_gather_master(&t->w, t->role, t->model, t->shard);
    if (t->rank != 0) return;
    PwErr err;
    int rc = hw ? pw_model_save_master(t->model, t->a.out, hw, NULL, &err)
                : pw_model_save(t->model, t->a.out, &err);
    free(hw);
    if (rc) pw_comm_fatal(__FILE__, __LINE__, "ppo_world %s: %s", t->mode, err.msg);
    /* the tokenizer the run read goes with the weights (none for bytes), and an SFT policy keeps
     * the generation_config.json of model.init, or gets the tokenizer's (a reward model does not
     * generate); conveniences, so a failed copy is a warning, not the loss of the trained model */
    if (pw_tokenizer_save(t->a.tokenizer, t->a.out, &err) ||
        (!strcmp(t->mode, "sft") &&
         pw_model_generation_config(t->a.init, t->a.tokenizer, t->a.out, &err)))
        fprintf(stderr, "ppo_world %s: warning: %s (the weights are saved)\n", t->mode, err.msg);
}
