/* bench_zero.c: the optimiser step of a data-parallel role on N ranks with the AdamW moments whole
 * on every rank (optim.zero_stage 0), split over the ranks (1: each rank updates its block of
 * the weights, then an all-gather hands out the others'), and the gradients split too (2: each
 * backward sums each layer's into its owners' blocks, a reduce-scatter), through the calls the
 * roles make (src/roles/shard.h). At --precision bf16 stage 1 splits the float32 master weights
 * of the layers' matrices too, and the all-gather moves the bfloat16 copy of those. Per rank: the
 * weights' bytes (what the model held on the CPU kernel table once made and given its share),
 * the gradients' (what the first zero_grad made it allocate), the moments' (what the first step
 * did), and the resident memory that step added; and the median times (the slowest rank's) of
 * the gradient's sum, an all-reduce of the whole at stages 0 and 1 (the same: measured once) and
 * at 2 the reductions of one backward (of nothing: the bytes of any backward, not its compute),
 * and of the step, the all-gather included.
 *   mpirun -np N bench_zero [--shape gpt2-124m|qwen2.5-0.5b] [--layers L] [--width C]
 *                           [--precision fp32|bf16] [--rounds R]
 * The default is GPT-2 124M (124.4M weights, 50304 rows of the padded vocabulary), 5 rounds;
 * --layers replaces the shape's layer count, --width the GPT-2 shape's (a small run). CPU only:
 * the GPU form needs a GPU per rank. Prints the table, then `RESULT ... weights_ratio=...
 * moments_ratio=... step_ratio=... grads_ratio=... sum_ratio=...` (stage 1 over stage 0, then
 * the gradients' bytes and sum at stage 2 over stage 0: below 1, the split holds or takes
 * less). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_rss.h"
#include "bench_shapes.h"
#include "bench_stats.h"
#include "bench_world.h"
#include "pw_collective.h"
#include "pw_comm.h"
#include "pw_ops.h"
#include "shard.h"

#define MAX_ROUNDS 101
#define PROG "bench_zero"

enum { NZ = 3 }; /* the stages */

typedef struct Held {
    double weights_mib;        /* what the model held once made and given its share */
    double grads_mib;          /* what its first zero_grad added */
    double table_mib, rss_mib; /* what the first step added on this rank */
} Held;

/* The gradient every rank holds after the sum: the same on each, as the all-reduce leaves it.
 * Split gradients are zeroed (their share is all that exists: AdamW takes the same time on any
 * values). */
static void fill_grads(PwModel *m)
{
    PwErr err;
    if (pw_model_zero_grad(m, &err)) pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    if (pw_model_grads_are_split(m)) return;
    float *g = pw_model_grads(m).data;
    size_t n = pw_model_num_params(m);
    for (size_t i = 0; i < n; i++) g[i] = 1e-3f * (float)((i * 2654435761u) % 2001) - 1.0f;
}

/* One step at time step t: the slowest rank's seconds */
static double step(PwWorld *w, PwModel *m, const int64_t *starts, int t)
{
    PwErr err;
    PwAdamWConfig ac = {1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    PW_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = pw_now();
    if (pw_model_adamw_step(m, &ac, t, NULL, &err) != PW_ADAMW_APPLIED)
        pw_comm_fatal(__FILE__, __LINE__, "the step was not applied: %s", err.msg);
    pw_shard_gather_weights(w, PW_ROLE_ACTOR, m, starts);
    double s = pw_now() - t0;
    PW_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return s;
}

/* The gradient's sum over the ranks: the whole all-reduced, or a backward's reductions of split
 * gradients; the slowest rank's seconds */
static double grad_sum(PwWorld *w, PwModel *m)
{
    PwErr err;
    fill_grads(m); /* fresh values: repeated sums would grow without bound */
    PW_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = pw_now();
    int rc;
    if (pw_model_grads_are_split(m)) {
        rc = pw_model_backward_idle(m, &err);
    } else {
        PwTensor g = pw_model_grads(m);
        rc = pw_allreduce(w, PW_ROLE_ACTOR, &g, PW_REDUCE_SUM, &err);
    }
    if (rc) pw_comm_fatal(__FILE__, __LINE__, "the gradient's sum: %s", err.msg);
    double s = pw_now() - t0;
    PW_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int which = 0, layers = 0, width = 0, rounds = 5;
    PwPrecision prec = PW_PRECISION_FP32;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--layers")) layers = bench_arg_int(PROG, argc, argv, &i, o, 1, 96);
        else if (!strcmp(o, "--width")) width = bench_arg_int(PROG, argc, argv, &i, o, 64, 8192);
        else if (!strcmp(o, "--rounds"))
            rounds = bench_arg_int(PROG, argc, argv, &i, o, 1, MAX_ROUNDS);
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc) {
            const char *s = argv[++i];
            if (!strcmp(s, "fp32") || !strcmp(s, "bf16")) {
                prec = s[0] == 'b' ? PW_PRECISION_BF16 : PW_PRECISION_FP32;
            } else {
                if (!rank)
                    fprintf(stderr, "bench_zero: --precision %s: expected fp32 or bf16\n", s);
                MPI_Finalize();
                return 2;
            }
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            const char *s = argv[++i];
            if (!strcmp(s, "gpt2-124m")) which = 0;
            else if (!strcmp(s, "qwen2.5-0.5b")) which = 1;
            else {
                if (!rank)
                    fprintf(stderr, "bench_zero: --shape %s: expected gpt2-124m or "
                            "qwen2.5-0.5b\n", s);
                MPI_Finalize();
                return 2;
            }
        } else {
            if (!rank) fprintf(stderr, "bench_zero: unknown argument '%s'\n", argv[i]);
            MPI_Finalize();
            return 2;
        }
    }
    if (width && (which || width % 64)) {
        if (!rank)
            fprintf(stderr, "bench_zero: --width %d: expected a multiple of 64 (heads of 64), "
                    "with the GPT-2 shape\n", width);
        MPI_Finalize();
        return 2;
    }
    if (size < 2) {
        if (!rank) fprintf(stderr, "bench_zero: needs 2 ranks or more (mpirun -np N)\n");
        MPI_Finalize();
        return 2;
    }
    int ranks[BENCH_MAX_RANKS];
    PwWorld w;
    PwErr err;
    bench_actor_world(&w, ranks, PW_DEVICE_CPU);

    PwArch a = bench_shape(which);
    if (layers) a.n_layer = layers;
    if (width) {
        a.n_embd = width;
        a.n_head = width / 64;
    }
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = 1, .maxT = 8, .vocab_multiple = 64,
                     .precision = prec};
    PwModel *m[NZ];
    int64_t *starts[NZ];
    Held held[NZ];
    for (int z = 0; z < NZ; z++) { /* one model at a time, so that each first step is its own */
        size_t b0 = pw_cpu_table_bytes();
        if (!(m[z] = pw_model_create(&a, &o, &err)))
            pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
        pw_model_init_random(m[z], 1);
        starts[z] = pw_shard_begin(&w, PW_ROLE_ACTOR, m[z], z, "the role");
        held[z].weights_mib = (double)(pw_cpu_table_bytes() - b0) / 1048576.0;
        size_t g0 = pw_cpu_table_bytes();
        fill_grads(m[z]);
        held[z].grads_mib = (double)(pw_cpu_table_bytes() - g0) / 1048576.0;
        size_t t0 = pw_cpu_table_bytes();
        double r0 = rss_now_mib();
        step(&w, m[z], starts[z], 1); /* makes the moments */
        held[z].table_mib = (double)(pw_cpu_table_bytes() - t0) / 1048576.0;
        held[z].rss_mib = rss_now_mib() - r0;
    }
    double t[NZ][MAX_ROUNDS], pair[MAX_ROUNDS], sum[2][MAX_ROUNDS], spair[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        for (int j = 0; j < NZ; j++) {
            int z = (j + r) % NZ; /* each first in turn */
            /* the gradients the step reads: summed (stage 1's sum is stage 0's) */
            if (z == 1) fill_grads(m[z]);
            else sum[z / 2][r] = grad_sum(&w, m[z]);
            t[z][r] = step(&w, m[z], starts[z], 2 + r);
        }
        pair[r] = t[1][r] / t[0][r];
        spair[r] = sum[1][r] / sum[0][r];
    }
    /* the largest share is rank 0's: every rank's figures to rank 0 */
    enum { F = 4 }; /* figures a stage */
    double mine[NZ * F];
    for (int z = 0; z < NZ; z++) {
        double *f = mine + F * z;
        f[0] = held[z].weights_mib;
        f[1] = held[z].grads_mib;
        f[2] = held[z].table_mib;
        f[3] = held[z].rss_mib;
    }
    double *all = rank == 0 ? malloc((size_t)size * sizeof mine) : NULL;
    PW_MPI_CHECK(MPI_Gather(mine, NZ * F, MPI_DOUBLE, all, NZ * F, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        size_t np = pw_model_num_params(m[0]);
        double med[NZ], smed[2];
        for (int z = 0; z < NZ; z++) med[z] = bench_median(t[z], rounds);
        for (int z = 0; z < 2; z++) smed[z] = bench_median(sum[z], rounds);
        double pm = bench_median(pair, rounds), spm = bench_median(spair, rounds);
        printf("bench_zero: %d ranks (MPI), %s with %d layers of %d, %zu parameters (%.1f MiB "
               "of float32), cpu, %s, %d rounds\n", size, bench_shape_name(which), a.n_layer,
               a.n_embd, np, np * 4.0 / 1048576.0, pw_precision_name(prec), rounds);
        static const char *const names[NZ] = {"0 (all whole)", "1 (moments split)",
                                              "2 (gradients too)"};
        printf("%-20s %5s %12s %12s %14s %15s\n", "optim.zero_stage", "rank", "weights MiB",
               "grads MiB", "moments MiB", "resident +MiB");
        for (int z = 0; z < NZ; z++)
            for (int k = 0; k < size; k++) {
                const double *f = all + NZ * F * k + F * z;
                printf("%-20s %5d %12.1f %12.1f %14.1f %15.1f\n", names[z], k, f[0], f[1], f[2],
                       f[3]);
            }
        printf("gradient's sum, slowest rank, median of %d: %.4f s at stages 0 and 1 (an "
               "all-reduce of the whole), %.4f s at 2 (a backward's %d reduce-scatters)\n",
               rounds, smed[0], smed[1], a.n_layer + 2);
        for (int z = 0; z < NZ; z++)
            printf("stage %d step (AdamW%s), slowest rank, median of %d: %.4f s\n", z,
                   z ? " on the block + all-gather of the weights" : " on every weight", rounds,
                   med[z]);
        printf("weights MiB: what the model held on the CPU kernel table once made and given its "
               "share (at bf16 with its bfloat16 copy); grads MiB: what its first zero_grad made "
               "the table allocate; moments MiB: what the first step did; resident: what that "
               "step added to the process's resident set\n");
        const double *s0 = all, *s1 = all + F, *s2 = all + 2 * F; /* rank 0's */
        printf("RESULT ranks=%d params=%zu precision=%s weights_mib_0=%.1f weights_mib_1=%.1f "
               "weights_ratio=%.3f moments_mib_0=%.1f moments_mib_1=%.1f moments_ratio=%.3f "
               "step_s_0=%.4f step_s_1=%.4f step_ratio=%.3f grads_mib_0=%.1f grads_mib_2=%.1f "
               "grads_ratio=%.3f sum_s_0=%.4f sum_s_2=%.4f sum_ratio=%.3f step_s_2=%.4f\n",
               size, np, pw_precision_name(prec), s0[0], s1[0], s1[0] / s0[0], s0[2], s1[2],
               s1[2] / s0[2], med[0], med[1], pm, s0[1], s2[1], s2[1] / s0[1], smed[0], smed[1],
               spm, med[2]);
        free(all);
    }
    for (int z = 0; z < NZ; z++) {
        free(starts[z]);
        pw_model_free(m[z]);
    }
    pw_world_free(&w);
    MPI_Finalize();
    return 0;
}
