/* bench_messages.c: bandwidth of the tensor message API between two ranks next to raw
 * MPI_Send/MPI_Recv of the same bytes, in the same run, rounds interleaved against noise.
 * Run: mpirun -np 2 bench_messages [rounds]. Prints a table, then `RESULT ratio_1MiB=... ratio_64MiB=...`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "pw_comm.h"
#include "pw_message.h"

#define MIN_BYTES (1 << 10)
#define MAX_BYTES (64 << 20)
#define BYTES_PER_TRIAL (32 << 20) /* short trials: on a shared machine some run undisturbed */
#define MAX_ROUNDS 101

/* One trial: rank 0 sends `iters` messages of `bytes` to rank 1, which answers with an empty
 * message once it has them all; the time is rank 0's, from the start to the answer. */
static double trial(PwWorld *w, int api, void *buf, size_t bytes, int iters)
{
    int64_t shape[1] = {(int64_t)bytes};
    PwTensor t = pw_tensor_host(buf, PW_DTYPE_U8, 1, shape);
    int64_t none[1] = {0};
    PwTensor ack = pw_tensor_host(NULL, PW_DTYPE_U8, 1, none);
    PW_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    if (w->rank == 0) {
        for (int i = 0; i < iters; i++) {
            if (api) pw_send(w, PW_ROLE_ACTOR, PW_ROLE_CRITIC, 0, PW_MSG_TEST, i, &t);
            else PW_MPI_CHECK(MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD));
        }
        if (api) pw_recv(w, PW_ROLE_ACTOR, PW_ROLE_CRITIC, 0, PW_MSG_TEST, -1, &ack);
        else PW_MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        for (int i = 0; i < iters; i++) {
            if (api) pw_recv(w, PW_ROLE_CRITIC, PW_ROLE_ACTOR, 0, PW_MSG_TEST, i, &t);
            else PW_MPI_CHECK(MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
                                       MPI_STATUS_IGNORE));
        }
        if (api) pw_send(w, PW_ROLE_CRITIC, PW_ROLE_ACTOR, 0, PW_MSG_TEST, -1, &ack);
        else PW_MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, 8, MPI_COMM_WORLD));
    }
    double dt = MPI_Wtime() - t0;
    PW_MPI_CHECK(MPI_Bcast(&dt, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    return (double)bytes * iters / dt / 1e9; /* GB/s */
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "bench_messages: run with exactly 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    int rounds = argc > 1 ? atoi(argv[1]) : 31;
    if (rounds < 1) rounds = 1;
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;

    int r0 = 0, r1 = 1;
    PwRoleMap map;
    memset(&map, 0, sizeof map);
    map.world_size = 2;
    map.role[PW_ROLE_ACTOR].nranks = 1;
    map.role[PW_ROLE_ACTOR].ranks = &r0;
    map.role[PW_ROLE_CRITIC].nranks = 1;
    map.role[PW_ROLE_CRITIC].ranks = &r1;
    PwWorld w;
    PwErr err;
    if (pw_world_init(&w, MPI_COMM_WORLD, &map, 300.0, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);

    char *buf = malloc(MAX_BYTES);
    if (!buf) pw_comm_fatal(__FILE__, __LINE__, "out of memory");
    memset(buf, rank + 1, MAX_BYTES); /* fault the pages in before timing */

    double ratio_1m = 0, ratio_64m = 0;
    if (rank == 0) {
        printf("bench_messages: 2 ranks, %d interleaved rounds per size, %d MiB per trial\n",
               rounds, BYTES_PER_TRIAL >> 20);
        printf("%10s %6s %12s %12s %12s %12s %8s %8s\n", "bytes", "iters", "raw median",
               "api median", "raw best", "api best", "ratio", "paired");
    }
    for (size_t bytes = MIN_BYTES; bytes <= MAX_BYTES; bytes *= 4) {
        int iters = (int)(BYTES_PER_TRIAL / bytes);
        if (iters < 2) iters = 2;
        if (iters > 4000) iters = 4000;
        double raw[MAX_ROUNDS], api[MAX_ROUNDS], pair[MAX_ROUNDS];
        trial(&w, 0, buf, bytes, 2); /* warm both paths at this size */
        trial(&w, 1, buf, bytes, 2);
        for (int k = 0; k < rounds; k++) {
            /* alternate which goes first, so a slow spell of the machine hits both alike */
            if (k % 2 == 0) {
                raw[k] = trial(&w, 0, buf, bytes, iters);
                api[k] = trial(&w, 1, buf, bytes, iters);
            } else {
                api[k] = trial(&w, 1, buf, bytes, iters);
                raw[k] = trial(&w, 0, buf, bytes, iters);
            }
            pair[k] = api[k] / raw[k]; /* back to back: slow drifts of the machine cancel */
        }
        double pair_med = bench_median(pair, rounds);
        double raw_med = bench_median(raw, rounds), api_med = bench_median(api, rounds);
        double raw_best = raw[rounds - 1], api_best = api[rounds - 1]; /* sorted by bench_median() */
        /* The best trial of each is the one least disturbed by other work on the machine;
         * the medians are printed too, but on a loaded machine they measure the load. */
        double ratio = api_best / raw_best;
        if (bytes == (1u << 20)) ratio_1m = ratio;
        if (bytes == (64u << 20)) ratio_64m = ratio;
        if (rank == 0)
            printf("%10zu %6d %12.3f %12.3f %12.3f %12.3f %8.3f %8.3f\n", bytes, iters, raw_med,
                   api_med, raw_best, api_best, ratio, pair_med);
    }
    if (rank == 0) {
        printf("GB/s = 1e9 bytes/s, one way; ratio = best api / best raw over the rounds; "
               "paired = median over rounds of api / raw measured back to back\n");
        printf("RESULT ratio_1MiB=%.3f ratio_64MiB=%.3f\n", ratio_1m, ratio_64m);
    }
    free(buf);
    pw_world_free(&w);
    MPI_Finalize();
    return 0;
}
