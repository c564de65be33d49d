/* train.c: the harness of the supervised modes (sft, rm): flags, a world where every rank is a
 * data-parallel worker of one role, data sets, the model, the summed-gradient AdamW step, metrics. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_collective.h"
#include "train.h"

/* ----------------------------------------------------------------------------------- flags */

static void usage(FILE *f, const char *mode)
{
    int rm = !strcmp(mode, "rm");
    fprintf(f,
            "usage: [mpirun -np N] ppo_world %s (--data DIR | --train FILE [--valid FILE]) --out DIR\n"
            "                 [flags]\n"
            "\n"
            "  --data DIR            DIR/%s_train.jsonl and, if present, DIR/%s_valid.jsonl\n"
            "  --train FILE          training examples (%s)\n"
            "  --valid FILE          validation examples; without one, --valid-fraction of train\n"
            "  --valid-fraction F    held out of train when no valid file (0.1; 0 = none)\n"
            "  --out DIR             model.safetensors, config.json, metrics.jsonl\n"
            "  --init DIR            start from this checkpoint%s; else a random model:\n"
            "  --n-layer L --n-head H --n-embd C --n-positions T   (2, 2, 64, 128)\n"
            "  --tokenizer NAME      bytes\n"
            "  --steps N (200)  --batch-size B (16, global, over all ranks)  --seed S (1)\n"
            "  --lr X (1e-3)  --min-lr X (0)  --warmup N (10)  --decay cosine|linear|constant\n"
            "  --weight-decay X (0)  --grad-clip X (1; 0 = off)  --beta1 --beta2 --adam-eps\n"
            "  --eval-every N (50; 0 = only at start and end)\n"
            "  --max-len N (n_positions)  --max-prompt-len N (0 = none)  --max-response-len N\n"
            "  --overlong drop|error|truncate (drop)   --timeout S (600)\n"
            "(docs/training.md, docs/data.md)\n",
            mode, rm ? "prefs" : "sft", rm ? "prefs" : "sft",
            rm ? "prompt, chosen, rejected; or HH chosen/rejected" : "prompt, response",
            rm ? " (a score head is added if it has none)" : "");
}

static void defaults(PwTrainArgs *a)
{
    memset(a, 0, sizeof *a);
    a->tokenizer = "bytes";
    a->valid_fraction = 0.1;
    a->n_layer = 2;
    a->n_head = 2;
    a->n_embd = 64;
    a->n_positions = 128;
    a->steps = 200;
    a->warmup = -1; /* 10, or --steps when fewer */
    a->eval_every = 50;
    a->batch = 16;
    a->lr = 1e-3;
    a->grad_clip = 1.0;
    a->beta1 = 0.9;
    a->beta2 = 0.95;
    a->eps = 1e-8;
    a->timeout = 600;
    a->decay = PW_LR_COSINE;
    a->seed = 1;
    a->overlong = PW_OVERLONG_DROP;
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

static int num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

static int parse(PwTrainer *t, int argc, char **argv)
{
    PwTrainArgs *a = &t->a;
    defaults(a);
    static const struct {
        const char *flag;
        double lo, hi;
    } nums[] = {
        {"--valid-fraction", 0, 0.99}, {"--n-layer", 1, 64}, {"--n-head", 1, 64},
        {"--n-embd", 1, 8192}, {"--n-positions", 2, 65536}, {"--steps", 0, 1e12},
        {"--batch-size", 1, 1 << 20}, {"--lr", 0, 10}, {"--min-lr", 0, 10}, {"--warmup", 0, 1e12},
        {"--weight-decay", 0, 10}, {"--grad-clip", 0, 1e9}, {"--beta1", 0, 1}, {"--beta2", 0, 1},
        {"--adam-eps", 0, 1}, {"--eval-every", 0, 1e12}, {"--max-len", 0, 65536},
        {"--max-prompt-len", 0, 65536}, {"--max-response-len", 0, 65536}, {"--seed", 0, 9e15},
        {"--timeout", 0.001, 1e9},
    };
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            if (t->rank == 0) usage(stdout, t->mode);
            return 1;
        }
        if (strncmp(s, "--", 2)) return bad(t, "unexpected argument '%s'", s);
        if (!v) return bad(t, "%s needs a value", s);
        i++;
        const char **str = !strcmp(s, "--data") ? &a->data : !strcmp(s, "--train") ? &a->train
                         : !strcmp(s, "--valid") ? &a->valid : !strcmp(s, "--init") ? &a->init
                         : !strcmp(s, "--out") ? &a->out : !strcmp(s, "--tokenizer") ? &a->tokenizer
                         : NULL;
        if (str) {
            *str = v;
            continue;
        }
        PwErr err;
        if (!strcmp(s, "--decay")) {
            if (pw_lr_decay_parse(v, &a->decay, &err)) return bad(t, "--decay: %s", err.msg);
            continue;
        }
        if (!strcmp(s, "--overlong")) {
            if (pw_overlong_parse(v, &a->overlong, &err)) return bad(t, "--overlong: %s", err.msg);
            continue;
        }
        size_t k = 0;
        while (k < PW_ARRAY_LEN(nums) && strcmp(s, nums[k].flag)) k++;
        if (k == PW_ARRAY_LEN(nums)) return bad(t, "unknown flag '%s'", s);
        double x;
        if (num(v, nums[k].lo, nums[k].hi, &x)) {
            char msg[200];
            snprintf(msg, sizeof msg, "%s %s: expected a number in [%g, %g]", s, v, nums[k].lo,
                     nums[k].hi);
            return bad(t, "%s", msg);
        }
        switch (k) {
        case 0: a->valid_fraction = x; break;
        case 1: a->n_layer = (int)x; break;
        case 2: a->n_head = (int)x; break;
        case 3: a->n_embd = (int)x; break;
        case 4: a->n_positions = (int)x; break;
        case 5: a->steps = (long)x; break;
        case 6: a->batch = (int)x; break;
        case 7: a->lr = x; break;
        case 8: a->min_lr = x; break;
        case 9: a->warmup = (long)x; break;
        case 10: a->weight_decay = x; break;
        case 11: a->grad_clip = x; break;
        case 12: a->beta1 = x; break;
        case 13: a->beta2 = x; break;
        case 14: a->eps = x; break;
        case 15: a->eval_every = (long)x; break;
        case 16: a->max_len = (int)x; break;
        case 17: a->max_prompt_len = (int)x; break;
        case 18: a->max_response_len = (int)x; break;
        case 19: a->seed = (uint64_t)x; break;
        default: a->timeout = x; break;
        }
    }
    if (!a->out) return bad(t, "%s", "--out DIR is required");
    if (!a->data && !a->train) return bad(t, "%s", "--data DIR or --train FILE is required");
    if (a->data && (a->train || a->valid)) return bad(t, "%s", "--data excludes --train/--valid");
    if (a->warmup < 0) a->warmup = a->steps < 10 ? a->steps : 10;
    if (a->warmup > a->steps) return bad(t, "%s", "--warmup exceeds --steps");
    if (a->min_lr > a->lr) return bad(t, "%s", "--min-lr exceeds --lr");
    return 0;
}

/* ----------------------------------------------------------------------------- the world */

static int begin(PwTrainer *t, int argc, char **argv, MPI_Comm comm, int nranks)
{
    /* Every rank holds the one role: its communicator is the data-parallel group, and the
     * gradient sum goes through the runtime's collective like any role's. */
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
        return pw_errf(err, "--max-len %d exceeds the model's n_positions %d", max_len,
                       n_positions);
    PwDataOpts o = {t->shape, t->tok, a->max_prompt_len, a->max_response_len, max_len,
                    a->overlong, 0};
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

static int make_model(PwTrainer *t, const PwArch *cfg, PwErr *err)
{
    int T = t->train.max_total;
    if (t->have_valid && t->valid.max_total > T) T = t->valid.max_total;
    int64_t s0, c0;
    pw_data_shard(t->a.batch, t->nranks, 0, &s0, &c0); /* block 0 is the largest */
    t->local_max = c0 > 0 ? (int)c0 : 1;
    t->maxB = t->local_max * (t->shape == PW_DATA_PREFS ? 2 : 1);
    t->maxT = T;
    PwModelOpts o = {.heads = t->heads, .maxB = t->maxB, .maxT = T, .device = PW_DEVICE_CPU,
                     .seed = t->a.seed};
    if (t->a.init) {
        t->model = pw_model_load(t->a.init, &o, err);
    } else {
        t->model = pw_model_create(cfg, &o, err);
        if (t->model) pw_model_init_random(t->model, t->a.seed);
    }
    if (!t->model) return -1;
    int V = pw_model_arch(t->model)->vocab_size;
    if (V < t->tok->vocab_size)
        return pw_errf(err, "the model's vocab_size %d is smaller than tokenizer '%s''s %d", V,
                       t->tok->name, t->tok->vocab_size);
    return 0;
}

static int setup_local(PwTrainer *t, PwErr *err)
{
    PwTrainArgs *a = &t->a;
    t->tok = pw_tokenizer_get(a->tokenizer, err);
    if (!t->tok) return -1;
    PwArch cfg = {PW_FAMILY_GPT2, a->n_layer, a->n_head, a->n_embd, t->tok->vocab_size,
                  a->n_positions};
    if (a->init) {
        if (pw_arch_load(&cfg, a->init, err)) return -1;
    } else if (pw_arch_check(&cfg, err)) {
        return -1;
    }
    if (load_data(t, cfg.n_positions, err)) return -1;
    if (pw_sampler_init(&t->sampler, t->train.n, a->seed, err)) return -1;
    if (make_model(t, &cfg, err)) return -1;
    PwLrSchedule sc = {a->decay, a->lr, a->min_lr, a->warmup, a->steps};
    if (pw_lr_schedule_check(&sc, err)) return -1;
    if (mkdir(a->out, 0755) != 0 && errno != EEXIST)
        return pw_errf(err, "--out: cannot create '%s': %s", a->out, strerror(errno));
    if (t->rank == 0) {
        char path[1100];
        snprintf(path, sizeof path, "%s/metrics.jsonl", a->out);
        t->metrics = fopen(path, "w");
        if (!t->metrics) return pw_errf(err, "cannot write '%s': %s", path, strerror(errno));
    }
    return 0;
}

static int setup(PwTrainer *t)
{
    PwErr err = {{0}};
    int failed = setup_local(t, &err) ? 1 : 0;
    if (failed) fprintf(stderr, "ppo_world %s: %s\n", t->mode, err.msg);
    /* Every rank reads the files itself, so a bad file usually fails everywhere; the sum makes
     * sure a failure seen by one rank alone (a file missing on one node) stops them all. */
    double f = failed;
    pw_train_sum(t, &f, 1);
    if (f > 0) return -1;
    if (t->rank == 0) {
        const PwArch *ma = pw_model_arch(t->model);
        printf("ppo_world %s: %d ranks; train %d examples (%d dropped, %d truncated) from %s; "
               "valid %d; model %s L=%d H=%d C=%d T=%d V=%d, %zu parameters\n",
               t->mode, t->nranks, t->train.n, t->train.dropped, t->train.truncated,
               t->train.path, t->have_valid ? t->valid.n : 0, pw_family_name(ma->family),
               ma->n_layer, ma->n_head, ma->n_embd, ma->n_positions, ma->vocab_size,
               pw_model_num_params(t->model));
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
                  int *exit_code)
{
    int rc = begin(t, argc, argv, comm, nranks);
    *exit_code = rc == 1 ? 0 : rc; /* 1: --help was printed */
    if (!rc && setup(t)) *exit_code = rc = 1;
    if (rc) pw_train_end(t);
    return rc == 0;
}

void pw_train_end(PwTrainer *t)
{
    if (t->metrics) fclose(t->metrics);
    pw_model_free(t->model);
    pw_sampler_free(&t->sampler);
    pw_dataset_free(&t->train);
    pw_dataset_free(&t->valid);
    if (t->have_world) pw_world_free(&t->w);
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

double pw_train_optimize(PwTrainer *t, long step)
{
    PwModel *m = t->model;
    PwErr err;
    /* Each rank's loss was divided by the GLOBAL normaliser (tokens or pairs of the whole
     * batch), so the sum over ranks is the gradient of the global batch: the same step a single
     * rank would take on all of it. */
    if (t->nranks > 1) {
        PwTensor g = pw_model_grads(m);
        if (pw_allreduce(&t->w, t->role, &g, PW_REDUCE_SUM, &err))
            pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    }
    PwLrSchedule sc = {t->a.decay, t->a.lr, t->a.min_lr, t->a.warmup, t->a.steps};
    double lr = pw_lr_at(&sc, step);
    PwAdamWConfig ac = {(float)lr, (float)t->a.beta1, (float)t->a.beta2, (float)t->a.eps,
                        (float)t->a.weight_decay, (float)t->a.grad_clip};
    if (pw_model_adamw_step(m, &ac, (int)(step + 1), &err) < 0)
        pw_comm_fatal(__FILE__, __LINE__, "%s: %s", t->mode, err.msg);
    return lr;
}

void pw_train_log(PwTrainer *t, long step, const char *const *keys, const double *vals, int n)
{
    if (!t->metrics) return;
    fprintf(t->metrics, "{\"step\": %ld, \"mode\": \"%s\", \"examples\": %lld", step, t->mode,
            (long long)step * t->a.batch);
    for (int i = 0; i < n; i++) {
        /* JSON has no NaN: a value that does not exist (no validation set) is null. */
        if (vals[i] != vals[i])
            fprintf(t->metrics, ", \"%s\": null", keys[i]);
        else
            fprintf(t->metrics, ", \"%s\": %.9g", keys[i], vals[i]);
    }
    fprintf(t->metrics, ", \"time/elapsed_s\": %.3f}\n", pw_now() - t->t0);
    fflush(t->metrics);
}

void pw_train_save(PwTrainer *t)
{
    if (t->rank != 0) return;
    PwErr err;
    if (pw_model_save(t->model, t->a.out, &err))
        pw_comm_fatal(__FILE__, __LINE__, "ppo_world %s: %s", t->mode, err.msg);
}
