/* bench_ppo_gpu.c: one PPO step on one GPU with four GPT-2-124M-shaped models (actor,
 * reference, critic, reward; the generator holds a fifth copy of the policy), or of the Llama
 * family at Qwen2.5-0.5B's or Qwen3-0.6B's shape (--shape qwen2.5-0.5b, qwen3-0.6b): seconds
 * per step, each role's busy and idle seconds, peak memory, and the actor -> generator weight
 * transfer against the device's own copy bandwidth; last line RESULT.
 *
 * One process, no mpirun (an MPI singleton): every role on rank 0, computing on the device.
 *   build/bench/bench_ppo_gpu [--device cuda|cpu] [--shape NAME] [--prompts N]
 *       [--steps S] [--precision bf16|fp32] [--epochs-list 1,4] [--micro M] [--gen-batch G]
 * M sizes the forward and backward micro batches (ppo.micro_batch_size), G the generation's
 * (ppo.rollout_micro_batch_size; default M, as before the two had sizes of their own).
 * Each entry of --epochs-list is one run of S steps with ppo.epochs = that entry and 4
 * minibatches; steps 1..S-1 of each are measured (medians; step 0 loads kernels and fills
 * caches). Every rollout is exactly 64 prompt tokens + 256 new tokens (no stop token), so every
 * step does the same work. The TRL figures of the issue (H100, bf16, 128 prompts) are the anchor
 * of the gpt2-124m shape at 128 prompts, bf16, on cuda; other runs are not compared with them.
 * docs/performance.md ("PPO step on the GPU") says what each column means. */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bench_copy.h"
#include "bench_shapes.h"
#include "bench_stats.h"

#include "pw_config.h"
#include "pw_device.h"
#include "pw_model.h"
#include "pw_ops.h"
#include "pw_placement.h"
#include "pw_roles.h"

/* ------------------------------------------------------------------------- the shapes */

typedef struct Shape {
    const char *name;
    PwArch arch;
    int prompt_len, new_tokens, prompts, micro; /* defaults of --prompts and --micro */
} Shape;

/* qwen2.5-0.5b's micro batch of 8: the actor's activations for 8 x 320 tokens are 4.2 GiB at
 * bf16 (pw_model_activation_bytes; 16.8 at 32), the four models' about 14 GiB beside 20 GiB of
 * weights, gradients and moments */
static const Shape shapes[] = {
    {"gpt2-124m", BENCH_GPT2_124M, 64, 256, 128, 32},
    {"qwen2.5-0.5b", BENCH_QWEN_05B, 64, 256, 128, 8},
    {"qwen3-0.6b", BENCH_QWEN3_06B, 64, 256, 128, 8},
    {"tiny", {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 4, .n_embd = 64,
              .vocab_size = 512, .n_positions = 64}, 16, 16, 16, 4},
    {"tiny-llama", {.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 4, .n_embd = 64,
                    .vocab_size = 512, .n_positions = 64, .n_kv_head = 2, .n_inner = 96,
                    .norm_eps = 1e-6f, .rope_theta = 1e6, .tied = 1, .qkv_bias = 1,
                    .hf_type = PW_HF_QWEN2}, 16, 16, 16, 4},
    /* Qwen3's layout: q/k norms, heads of 24 (an attention of 96 over 64 channels), attention
     * biases */
    {"tiny-qwen3", {.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 4, .n_embd = 64,
                    .vocab_size = 512, .n_positions = 64, .n_kv_head = 2, .n_inner = 96,
                    .norm_eps = 1e-6f, .rope_theta = 1e6, .tied = 1, .qkv_bias = 1, .o_bias = 1,
                    .head_dim = 24, .qk_norm = 1, .hf_type = PW_HF_QWEN3}, 16, 16, 16, 4},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))
#define MINIBATCHES 4

/* The anchor: TRL 1.12's PPO trainer on an H100, bf16, gpt2-124m, 128 prompts. */
#define TRL_PROMPTS 128
static const double trl_s_per_step_e1 = 5.6, trl_s_per_step_e4 = 11.3, trl_peak_gib = 26.8;

/* -------------------------------------------------------------------------- failures */

static char tmp_dir[256];
static int mpi_up;

static void remove_dir(const char *dir)
{
    if (!*dir) return;
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "bench_ppo_gpu: could not remove %s\n", dir);
}

/* One process: a failure removes the inputs, leaves MPI and exits 1 (no MPI_Abort banner). */
static void die(const char *what, const char *msg)
{
    fprintf(stderr, "bench_ppo_gpu: %s: %s\n", what, msg);
    remove_dir(tmp_dir);
    if (mpi_up) MPI_Finalize();
    exit(1);
}

static void usage(const char *msg)
{
    fprintf(stderr,
            "bench_ppo_gpu: %s\n"
            "usage: bench_ppo_gpu [--device cuda|cpu] [--shape gpt2-124m|qwen2.5-0.5b|qwen3-0.6b|"
            "tiny|tiny-llama|tiny-qwen3] [--prompts N] "
            "[--steps S] [--precision bf16|fp32] [--epochs-list E1,E2,...] [--micro M] "
            "[--gen-batch G]\n"
            "  one process, no mpirun; N a multiple of %d, S >= 2, each E in 1..1000\n",
            msg, MINIBATCHES);
    exit(2);
}

/* A whole decimal integer in [lo, hi], or the usage message naming the option. */
static int parse_int(const char *opt, const char *s, int lo, int hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: '%s' is not a whole number in [%d, %d]", opt, s, lo, hi);
        usage(msg);
    }
    return (int)v;
}

/* ---------------------------------------------------------------------------- inputs */

#define MAX_CONFIGS 8

typedef struct Opts {
    PwDevice device;
    const Shape *shape;
    int prompts, steps, micro, gen_batch, nepochs;
    int epochs[MAX_CONFIGS];
    PwPrecision precision;
} Opts;

static void parse_args(int argc, char **argv, Opts *o)
{
    const char *device = "cuda", *shape = "gpt2-124m", *precision = NULL, *epochs = "1,4";
    int prompts = 0, micro = 0, gen_batch = 0;
    o->steps = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) usage("every option takes a value");
        const char *v = argv[++i];
        if (!strcmp(a, "--device")) device = v;
        else if (!strcmp(a, "--shape")) shape = v;
        else if (!strcmp(a, "--precision")) precision = v;
        else if (!strcmp(a, "--epochs-list")) epochs = v;
        else if (!strcmp(a, "--prompts")) prompts = parse_int(a, v, 1, 1 << 20);
        else if (!strcmp(a, "--steps")) o->steps = parse_int(a, v, 2, 1000);
        else if (!strcmp(a, "--micro")) micro = parse_int(a, v, 1, 1 << 20);
        else if (!strcmp(a, "--gen-batch")) gen_batch = parse_int(a, v, 1, 1 << 20);
        else {
            char msg[160];
            snprintf(msg, sizeof msg, "unknown option '%s'", a);
            usage(msg);
        }
    }
    if (!strcmp(device, "cuda")) o->device = PW_DEVICE_CUDA;
    else if (!strcmp(device, "cpu")) o->device = PW_DEVICE_CPU;
    else usage("--device: expected cuda or cpu");
    o->shape = NULL;
    for (int s = 0; s < NSHAPES; s++)
        if (!strcmp(shape, shapes[s].name)) o->shape = &shapes[s];
    if (!o->shape)
        usage("--shape: expected gpt2-124m, qwen2.5-0.5b, qwen3-0.6b, tiny, tiny-llama or "
              "tiny-qwen3");
    /* bf16 is the GPU run's arithmetic; on the CPU it is emulated (slower), so fp32 there */
    if (!precision) precision = o->device == PW_DEVICE_CUDA ? "bf16" : "fp32";
    if (!strcmp(precision, "bf16")) o->precision = PW_PRECISION_BF16;
    else if (!strcmp(precision, "fp32")) o->precision = PW_PRECISION_FP32;
    else usage("--precision: expected bf16 or fp32");
    o->prompts = prompts ? prompts : o->shape->prompts;
    if (o->prompts % MINIBATCHES) usage("--prompts: a multiple of 4 (ppo.minibatches = 4)");
    o->micro = micro ? micro : o->shape->micro;
    if (o->micro > o->prompts) o->micro = o->prompts;
    o->gen_batch = gen_batch ? gen_batch : o->micro;
    if (o->gen_batch > o->prompts) o->gen_batch = o->prompts;
    o->nepochs = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", epochs);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->nepochs == MAX_CONFIGS) usage("--epochs-list: at most 8 entries");
        o->epochs[o->nepochs++] = parse_int("--epochs-list", t, 1, 1000);
    }
    if (!o->nepochs) usage("--epochs-list: expected numbers such as 1,4");
}

/* A random model of the shape, saved to dir; returns its parameter floats (padding included) */
static size_t write_model(const char *dir, const Shape *sh, uint64_t seed, int heads)
{
    PwErr err;
    PwArch c = sh->arch;
    PwModelOpts o = {.heads = heads, .maxB = 1, .maxT = 8};
    PwModel *m = pw_model_create(&c, &o, &err);
    if (!m) die("model", err.msg);
    pw_model_init_random(m, seed);
    if (mkdir(dir, 0755) && errno != EEXIST) die(dir, strerror(errno));
    if (pw_model_save(m, dir, &err)) die(dir, err.msg);
    size_t n = pw_model_num_params(m);
    pw_model_free(m);
    return n;
}

/* The bytes the actor hands the generator each step at this precision (pw_model_weights_out:
 * at bf16 the layers' matrices in bfloat16) */
static size_t transfer_bytes(const Shape *sh, PwPrecision precision)
{
    PwErr err;
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = 1, .maxT = 8, .precision = precision};
    PwModelBytes b;
    if (pw_model_plan(&sh->arch, &o, &b, &err)) die("model", err.msg);
    return b.transfer;
}

/* prompts.jsonl: `n` prompts of exactly prompt_len random ids below V - 1 (the last id is the
 * stop token; there is none in this run, but a prompt holding it would read oddly). */
static void write_prompts(const char *path, const Shape *sh, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) die(path, strerror(errno));
    uint64_t s = 12345;
    for (int i = 0; i < n; i++) {
        fprintf(f, "{\"input_ids\": [");
        for (int t = 0; t < sh->prompt_len; t++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            int id = (int)((s >> 33) % (uint64_t)(sh->arch.vocab_size - 1));
            fprintf(f, "%s%d", t ? ", " : "", id);
        }
        fprintf(f, "]}\n");
    }
    if (fclose(f)) die(path, strerror(errno));
}

static const char *const role_keys[5] = {"actor", "reference", "critic", "reward", "generator"};

static void write_placement(const char *path, PwDevice dev)
{
    FILE *f = fopen(path, "w");
    if (!f) die(path, strerror(errno));
    fprintf(f, "version: 1\nworld_size: 1\nbind: none\nroles:\n");
    for (int r = 0; r < 5; r++)
        fprintf(f, "  %s: { ranks: [0]%s }\n", role_keys[r],
                dev == PW_DEVICE_CUDA ? ", device: cuda" : "");
    if (fclose(f)) die(path, strerror(errno));
}

/* --------------------------------------------------------------------------- one run */

/* The memory plan of the first run's configuration (pw_ppo_memory_plan): rank 0's most at once,
 * the models' and caches' own buffers, beside the measured peak. */
static size_t planned_bytes;

static void run_one(const char *dir, const Opts *o, PwPlacement *pl, int epochs, const char *out)
{
    const Shape *sh = o->shape;
    char ov[11][600];
    int k = 0;
    snprintf(ov[k++], sizeof ov[0], "model.sft=%s/sft", dir);
    snprintf(ov[k++], sizeof ov[0], "model.reward=[%s/rm]", dir);
    snprintf(ov[k++], sizeof ov[0], "data.prompts=%s/prompts.jsonl", dir);
    snprintf(ov[k++], sizeof ov[0], "episodes=%d", o->prompts * o->steps);
    snprintf(ov[k++], sizeof ov[0], "ppo.num_rollout_samples=%d", o->prompts);
    snprintf(ov[k++], sizeof ov[0], "ppo.rollout_micro_batch_size=%d", o->gen_batch);
    snprintf(ov[k++], sizeof ov[0], "ppo.micro_batch_size=%d", o->micro);
    snprintf(ov[k++], sizeof ov[0], "ppo.epochs=%d", epochs);
    snprintf(ov[k++], sizeof ov[0], "ppo.minibatches=%d", MINIBATCHES);
    snprintf(ov[k++], sizeof ov[0], "generation.max_new_tokens=%d", sh->new_tokens);
    snprintf(ov[k++], sizeof ov[0], "model.precision=%s", pw_precision_name(o->precision));
    /* no stop token: every response is max_new_tokens long; nothing else in the step but PPO */
    const char *fixed[] = {"generation.stop_token=none", "reward.non_stop_penalty=false",
                           "optim.lr=1e-6", "optim.warmup_steps=0", "critic.lr=1e-6",
                           "checkpoint.every=0", "eval.every=0", "seed=1",
                           "runtime.progress_s=0", "optim.offload_adam_states=false"};
    const char *all[24];
    int n = 0;
    for (int i = 0; i < k; i++) all[n++] = ov[i];
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) all[n++] = fixed[i];
    PwErr err = {{0}};
    PwConfig cfg;
    if (pw_config_build(&cfg, NULL, all, n, &err)) die("configuration", err.msg);
    if (!planned_bytes) {
        FILE *sink = fopen("/dev/null", "w");
        size_t peaks[1] = {0};
        if (!sink || pw_ppo_memory_plan(&cfg, pl, NULL, sink, peaks, &err))
            die("memory plan", err.msg);
        fclose(sink);
        planned_bytes = peaks[0];
    }
    int gpu = o->device == PW_DEVICE_CUDA ? 0 : -1;
    if (pw_ppo_run(&cfg, pl, MPI_COMM_WORLD, gpu, out, 0, &err)) die("run", err.msg);
    pw_config_free(&cfg);
}

/* --------------------------------------------------------------------------- figures */

/* The busy phases the table shows: the role and its phase (src/roles/metrics.c's keys). */
typedef struct Col {
    const char *head, *key;
} Col;
static const Col cols[] = {
    {"generate", "time/generator/generate"}, {"act.eval", "time/actor/evaluate"},
    {"ref.eval", "time/reference/evaluate"}, {"crit.eval", "time/critic/evaluate"},
    {"rew.eval", "time/reward/evaluate"},    {"advant.", "time/actor/advantages"},
    {"act.train", "time/actor/train"},       {"crit.train", "time/critic/train"},
    {"weights", "time/actor/weights"},
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))
#define WEIGHTS (NCOLS - 1) /* cols[WEIGHTS]: the transfer's seconds */
#define MAX_STEPS 1000

typedef struct Figures {
    int epochs, n;
    double step_s[MAX_STEPS], busy[NCOLS][MAX_STEPS], idle[5][MAX_STEPS];
    double gen_weights[MAX_STEPS];
    double peak_mib[5]; /* the most over every step: device memory on cuda, host RSS on cpu */
} Figures;

/* The number after "key": in one metrics line; every key read here is written for every role
 * of the placement, so one that is missing is an error naming the file and the key. */
static double need(const char *line, const char *key, const char *path)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) {
        char msg[160];
        snprintf(msg, sizeof msg, "no key '%s' in a step's line", key);
        die(path, msg);
    }
    return strtod(p + strlen(pat), NULL);
}

static void read_figures(Figures *g, const char *out, PwDevice dev, int steps)
{
    char path[1024], key[96];
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    FILE *f = fopen(path, "r");
    if (!f) die(path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int s = 0;
    g->n = 0;
    for (int r = 0; r < 5; r++) g->peak_mib[r] = 0.0;
    for (; getline(&line, &cap, f) > 0; s++) {
        for (int r = 0; r < 5; r++) {
            snprintf(key, sizeof key, dev == PW_DEVICE_CUDA ? "memory/%s/device_peak_mb"
                                                             : "memory/%s/peak_mb",
                     role_keys[r]);
            double v = need(line, key, path);
            if (v > g->peak_mib[r]) g->peak_mib[r] = v;
        }
        if (s == 0 || g->n == MAX_STEPS) continue; /* step 0: warm-up */
        int k = g->n++;
        g->step_s[k] = need(line, "time/step", path);
        for (int c = 0; c < NCOLS; c++) g->busy[c][k] = need(line, cols[c].key, path);
        for (int r = 0; r < 5; r++) {
            snprintf(key, sizeof key, "time/%s/idle", role_keys[r]);
            g->idle[r][k] = need(line, key, path);
        }
        g->gen_weights[k] = need(line, "time/generator/weights", path);
    }
    free(line);
    fclose(f);
    if (s != steps) {
        char msg[96];
        snprintf(msg, sizeof msg, "%d steps in the file, expected %d", s, steps);
        die(path, msg);
    }
}

/* The median of x[0..n) without reordering x (the per-step series are read again later). */
static double median(const double *x, int n)
{
    if (n < 1) die("median", "no samples");
    double *t = malloc((size_t)n * sizeof *t);
    if (!t) die("median", "out of memory");
    memcpy(t, x, (size_t)n * sizeof *t);
    double m = bench_median(t, n);
    free(t);
    return m;
}

/* The device's own copy bandwidth for `bytes` (bench_copy.h: the median of 10), counted as
 * bytes copied per second (not read + written). */
static double copy_gbps(PwDevice dev, size_t bytes)
{
    double s = bench_copy_seconds(dev, bytes, 10);
    if (s <= 0) die("copy bandwidth", "no room for two buffers of the parameters' size");
    return (double)bytes / s / 1e9;
}

/* ------------------------------------------------------------------------------ main */

static Figures figs[MAX_CONFIGS];

int main(int argc, char **argv)
{
    Opts o;
    parse_args(argc, argv, &o);
    const Shape *sh = o.shape;
    MPI_Init(&argc, &argv);
    mpi_up = 1;
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 1) die("ranks", "run it as one process (no mpirun, or mpirun -np 1)");

    const char *tmp = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/bench_ppo_gpu.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        tmp_dir[0] = '\0';
        die("temporary folder", strerror(errno));
    }
    char path[600];
    snprintf(path, sizeof path, "%s/placement.yaml", tmp_dir);
    write_placement(path, o.device);
    PwPlacement pl;
    PwErr err = {{0}};
    if (pw_placement_load(path, 1, &pl, &err)) die(path, err.msg);
    /* the runtime's own check (ppo_world's): cuda roles on a process that sees no GPU */
    char host[256] = "?";
    if (gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "?");
    char why[256] = "";
    int ngpus = pw_device_count();
    if (ngpus <= 0) pw_device_why_none(why, sizeof why);
    if (pw_placement_check_gpu(&pl, 0, ngpus, why, host, &err)) {
        char msg[sizeof err.msg + 64];
        snprintf(msg, sizeof msg, "%s (--device cpu runs the benchmark on the CPU)", err.msg);
        die("--device cuda", msg);
    }

    snprintf(path, sizeof path, "%s/sft", tmp_dir);
    size_t nparams = write_model(path, sh, 11, PW_HEAD_LM);
    snprintf(path, sizeof path, "%s/rm", tmp_dir);
    write_model(path, sh, 22, PW_HEAD_LM | PW_HEAD_SCORE);
    snprintf(path, sizeof path, "%s/prompts.jsonl", tmp_dir);
    write_prompts(path, sh, o.prompts);

    for (int c = 0; c < o.nepochs; c++) {
        char out[400];
        snprintf(out, sizeof out, "%s/run_e%d_%d", tmp_dir, o.epochs[c], c);
        run_one(tmp_dir, &o, &pl, o.epochs[c], out);
        figs[c].epochs = o.epochs[c];
        read_figures(&figs[c], out, o.device, o.steps);
        remove_dir(out); /* its end-of-run checkpoint: the disk of the next run's */
    }
    pw_placement_free(&pl);
    size_t bytes = transfer_bytes(sh, o.precision);
    double copy = copy_gbps(o.device, bytes);

    /* ---- the table */
    int cuda = o.device == PW_DEVICE_CUDA;
    int vs_trl = cuda && !strcmp(sh->name, "gpt2-124m") && o.prompts == TRL_PROMPTS &&
                 o.precision == PW_PRECISION_BF16; /* the anchor's run, and no other */
    double load = -1.0; /* a shared machine's load moves CPU figures: say what it was */
    if (getloadavg(&load, 1) < 1) load = -1.0;
    printf("host: %ld cores, load average %.2f (1 min) after the runs\n",
           sysconf(_SC_NPROCESSORS_ONLN), load);
    const PwArch *a = &sh->arch;
    printf("bench_ppo_gpu: device %s, shape %s (%s L=%d C=%d NH=%d KV=%d V=%d, %.1fM "
           "parameters), %s; %d prompts x %d tokens + %d new tokens (no stop token), %d "
           "minibatches, micro batch %d, generation batch %d; one process, every role on rank "
           "0; medians of steps 1..%d of %d\n",
           cuda ? "cuda" : "cpu", sh->name, pw_family_name(a->family), a->n_layer, a->n_embd,
           a->n_head, a->n_kv_head ? a->n_kv_head : a->n_head, a->vocab_size,
           (double)nparams / 1e6,
           pw_precision_name(o.precision), o.prompts, sh->prompt_len, sh->new_tokens,
           MINIBATCHES, o.micro, o.gen_batch, o.steps - 1, o.steps);
    printf("TRL anchor: H100, bf16 (TRL 1.12 PPO trainer, gpt2-124m, 128 prompts): %.1f s/step "
           "at 1 epoch, %.1f s at 4 epochs, %.1f GiB peak%s\n",
           trl_s_per_step_e1, trl_s_per_step_e4, trl_peak_gib,
           vs_trl ? "" : "; not comparable with this run (vs TRL: -)");
    printf("\nbusy seconds per step, by role and phase; vs TRL = TRL's s/step / this s/step "
           "(goal >= 3)\n");
    printf("%6s %7s %8s", "epochs", "prompts", "s/step");
    for (int c = 0; c < NCOLS; c++) printf(" %10s", cols[c].head);
    printf(" %8s %7s\n", "other", "vs TRL");
    double trl_of[MAX_CONFIGS], s_of[MAX_CONFIGS];
    for (int k = 0; k < o.nepochs; k++) {
        const Figures *g = &figs[k];
        double st = median(g->step_s, g->n), sum = 0.0;
        s_of[k] = st;
        printf("%6d %7d %8.3f", g->epochs, o.prompts, st);
        for (int c = 0; c < NCOLS; c++) {
            double b = median(g->busy[c], g->n);
            sum += b;
            printf(" %10.3f", b);
        }
        printf(" %8.3f", st - sum);
        trl_of[k] = !vs_trl ? -1.0
                    : g->epochs == 1 ? trl_s_per_step_e1
                    : g->epochs == 4 ? trl_s_per_step_e4
                                     : -1.0;
        if (trl_of[k] > 0) printf(" %6.2fx\n", trl_of[k] / st);
        else printf(" %7s\n", "-");
    }

    printf("\nidle seconds per step, and peak %s MiB by role (one process: the peak is its "
           "high-water mark since it started, the same for every role)\n",
           cuda ? "device" : "host (resident set)");
    printf("%6s %7s", "epochs", "prompts");
    for (int r = 0; r < 5; r++) printf(" %10.10s", role_keys[r]);
    printf(" |");
    for (int r = 0; r < 5; r++) printf(" %10.10s", role_keys[r]);
    printf("\n");
    double peak = 0.0;
    for (int k = 0; k < o.nepochs; k++) {
        const Figures *g = &figs[k];
        printf("%6d %7d", g->epochs, o.prompts);
        for (int r = 0; r < 5; r++) printf(" %10.3f", median(g->idle[r], g->n));
        printf(" |");
        for (int r = 0; r < 5; r++) {
            printf(" %10.0f", g->peak_mib[r]);
            if (g->peak_mib[r] > peak) peak = g->peak_mib[r];
        }
        printf("\n");
    }
    double planned = (double)planned_bytes / (1024.0 * 1024.0);
    printf("planned (ppo_world --dry-run's memory plan: the models' and caches' own buffers): "
           "%.0f MiB, %.3f of the peak; the rest: %s\n", planned, peak > 0 ? planned / peak : 0,
           cuda ? "the kernels' scratch and the libraries' workspaces"
                : "the process's other host memory (the peak is its resident set)");
    printf("\nweight transfer: %zu bytes (%.1f MB: %s) per step; device copy of the same bytes "
           "within the %s: %.1f GB/s (bytes copied per second)\n", bytes, (double)bytes / 1e6,
           o.precision == PW_PRECISION_BF16 ? "the layers' matrices in bfloat16, the rest in "
           "float32" : "the float32 parameters", cuda ? "GPU" : "host", copy);
    printf("%6s %7s %10s %12s %10s %12s\n", "epochs", "prompts", "actor s", "generator s",
           "GB/s", "vs copy");
    int nall = 0;
    double *all = malloc((size_t)o.nepochs * MAX_STEPS * sizeof *all);
    if (!all) die("weights", "out of memory");
    for (int k = 0; k < o.nepochs; k++) {
        const Figures *g = &figs[k];
        double w = median(g->busy[WEIGHTS], g->n);
        double gbps = (double)bytes / w / 1e9;
        printf("%6d %7d %10.4f %12.4f %10.2f %12.3f\n", g->epochs, o.prompts, w,
               median(g->gen_weights, g->n), gbps, gbps / copy);
        memcpy(all + nall, g->busy[WEIGHTS], (size_t)g->n * sizeof *all);
        nall += g->n;
    }
    double w_all = median(all, nall);
    free(all);
    double gbps = (double)bytes / w_all / 1e9;
    printf("goal: weights GB/s >= 0.8 x the device copy (all runs: %.3f)\n", gbps / copy);

    printf("RESULT device=%s shape=%s precision=%s prompts=%d micro=%d gen_batch=%d",
           cuda ? "cuda" : "cpu", sh->name, pw_precision_name(o.precision), o.prompts, o.micro,
           o.gen_batch);
    for (int k = 0; k < o.nepochs; k++) printf(" s_per_step_e%d=%.4f", figs[k].epochs, s_of[k]);
    for (int k = 0; k < o.nepochs; k++) {
        if (trl_of[k] > 0) printf(" vs_trl_e%d=%.3f", figs[k].epochs, trl_of[k] / s_of[k]);
        else printf(" vs_trl_e%d=-", figs[k].epochs);
    }
    printf(" weights_gbps=%.3f copy_gbps=%.3f weights_vs_copy=%.4f %s=%.0f planned_mib=%.0f\n",
           gbps, copy, gbps / copy, cuda ? "peak_mib" : "host_peak_mib", peak, planned);
    fflush(stdout);
    remove_dir(tmp_dir);
    MPI_Finalize();
    return 0;
}
