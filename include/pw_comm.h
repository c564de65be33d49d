/* pw_comm.h: the communication world of one rank: a communicator per role, the routing of a
 * batch between roles of different data-parallel degrees, the watchdog, and the check macros. */
#ifndef PW_COMM_H
#define PW_COMM_H

#include <mpi.h>
#include <stdint.h>

#include "pw_common.h"
#include "pw_role.h"

/* ---------------------------------------------------------------------------------------------
 * Check macros: every MPI / CUDA / NCCL call goes through one. A failure names the file, the
 * line and the call, then ends the whole job with MPI_Abort: a failed call must never turn into
 * a rank that the others wait for forever. */

#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 3, 4)))
#endif
void pw_comm_fatal(const char *file, int line, const char *fmt, ...);

/* One verdict for every rank of `comm` (collective): 0 where no rank failed, else -1 on every
 * rank with the lowest failing rank's message in `err`, so that rank 0 can print exactly one
 * error whichever rank found it, and no rank goes on alone. */
int pw_comm_agree(MPI_Comm comm, int failed, PwErr *err);

#define PW_MPI_CHECK(call)                                                                   \
    do {                                                                                     \
        int pw_mpi_rc_ = (call);                                                             \
        if (pw_mpi_rc_ != MPI_SUCCESS) {                                                     \
            char pw_mpi_s_[MPI_MAX_ERROR_STRING];                                            \
            int pw_mpi_n_ = 0;                                                               \
            MPI_Error_string(pw_mpi_rc_, pw_mpi_s_, &pw_mpi_n_);                             \
            pw_comm_fatal(__FILE__, __LINE__, "MPI call %s failed: %s", #call, pw_mpi_s_);   \
        }                                                                                    \
    } while (0)

/* PW_CUDA_CHECK is the kernels' own (with PW_HAVE_CUDA); pw_world_init makes its failures end
 * the job through pw_comm_fatal like the checks here. */
#include "pw_cuda_check.h"

#ifdef PW_HAVE_NCCL
#include <nccl.h>
#define PW_NCCL_CHECK(call)                                                                  \
    do {                                                                                     \
        ncclResult_t pw_nc_rc_ = (call);                                                     \
        if (pw_nc_rc_ != ncclSuccess)                                                        \
            pw_comm_fatal(__FILE__, __LINE__, "NCCL call %s failed: %s", #call,              \
                          ncclGetErrorString(pw_nc_rc_));                                    \
    } while (0)
#endif

/* ---------------------------------------------------------------------------------------------
 * The world of one rank. */

struct PwLocalMsg;  /* a message between two roles of this same rank (message.c) */
struct PwHeartbeat; /* this rank's heartbeat thread (heartbeat.c) */

typedef struct PwWorld {
    int rank, size;                       /* in the parent communicator */
    MPI_Comm comm;                        /* private duplicate: our tags never meet the caller's */
    PwRoleMap map;                        /* deep copy of the caller's map (ranks owned here) */
    MPI_Comm role_comm[PW_ROLE_COUNT];    /* MPI_COMM_NULL where this rank lacks the role */
    int role_rank[PW_ROLE_COUNT];         /* this rank's index inside each role, -1 if none */
    double timeout_s;                     /* watchdog: longest wait before the job is aborted */
    double spin_s;                        /* a wait spins this long before it yields the core */
    int mpi_cuda_aware;                   /* MPI takes device pointers: no staging needed */
    struct PwLocalMsg *local_head, *local_tail; /* same-rank mailbox, in send order */
    void *nccl[PW_ROLE_COUNT];            /* ncclComm_t per GPU role, made on first collective */
    void *nccl_stream[PW_ROLE_COUNT];     /* cudaStream_t the collectives of that role run on */
    void *pinned[4];                      /* freed pinned staging buffers kept for reuse: */
    size_t pinned_bytes[4];               /* cudaMallocHost costs milliseconds per call */
    char who[160];                        /* "rank 2 (critic[0]+reward[0])", for messages */
    struct PwHeartbeat *heartbeat;        /* NULL until pw_heartbeat_start, and when off */
    struct PwTrace *trace;                /* NULL unless trace.path is set (pw_trace.h) */
    uint64_t bytes_sent;                  /* payload bytes this rank sent to other ranks, reports
                                           * to the metrics aside (comm/bytes_sent) */
    uint64_t bytes_coll;                  /* bytes this rank gave to collectives */
} PwWorld;

/* Builds the world from a role map: checks the map against the communicator, splits one
 * communicator per role (collective over `parent`: every rank calls it, whatever its roles)
 * and sets the watchdog timeout. Returns 0, or -1 with `err` naming what is wrong in the map. */
int pw_world_init(PwWorld *w, MPI_Comm parent, const PwRoleMap *map, double timeout_s, PwErr *err);
/* Stops the heartbeat, frees communicators and buffers; collective over the parent like init. */
void pw_world_free(PwWorld *w);
/* Whether the MPI library loaded takes device pointers (asked at run time; 0 for a library built
 * without CUDA). Meaningful after MPI_Init only: before it the answer is 0. */
int pw_mpi_cuda_aware(void);
/* "rank 2 (critic[0]+reward[0])": a world rank and the roles it holds, for messages. */
void pw_world_describe_rank(const PwWorld *w, int rank, char *buf, size_t len);

static inline int pw_world_has_role(const PwWorld *w, PwRole r) { return w->role_rank[r] >= 0; }
/* World rank of rank `idx` of role r. */
static inline int pw_world_rank_of(const PwWorld *w, PwRole r, int idx)
{
    return w->map.role[r].ranks[idx];
}

/* ---------------------------------------------------------------------------------------------
 * Routing (pure functions, no MPI). A global batch of `nrows` rows is block-distributed over
 * the ranks of each role: part i of n holds rows [start, start + count), the first nrows % n
 * parts one row more. A route is the intersection of a producer's block with a consumer's. */

typedef struct PwBlock {
    int64_t start, count;
} PwBlock;

typedef struct PwRoute {
    int peer;       /* role-rank of the other side */
    int64_t row0;   /* first global row of the slice */
    int64_t nrows;  /* rows in the slice, > 0 */
} PwRoute;

PwBlock pw_block(int64_t nrows, int nparts, int part);
/* Routes out of producer `prod` (of nprod) to the ncons consumers, in ascending row order.
 * Writes at most `max` routes and returns how many there are (which may exceed max). */
int pw_route_sends(int64_t nrows, int nprod, int prod, int ncons, PwRoute *out, int max);
/* Routes into consumer `cons` (of ncons) from the nprod producers, in ascending row order:
 * received one after the other they fill the consumer's block exactly. */
int pw_route_recvs(int64_t nrows, int nprod, int ncons, int cons, PwRoute *out, int max);

/* ---------------------------------------------------------------------------------------------
 * Watchdog. Every wait of the runtime goes through pw_watchdog_wait: it polls the requests
 * (spinning first, then yielding, then sleeping briefly so oversubscribed ranks share cores)
 * and, past w->timeout_s, prints "<who> waited <t> s for <what>" and aborts the job. */

typedef void (*PwDescribeFn)(const void *ctx, char *buf, size_t len);

/* Waits for all n requests. `describe(ctx)` is called only on timeout, to say what was awaited
 * and from whom. Request errors end the job through the MPI check. */
void pw_watchdog_wait(PwWorld *w, int n, MPI_Request *reqs, PwDescribeFn describe, const void *ctx);
/* Polls `ready(ctx)` (returns non-zero when done) under the same timeout and backoff: for
 * waits that are not MPI requests, such as a CUDA stream running an NCCL collective. */
void pw_watchdog_poll(PwWorld *w, int (*ready)(void *ctx), void *ctx, PwDescribeFn describe,
                      const void *dctx);
/* Seconds on a monotonic clock. */
double pw_now(void);

/* ---------------------------------------------------------------------------------------------
 * Heartbeat. The timeout above bounds a single wait and must outlast the longest work a peer
 * may do meanwhile (a generation, a checkpoint), so it cannot tell a stopped rank quickly. A
 * thread per rank sends a beat every silence_s / 10 seconds to the next world rank of a ring
 * and watches the one before it: a rank silent for silence_s (stopped, or its host gone) ends
 * the job with "heartbeat: rank R (roles) has given no sign of life for T s ...", whatever
 * the others are doing. Collective over the world; 0 or a job of one rank: no heartbeat. It
 * needs MPI started with MPI_THREAD_MULTIPLE; without it, it says so and the timeout alone
 * guards the job. pw_world_free stops it (each rank says goodbye, so a finished rank is not
 * taken for a dead one). */
int pw_heartbeat_start(PwWorld *w, double silence_s, PwErr *err);
void pw_heartbeat_stop(PwWorld *w);

#endif
