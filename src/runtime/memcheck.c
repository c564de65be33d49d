/* memcheck.c: before a run loads its models, every rank's planned bytes against the memory its
 * node gives it (pw_memcheck.h). Without it a run too large for its machine is found minutes
 * into loading: a cudaMalloc that fails on one rank, or a rank the kernel's out-of-memory killer
 * ends, and a job torn down around it. Here every rank refuses at once, with one message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pw_device.h"
#include "pw_memcheck.h"

#define MIB (1024.0 * 1024.0)

/* What one rank tells the others: its host, which memory it plans on there (-1: the host's,
 * else its GPU) and how much. */
typedef struct Plan {
    int rank, memory;
    uint64_t need;
    char host[64];
} Plan;

/* The message of a rank whose memory cannot hold the plans of the ranks that share it. */
static int too_much(const PwWorld *w, const Plan *all, int n, const Plan *me, size_t have,
                    const char *what, const char *source, const char *hint, PwErr *err)
{
    char ranks[512] = "";
    uint64_t sum = 0;
    int cnt = 0;
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        if (all[i].memory != me->memory || strcmp(all[i].host, me->host)) continue;
        sum += all[i].need;
        if (len + 32 < sizeof ranks)
            len += (size_t)snprintf(ranks + len, sizeof ranks - len, "%s%d: %.1f MiB",
                                    cnt ? ", " : "", all[i].rank, all[i].need / MIB);
        cnt++;
    }
    if (sum <= have) return 0;
    return pw_errf(err, "rank %d on %s: not enough memory: the memory plan needs %.1f MiB of %s "
                   "(rank%s %s), which has %.1f MiB free (%s). %s", w->rank, me->host, sum / MIB,
                   what, cnt > 1 ? "s" : "", ranks, have / MIB, source, hint);
}

int pw_world_check_memory(PwWorld *w, PwDevice device, int gpu, size_t need, const char *hint,
                          PwErr *err)
{
    /* Every rank's plan and host in one gather over the world: the ranks of one host on one
     * memory add up (no node communicator to make and free for one check). */
    int n = w->size;
    Plan me = {w->rank, device == PW_DEVICE_CUDA ? (gpu < 0 ? 0 : gpu) : -1, need, ""};
    if (gethostname(me.host, sizeof me.host - 1)) snprintf(me.host, sizeof me.host, "?");
    Plan *all = calloc((size_t)n, sizeof *all);
    if (!all) pw_comm_fatal(__FILE__, __LINE__, "out of memory for %d memory plans", n);
    PW_MPI_CHECK(MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE,
                               w->comm));

    int failed = 0;
    if (me.memory >= 0) {
        size_t have = pw_device_free_bytes(me.memory);
        char what[32];
        snprintf(what, sizeof what, "cuda:%d", me.memory);
        if (have > 0) failed = too_much(w, all, n, &me, have, what, "cudaMemGetInfo", hint, err);
    } else {
        PwHostMemory h;
        if (!pw_host_memory("", &h))
            failed = too_much(w, all, n, &me, h.bytes, "the host's memory", h.source, hint,
                              err);
    }
    free(all);
    return pw_comm_agree(w->comm, failed, err);
}
