/* bench_ppo.c: PPO steps per second of one run configuration under several placements, sync
 * against async (async.max_staleness k = 1, and k = 2 and 4 on "split"), with each role's busy
 * and waiting seconds per step; last line RESULT.
 *
 * One MPI job runs every case: each placement runs on the first ranks of the job (a
 * communicator of its own) while the other ranks sleep, so a single command gives the table.
 *   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpirun --oversubscribe -np 5 bench_ppo
 *       [--steps S] [--rounds K] [--only one|split|five]   (S >= 7)
 * One thread per rank is required (checked): a rank with a thread per core would take the core
 * the other rank of "split" overlaps on.
 * Placements: "one" (every role on rank 0), "split" (rank 0: actor, reference, critic, reward;
 * rank 1: generator; the layout where async can overlap generation with training on two cores)
 * and "five" (one role per rank). Those needing more ranks than the job has are skipped.
 * The RESULT line compares sync and k = 1, 2, 4 on "split"; ideal_speedup is what perfect
 * overlap would give: (generation + training) / max(generation, training), both measured in the
 * sync runs (generation: the generator's generate seconds; training: the busy seconds of the
 * other four roles, which share rank 0), and kK_overlap the fraction of the ideal overlap the
 * run with that k reached, from its own phase times (which differ from the sync run's: there
 * the two ranks never run at once): (generation + training - s/step) / min(generation,
 * training), 1 when the shorter side is hidden completely, 0 when nothing overlaps. Only
 * steps 1 .. S - 6 of a run are measured, the same steps in every mode: step 0 of an async run
 * samples its first k + 1 batches before anything can overlap, and in its last k steps the
 * generator has nothing left to sample (k <= 4). Every figure is a median over the measured steps of K rounds, each round running sync
 * then async of every placement, so that a burst of load from elsewhere on a shared machine
 * moves it little and falls on both modes alike. */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"
#include "pw_blas_core.h"
#include "pw_config.h"
#include "pw_model.h"
#include "pw_placement.h"
#include "pw_roles.h"

/* The run: a GPT-2 of 4 layers, 128 wide, 512 tokens, 16 rollouts of 40 new tokens per step
 * (no stop token, so every step does the same work), prompts of 8..16 tokens. */
enum { V = 512, L = 4, NH = 4, C = 128, NPOS = 96, N = 16, MICRO = 1, RESP = 64 };

typedef struct Case {
    const char *name;
    int ranks;
    const char *roles[5]; /* placement lines */
} Case;

static const Case cases[] = {
    {"one", 1,
     {"actor: { ranks: [0] }", "reference: { ranks: [0] }", "critic: { ranks: [0] }",
      "reward: { ranks: [0] }", "generator: { ranks: [0] }"}},
    {"split", 2,
     {"actor: { ranks: [0] }", "reference: { ranks: [0] }", "critic: { ranks: [0] }",
      "reward: { ranks: [0] }", "generator: { ranks: [1] }"}},
    {"five", 5,
     {"actor: { ranks: [0] }", "reference: { ranks: [1] }", "critic: { ranks: [2] }",
      "reward: { ranks: [3] }", "generator: { ranks: [4] }"}},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))
#define SPLIT 1 /* cases[SPLIT]: the placement whose modes the RESULT line compares */

static const char *const role_keys[5] = {"actor", "reference", "critic", "reward", "generator"};
static const char *const busy_phases[5] = {"generate", "evaluate", "advantages", "train",
                                           "weights"};

/* Per-step samples of one placement and mode over every round; medians are reported. */
#define MAX_SAMPLES 1024
typedef struct Samples {
    int n;
    double step_s[MAX_SAMPLES];
    double busy[5][MAX_SAMPLES], idle[5][MAX_SAMPLES];
    double generate[MAX_SAMPLES], train[MAX_SAMPLES]; /* generator; the four other roles */
} Samples;

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "bench_ppo: %s: %s\n", what, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ------------------------------------------------------------------------------ inputs */

static void write_model(const char *dir, uint64_t seed, int heads)
{
    PwErr err;
    PwArch c = {.family = PW_FAMILY_GPT2, .n_layer = L, .n_head = NH, .n_embd = C,
                .vocab_size = V, .n_positions = NPOS};
    PwModelOpts o = {.heads = heads, .maxB = 1, .maxT = 8};
    PwModel *m = pw_model_create(&c, &o, &err);
    if (!m) die("model", err.msg);
    pw_model_init_random(m, seed);
    mkdir(dir, 0755);
    if (pw_model_save(m, dir, &err)) die(dir, err.msg);
    pw_model_free(m);
}

static void write_inputs(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/sft", dir);
    write_model(path, 11, PW_HEAD_LM);
    snprintf(path, sizeof path, "%s/rm", dir);
    write_model(path, 22, PW_HEAD_LM | PW_HEAD_SCORE);
    snprintf(path, sizeof path, "%s/prompts.jsonl", dir);
    FILE *f = fopen(path, "w");
    if (!f) die(path, strerror(errno));
    uint64_t s = 12345;
    for (int i = 0; i < 64; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int len = 8 + (int)((s >> 33) % 9);
        fprintf(f, "{\"input_ids\": [");
        for (int t = 0; t < len; t++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            fprintf(f, "%s%d", t ? ", " : "", (int)((s >> 33) % (V - 1)));
        }
        fprintf(f, "]}\n");
    }
    if (fclose(f)) die(path, strerror(errno));
    for (int c = 0; c < NCASES; c++) {
        snprintf(path, sizeof path, "%s/%s.yaml", dir, cases[c].name);
        f = fopen(path, "w");
        if (!f) die(path, strerror(errno));
        fprintf(f, "version: 1\nbind: none\nroles:\n");
        for (int i = 0; i < 5; i++) fprintf(f, "  %s\n", cases[c].roles[i]);
        if (fclose(f)) die(path, strerror(errno));
    }
}

/* ----------------------------------------------------------------------------- one case */

/* Ranks outside the case wait here without spinning, so the case has the cores to itself. */
static void rest_until_all_done(void)
{
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    int done = 0;
    while (!done) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done) nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
}

/* The modes: async.max_staleness of each (0: sync). "one" and "five" run the first two only. */
static const int modes[] = {0, 1, 2, 4};
#define NMODES ((int)(sizeof modes / sizeof modes[0]))
#define KMAX 4

static void run_case(const char *dir, const Case *c, int k, int steps, int round, int rank)
{
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank < c->ranks ? 0 : MPI_UNDEFINED, rank, &sub);
    if (sub != MPI_COMM_NULL) {
        char pl_path[512], out[512], ov[8][600];
        snprintf(pl_path, sizeof pl_path, "%s/%s.yaml", dir, c->name);
        snprintf(out, sizeof out, "%s/%s_k%d_%d", dir, c->name, k, round);
        snprintf(ov[0], sizeof ov[0], "model.sft=%s/sft", dir);
        snprintf(ov[1], sizeof ov[1], "model.reward=[%s/rm]", dir);
        snprintf(ov[2], sizeof ov[2], "data.prompts=%s/prompts.jsonl", dir);
        snprintf(ov[3], sizeof ov[3], "episodes=%d", N * steps);
        snprintf(ov[4], sizeof ov[4], "ppo.num_rollout_samples=%d", N);
        snprintf(ov[5], sizeof ov[5], "ppo.rollout_micro_batch_size=%d", MICRO);
        snprintf(ov[6], sizeof ov[6], "generation.max_new_tokens=%d", RESP);
        snprintf(ov[7], sizeof ov[7], "async.max_staleness=%d", k);
        const char *fixed[] = {"ppo.epochs=1", "ppo.minibatches=2", "generation.stop_token=none",
                               "reward.non_stop_penalty=false", "optim.lr=1e-4",
                               "optim.warmup_steps=0", "critic.lr=1e-4", "checkpoint.every=0",
                               "eval.every=0", "seed=1",
                               "runtime.progress_s=0"}; /* the table is the output */
        const char *all[20];
        int n = 0;
        for (int i = 0; i < 8; i++) all[n++] = ov[i];
        for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) all[n++] = fixed[i];
        PwErr err = {{0}};
        PwPlacement pl;
        PwConfig cfg;
        if (pw_placement_load(pl_path, c->ranks, &pl, &err)) die(pl_path, err.msg);
        if (pw_config_build(&cfg, NULL, all, n, &err)) die("configuration", err.msg);
        if (pw_ppo_run(&cfg, &pl, sub, -1, out, 0, &err)) die(c->name, err.msg);
        pw_config_free(&cfg);
        pw_placement_free(&pl);
        MPI_Comm_free(&sub);
    }
    rest_until_all_done();
}

/* --------------------------------------------------------------------------- figures */

/* The number after "key": in one metrics line (0 when absent: a role the placement lacks). */
static double field(const char *line, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    return p ? strtod(p + strlen(pat), NULL) : 0.0;
}

static void read_samples(Samples *g, const char *dir, const Case *c, int k, int steps, int round)
{
    char path[600], line[8192], key[96];
    snprintf(path, sizeof path, "%s/%s_k%d_%d/metrics.jsonl", dir, c->name, k, round);
    FILE *f = fopen(path, "r");
    if (!f) die(path, strerror(errno));
    for (int s = 0; fgets(line, sizeof line, f); s++) {
        if (s == 0 || s >= steps - 1 - KMAX || g->n == MAX_SAMPLES) continue;
        int k = g->n++;
        g->step_s[k] = field(line, "time/step");
        g->train[k] = 0.0;
        for (int r = 0; r < 5; r++) {
            g->busy[r][k] = 0.0;
            for (int p = 0; p < 5; p++) {
                snprintf(key, sizeof key, "time/%s/%s", role_keys[r], busy_phases[p]);
                g->busy[r][k] += field(line, key);
            }
            snprintf(key, sizeof key, "time/%s/idle", role_keys[r]);
            g->idle[r][k] = field(line, key);
            if (r < 4) g->train[k] += g->busy[r][k];
        }
        g->generate[k] = field(line, "time/generator/generate");
    }
    fclose(f);
}

/* The median of x[0..n), which stays in step order. */
static double median(const double *x, int n)
{
    double *t = malloc((size_t)(n > 0 ? n : 1) * sizeof *t);
    if (!t || n < 1) die("median", "no samples");
    memcpy(t, x, (size_t)n * sizeof *t);
    double m = bench_median(t, n);
    free(t);
    return m;
}

static Samples samples[NCASES][NMODES];

int main(int argc, char **argv)
{
    pw_blas_core_remedy(argv); /* the OpenBLAS kernels ppo_world runs (docs/kernels.md) */
    MPI_Init(&argc, &argv);
    int rank, size, steps = 10, rounds = 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else {
            if (rank == 0)
                fprintf(stderr, "usage: mpirun -np 5 bench_ppo [--steps S] [--rounds K] "
                                "[--only one|split|five]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (steps < 3 + KMAX)
        die("--steps", "at least 7 (step 0 and the last 5 steps are not measured)");
    static const char *const one_thread[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(one_thread[i]);
        if (!v || strcmp(v, "1"))
            die(one_thread[i], "set it to 1: one thread per rank, or the ranks' thread pools "
                               "fight over the cores the placements are measured on");
    }
    if (rounds < 1) die("--rounds", "at least 1");

    char dir[256] = "";
    if (rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/bench_ppo.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) die("temporary folder", strerror(errno));
        write_inputs(dir);
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);

    int ran[NCASES] = {0};
    for (int k = 0; k < rounds; k++)
        for (int c = 0; c < NCASES; c++) {
            if (cases[c].ranks > size || (only && strcmp(only, cases[c].name))) continue;
            for (int a = 0; a < (c == SPLIT ? NMODES : 2); a++) {
                run_case(dir, &cases[c], modes[a], steps, k, rank);
                if (rank == 0) read_samples(&samples[c][a], dir, &cases[c], modes[a], steps, k);
            }
            ran[c] = 1;
        }

    if (rank == 0) {
        /* The overlap async can show is bounded by free cores: say what the machine had. */
        double load[1] = {-1.0};
        if (getloadavg(load, 1) < 1) load[0] = -1.0;
        printf("machine: %ld cores online, load average %.2f (1 min) after the runs\n",
               sysconf(_SC_NPROCESSORS_ONLN), load[0]);
        printf("bench_ppo: GPT-2 L=%d C=%d V=%d, %d rollouts x %d new tokens per step (micro "
               "batch %d, 2 minibatches); %d rounds of %d steps, steps 1..%d of each measured; "
               "%d ranks in the job\n",
               L, C, V, N, RESP, MICRO, rounds, steps, steps - 2 - KMAX, size);
        printf("per role: busy / waiting seconds per step (medians; a role's seconds are the mean "
               "over its ranks)\n");
        printf("%-6s %5s %-5s %8s %7s", "place", "ranks", "mode", "steps/s", "s/step");
        for (int r = 0; r < 5; r++) printf(" %15s", role_keys[r]);
        printf("\n");
        for (int c = 0; c < NCASES; c++) {
            if (!ran[c]) continue;
            for (int a = 0; a < (c == SPLIT ? NMODES : 2); a++) {
                const Samples *g = &samples[c][a];
                double st = median(g->step_s, g->n);
                char mode[16];
                snprintf(mode, sizeof mode, "k=%d", modes[a]);
                printf("%-6s %5d %-5s %8.3f %7.3f", cases[c].name, cases[c].ranks, mode, 1.0 / st,
                       st);
                for (int r = 0; r < 5; r++)
                    printf("   %5.3f / %5.3f", median(g->busy[r], g->n), median(g->idle[r], g->n));
                printf("\n");
            }
        }
        if (ran[SPLIT]) {
            const Samples *s = &samples[SPLIT][0];
            double gen = median(s->generate, s->n), train = median(s->train, s->n);
            double sync_s = median(s->step_s, s->n), k_s[NMODES];
            double hi = gen > train ? gen : train;
            for (int a = 1; a < NMODES; a++) k_s[a] = median(samples[SPLIT][a].step_s, samples[SPLIT][a].n);
            printf("split sync: generation %.3f s, training %.3f s per step; ideal step %.3f s\n",
                   gen, train, hi);
            printf("RESULT sync_steps_per_s=%.3f", 1.0 / sync_s);
            for (int a = 1; a < NMODES; a++) {
                const Samples *g = &samples[SPLIT][a];
                double gk = median(g->generate, g->n), tk = median(g->train, g->n);
                printf(" k%d_steps_per_s=%.3f k%d_overlap=%.3f", modes[a], 1.0 / k_s[a], modes[a],
                       (gk + tk - k_s[a]) / (gk < tk ? gk : tk));
            }
            printf(" async_speedup=%.3f ideal_speedup=%.3f\n", sync_s / k_s[1],
                   (gen + train) / hi);
        } else {
            printf("RESULT none: the split placement needs 2 ranks\n");
        }
        fflush(stdout);
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) fprintf(stderr, "bench_ppo: could not remove %s\n", dir);
    }
    MPI_Finalize();
    return 0;
}
