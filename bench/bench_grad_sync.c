/* bench_grad_sync.c: a data-parallel training step of a GPT-2-shaped model on N ranks (forward,
 * backward, the gradients summed over the ranks), with the sum as one all-reduce after the
 * backward and in buckets posted while the backward goes on (pw_collective.h, PwGradSync), and
 * without any sum (each rank alone: what full overlap would reach); modes interleaved per round.
 *   mpirun -np N bench_grad_sync [--layers L] [--width C] [--B B] [--T T] [--rounds R]
 *                                [--bucket-mb MB] [--device cpu|cuda]
 * The default shape is GPT-2 124M (12 layers, 768 wide, 498 MB of gradients), B = 1, T = 64. With
 * --device cuda each rank takes GPU (rank mod GPUs) and the sums go over NCCL, which needs one
 * GPU per rank. Prints a table of median step times and of the wait at the end (what the
 * backward did not hide), then `RESULT ... buckets_vs_after=...` (paired median of the step with
 * one all-reduce after / the step with buckets: above 1, the buckets pay). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "bench_world.h"
#include "pw_collective.h"
#include "pw_comm.h"
#include "pw_device.h"
#include "pw_model.h"

#define MAX_ROUNDS 101
#define PROG "bench_grad_sync"

enum { MODE_ALONE, MODE_AFTER, MODE_BUCKETS, MODE_COUNT };
static const char *const mode_names[MODE_COUNT] = {"no sum (each rank alone)",
                                                   "one all-reduce after backward",
                                                   "buckets during backward"};

typedef struct Step {
    double step_s, wait_s;
    int early;
} Step;

static Step trial(PwWorld *w, PwModel *m, const PwModelInput *in, const float *dlogp, int mode,
                  size_t bucket)
{
    PwErr err;
    float *lp = malloc((size_t)in->B * in->T * sizeof(float));
    PwOutputs out = {.col0 = 0, .width = in->T, .logp = lp};
    Step st = {0, 0, 0};
    PW_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = pw_now();
    if (pw_model_zero_grad(m, &err) || pw_model_forward(m, in, &out, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    PwGradSync *gs = NULL;
    if (mode != MODE_ALONE) {
        PwTensor g = pw_model_grads(m);
        gs = pw_grad_sync_begin(w, PW_ROLE_ACTOR, &g, mode == MODE_BUCKETS ? bucket : 0, &err);
        if (!gs) pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    }
    PwOutputGrads g = {.dlogp = dlogp, .ready = gs ? pw_grad_sync_ready : NULL, .ready_ctx = gs};
    if (pw_model_backward(m, &g, &err)) pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    double t1 = pw_now();
    if (pw_grad_sync_end(gs, &st.early, &err)) pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    pw_model_grads(m); /* the device's queued work, done */
    double t2 = pw_now();
    st.step_s = t2 - t0;
    st.wait_s = t2 - t1;
    /* the slowest rank's times: a step ends when every rank has its sum */
    double v[2] = {st.step_s, st.wait_s};
    PW_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    st.step_s = v[0];
    st.wait_s = v[1];
    free(lp);
    return st;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int L = 12, C = 768, B = 1, T = 64, rounds = 5;
    double bucket_mb = 25.0;
    PwDevice dev = PW_DEVICE_CPU;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--layers")) L = bench_arg_int(PROG, argc, argv, &i, o, 1, 96);
        else if (!strcmp(o, "--width")) C = bench_arg_int(PROG, argc, argv, &i, o, 64, 8192);
        else if (!strcmp(o, "--B")) B = bench_arg_int(PROG, argc, argv, &i, o, 1, 256);
        else if (!strcmp(o, "--T")) T = bench_arg_int(PROG, argc, argv, &i, o, 1, 1024);
        else if (!strcmp(o, "--rounds"))
            rounds = bench_arg_int(PROG, argc, argv, &i, o, 1, MAX_ROUNDS);
        else if (!strcmp(argv[i], "--bucket-mb") && i + 1 < argc) {
            char *end;
            bucket_mb = strtod(argv[++i], &end);
            if (*end || !(bucket_mb > 0 && bucket_mb <= 1048576)) {
                fprintf(stderr, "bench_grad_sync: --bucket-mb %s: expected (0, 1048576]\n",
                        argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            const char *d = argv[++i];
            if (!strcmp(d, "cuda")) dev = PW_DEVICE_CUDA;
            else if (strcmp(d, "cpu")) {
                fprintf(stderr, "bench_grad_sync: --device %s: expected cpu or cuda\n", d);
                return 2;
            }
        } else {
            fprintf(stderr, "bench_grad_sync: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (C % 64) {
        fprintf(stderr, "bench_grad_sync: --width %d: expected a multiple of 64 (heads of 64)\n",
                C);
        return 2;
    }
    size_t bucket = (size_t)(bucket_mb * 1048576.0);
    int ngpu = dev == PW_DEVICE_CUDA ? pw_device_count() : 0;
    if (dev == PW_DEVICE_CUDA && ngpu < 1) {
        if (!rank) fprintf(stderr, "bench_grad_sync: --device cuda: no GPU here\n");
        MPI_Finalize();
        return 2;
    }

    int ranks[BENCH_MAX_RANKS];
    PwWorld w;
    PwErr err;
    bench_actor_world(&w, ranks, dev);

    PwArch a = {.family = PW_FAMILY_GPT2, .n_layer = L, .n_head = C / 64, .n_embd = C,
                .vocab_size = 50257, .n_positions = 1024};
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = B, .maxT = T, .device = dev,
                     .device_id = ngpu ? rank % ngpu : 0};
    PwModel *m = pw_model_create(&a, &o, &err);
    if (!m) pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    pw_model_init_random(m, 1);
    int *tok = malloc((size_t)B * T * sizeof(int));
    float *dlogp = malloc((size_t)B * T * sizeof(float));
    for (int i = 0; i < B * T; i++) {
        tok[i] = (i * 7919 + rank * 31) % a.vocab_size;
        dlogp[i] = -1.0f / (float)(B * T);
    }
    PwModelInput in = {tok, NULL, tok, B, T, 1.0f};

    Step s[MODE_COUNT][MAX_ROUNDS];
    double pair[MAX_ROUNDS];
    for (int k = 0; k < MODE_COUNT; k++) trial(&w, m, &in, dlogp, k, bucket); /* warm */
    for (int r = 0; r < rounds; r++) {
        for (int j = 0; j < MODE_COUNT; j++) {
            int k = (j + r) % MODE_COUNT; /* each mode first in turn */
            s[k][r] = trial(&w, m, &in, dlogp, k, bucket);
        }
        pair[r] = s[MODE_AFTER][r].step_s / s[MODE_BUCKETS][r].step_s;
    }
    double med_step[MODE_COUNT], med_wait[MODE_COUNT], best[MODE_COUNT];
    for (int k = 0; k < MODE_COUNT; k++) {
        double v[MAX_ROUNDS], u[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            v[r] = s[k][r].step_s;
            u[r] = s[k][r].wait_s;
        }
        med_step[k] = bench_median(v, rounds);
        best[k] = v[0];
        med_wait[k] = bench_median(u, rounds);
    }
    double pm = bench_median(pair, rounds);
    if (rank == 0) {
        size_t np = pw_model_num_params(m);
        printf("bench_grad_sync: %d ranks, GPT-2 shape %d layers x %d wide (%.1f MB of "
               "gradients), B = %d, T = %d, %s (%s), buckets of %g MiB, %d rounds\n", size, L, C,
               np * 4e-6, B, T, dev == PW_DEVICE_CUDA ? "cuda" : "cpu",
               pw_collective_backend(&w, PW_ROLE_ACTOR), bucket_mb, rounds);
        printf("%-32s %12s %12s %16s %14s\n", "gradient sum", "median s", "best s",
               "wait at end s", "early buckets");
        for (int k = 0; k < MODE_COUNT; k++)
            printf("%-32s %12.4f %12.4f %16.4f %14d\n", mode_names[k], med_step[k], best[k],
                   med_wait[k], s[k][0].early);
        printf("step = forward + backward + the sum, slowest rank; wait at end = the time from "
               "the backward's return to the sum's (what the backward did not hide)\n");
        printf("RESULT ranks=%d layers=%d width=%d params=%zu step_s_alone=%.4f "
               "step_s_after=%.4f step_s_buckets=%.4f wait_s_after=%.4f wait_s_buckets=%.4f "
               "buckets_vs_after=%.3f\n", size, L, C, np, med_step[MODE_ALONE],
               med_step[MODE_AFTER], med_step[MODE_BUCKETS], med_wait[MODE_AFTER],
               med_wait[MODE_BUCKETS], pm);
    }
    free(tok);
    free(dlogp);
    pw_model_free(m);
    pw_world_free(&w);
    MPI_Finalize();
    return 0;
}
