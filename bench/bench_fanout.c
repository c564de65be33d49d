/* bench_fanout.c: the actor's weights to G generator ranks, as the PPO step sends them (one
 * broadcast over a communicator made for it, pw_fanout.h) next to a message per generator rank
 * (how they went before), the same bytes in the same run, rounds interleaved against noise.
 *   mpirun -np N bench_fanout [MiB] [rounds]      (N >= 2: actor on rank 0, generator on 1..N-1)
 * Each trial: rank 0 posts the transfer and waits, the receivers post and wait, then all meet in
 * a barrier; the time is rank 0's from a barrier before to the barrier after. Prints a table of
 * the medians and the best trials, then `RESULT bcast_vs_p2p=...` (the paired median of
 * p2p time / broadcast time: above 1, the broadcast is faster). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "pw_comm.h"
#include "pw_fanout.h"
#include "pw_message.h"

#define MAX_ROUNDS 101

static double trial(PwWorld *w, PwFanout *f, int bcast, void *buf, size_t bytes, int step)
{
    int64_t shape[1] = {(int64_t)bytes};
    PwTensor t = pw_tensor_host(buf, PW_DTYPE_U8, 1, shape);
    int G = w->map.role[PW_ROLE_GENERATOR].nranks;
    PwMsgReq *q = calloc((size_t)G, sizeof *q);
    PwErr err;
    int n = 0, rc = 0;
    PW_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    if (w->rank == 0) {
        if (bcast) rc = pw_fanout_isend(w, f, PW_MSG_TEST, step, &t, &q[n++], &err);
        else
            for (int g = 0; g < G && !rc; g++)
                rc = pw_msg_isend(w, PW_ROLE_ACTOR, PW_ROLE_GENERATOR, g, PW_MSG_TEST, step, &t,
                                  &q[n++], &err);
    } else {
        rc = bcast ? pw_fanout_irecv(w, f, PW_MSG_TEST, step, &t, &q[n++], &err)
                   : pw_msg_irecv(w, PW_ROLE_GENERATOR, PW_ROLE_ACTOR, 0, PW_MSG_TEST, step, &t,
                                  &q[n++], &err);
    }
    if (rc || pw_msg_waitall(w, n, q, &err)) pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    PW_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double dt = MPI_Wtime() - t0;
    free(q);
    PW_MPI_CHECK(MPI_Bcast(&dt, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    return dt;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size < 2 || size > 64) {
        if (rank == 0) fprintf(stderr, "bench_fanout: run with 2 to 64 ranks\n");
        MPI_Finalize();
        return 2;
    }
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 64;
    int rounds = argc > 2 ? atoi(argv[2]) : 11;
    if (mib < 1) mib = 1;
    if (rounds < 1) rounds = 1;
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    size_t bytes = mib << 20;

    int r0 = 0, gen[64];
    for (int i = 1; i < size; i++) gen[i - 1] = i;
    PwRoleMap map;
    memset(&map, 0, sizeof map);
    map.world_size = size;
    map.role[PW_ROLE_ACTOR].nranks = 1;
    map.role[PW_ROLE_ACTOR].ranks = &r0;
    map.role[PW_ROLE_GENERATOR].nranks = size - 1;
    map.role[PW_ROLE_GENERATOR].ranks = gen;
    PwWorld w;
    PwFanout f;
    PwErr err;
    if (pw_world_init(&w, MPI_COMM_WORLD, &map, 600.0, &err) ||
        pw_fanout_init(&w, PW_ROLE_ACTOR, 0, PW_ROLE_GENERATOR, &f, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    char *buf = malloc(bytes);
    if (!buf) pw_comm_fatal(__FILE__, __LINE__, "out of memory for %zu MiB", mib);
    memset(buf, rank + 1, bytes); /* fault the pages in before timing */

    double p2p[MAX_ROUNDS], bc[MAX_ROUNDS], pair[MAX_ROUNDS];
    int step = 0;
    trial(&w, &f, 0, buf, bytes, step++); /* warm both paths */
    trial(&w, &f, 1, buf, bytes, step++);
    for (int k = 0; k < rounds; k++) {
        if (k % 2 == 0) {
            p2p[k] = trial(&w, &f, 0, buf, bytes, step++);
            bc[k] = trial(&w, &f, 1, buf, bytes, step++);
        } else {
            bc[k] = trial(&w, &f, 1, buf, bytes, step++);
            p2p[k] = trial(&w, &f, 0, buf, bytes, step++);
        }
        pair[k] = p2p[k] / bc[k];
    }
    double pm = bench_median(pair, rounds), p2p_med = bench_median(p2p, rounds), bc_med = bench_median(bc, rounds);
    if (rank == 0) {
        double gb = (double)bytes * (size - 1) / 1e9; /* bytes delivered per transfer */
        printf("bench_fanout: actor rank 0 -> %d generator ranks, %zu MiB each, %d interleaved "
               "rounds\n", size - 1, mib, rounds);
        printf("%-26s %12s %12s %14s\n", "transfer", "median s", "best s", "delivered GB/s");
        printf("%-26s %12.4f %12.4f %14.2f\n", "message per generator rank", p2p_med, p2p[0],
               gb / p2p_med);
        printf("%-26s %12.4f %12.4f %14.2f\n", "one broadcast", bc_med, bc[0], gb / bc_med);
        printf("paired = median over rounds of (message per rank) / (broadcast), back to back\n");
        printf("RESULT ranks=%d mib=%zu p2p_s=%.4f bcast_s=%.4f bcast_vs_p2p=%.3f\n", size, mib,
               p2p_med, bc_med, pm);
    }
    free(buf);
    pw_fanout_free(&f);
    pw_world_free(&w);
    MPI_Finalize();
    return 0;
}
