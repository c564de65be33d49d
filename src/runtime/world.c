/* world.c: the communication world of a rank: checks the role map, splits one communicator per
 * role, and owns the fatal-error path that every check macro of the runtime ends in. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pw_comm.h"
#include "pw_file.h"
#include "pw_message.h"
#include "pw_trace.h"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

void pw_comm_fatal(const char *file, int line, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int init = 0, fin = 0, rank = -1;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* One write with the whole line so that lines of several ranks do not interleave. */
    fprintf(stderr, "[ppo_world] rank %d: %s:%d: %s\n", rank, file, line, msg);
    fflush(stderr);
    if (init && !fin) MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

int pw_comm_agree(MPI_Comm comm, int failed, PwErr *err)
{
    int rank = 0, mine, first = INT_MAX;
    PW_MPI_CHECK(MPI_Comm_rank(comm, &rank));
    mine = failed ? rank : INT_MAX;
    PW_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
    if (first == INT_MAX) return 0;
    PW_MPI_CHECK(MPI_Bcast(err->msg, (int)sizeof err->msg, MPI_CHAR, first, comm));
    return -1;
}

#ifdef PW_HAVE_CUDA
/* A failed CUDA check, in the kernels or anywhere above, must end the whole job like a failed
 * MPI call: the kernels cannot call MPI, so the world hands them this path. */
static void cuda_fail(const char *file, int line, const char *msg)
{
    pw_comm_fatal(file, line, "%s", msg);
}
#endif

/* The map must describe exactly this communicator, or routes would name ranks that do not
 * exist; placement files are checked upstream, maps built in code are checked here. */
static int check_map(const PwRoleMap *m, int size, PwErr *err)
{
    if (m->world_size != size)
        return pw_errf(err, "role map is for %d ranks but the job has %d", m->world_size, size);
    for (int r = 0; r < PW_ROLE_COUNT; r++) {
        const PwRoleRanks *rr = &m->role[r];
        if (rr->nranks < 0 || rr->nranks > size)
            return pw_errf(err, "role %s: %d ranks in a job of %d", pw_role_name(r), rr->nranks,
                           size);
        for (int i = 0; i < rr->nranks; i++) {
            if (rr->ranks[i] < 0 || rr->ranks[i] >= size)
                return pw_errf(err, "role %s: rank %d is outside 0..%d", pw_role_name(r),
                               rr->ranks[i], size - 1);
            if (i > 0 && rr->ranks[i] <= rr->ranks[i - 1])
                return pw_errf(err, "role %s: ranks must ascend without repeats (%d after %d)",
                               pw_role_name(r), rr->ranks[i], rr->ranks[i - 1]);
        }
    }
    return 0;
}

/* Spinning keeps shared-memory transfers at full speed while every rank has a core of its own;
 * with more ranks than cores on the node (tests run 8 on 2) a spinning rank steals the core its
 * peer needs, so waits yield almost at once. */
static double spin_time(MPI_Comm comm)
{
    MPI_Comm node;
    int local = 1;
    PW_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    PW_MPI_CHECK(MPI_Comm_size(node, &local));
    PW_MPI_CHECK(MPI_Comm_free(&node));
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return (cores > 0 && local <= cores) ? 20e-3 : 50e-6;
}

int pw_mpi_cuda_aware(void)
{
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    /* Asked at run time: the library loaded may differ from the one compiled against. */
    return MPIX_Query_cuda_support();
#else
    /* The library was not built for device pointers (Debian's Open MPI 4.1): stage via host. */
    return 0;
#endif
}

void pw_world_describe_rank(const PwWorld *w, int rank, char *buf, size_t len)
{
    int n = snprintf(buf, len, "rank %d (", rank);
    int any = 0;
    for (int r = 0; r < PW_ROLE_COUNT && n >= 0 && (size_t)n < len; r++) {
        int idx = pw_role_index(&w->map, (PwRole)r, rank);
        if (idx < 0) continue;
        n += snprintf(buf + n, len - (size_t)n, "%s%s[%d]", any ? "+" : "", pw_role_name(r), idx);
        any = 1;
    }
    if (n >= 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, "%s)", any ? "" : "no role");
}

/* A rank killed by a signal (SIGKILL, the kernel's OOM killer) cannot say anything, and mpirun
 * tears the job down at once, naming only the rank's number. launch/run.sh names PW_RANK_ROLES;
 * rank 0 writes there "N rank N (roles)" per rank, so that the launcher can put the roles
 * beside mpirun's number once the job is gone (docs/runtime.md, A killed rank). Written whole or
 * not at all (pw_file.h): the launcher never reads half a map. Best effort: the map only
 * improves a message, so a file that cannot be written is said once and not fatal. */
static void write_rank_roles(const PwWorld *w)
{
    const char *path = getenv("PW_RANK_ROLES");
    if (w->rank != 0 || !path || !*path) return;
    PwFileOut o;
    PwErr e;
    FILE *f = pw_file_out_open(&o, path, &e);
    int ok = f != NULL;
    for (int r = 0; ok && r < w->size; r++) {
        char who[200];
        pw_world_describe_rank(w, r, who, sizeof who);
        fprintf(f, "%d %s\n", r, who); /* an error stays on the stream: the close says it */
    }
    if (!ok || pw_file_out_close(&o, 0, &e))
        fprintf(stderr, "[ppo_world] rank 0: cannot write the rank -> roles map (%s); a rank "
                "killed by a signal will be named by its number only\n", e.msg);
}

static void describe_init(const void *ctx, char *buf, size_t len)
{
    (void)ctx;
    snprintf(buf, len, "every rank of the job to start the communication world (pw_world_init)");
}

int pw_world_init(PwWorld *w, MPI_Comm parent, const PwRoleMap *map, double timeout_s, PwErr *err)
{
    memset(w, 0, sizeof *w);
#ifdef PW_HAVE_CUDA
    pw_cuda_set_fail_handler(cuda_fail);
#endif
    w->comm = MPI_COMM_NULL; /* not a zero bit pattern in every MPI */
    for (int r = 0; r < PW_ROLE_COUNT; r++) w->role_comm[r] = MPI_COMM_NULL;
    PW_MPI_CHECK(MPI_Comm_rank(parent, &w->rank));
    PW_MPI_CHECK(MPI_Comm_size(parent, &w->size));
    if (check_map(map, w->size, err)) return -1;
    if (!(timeout_s > 0)) return pw_errf(err, "watchdog timeout must be > 0 s, got %g", timeout_s);
    w->timeout_s = timeout_s;

    w->map.world_size = map->world_size;
    for (int r = 0; r < PW_ROLE_COUNT; r++) {
        const PwRoleRanks *src = &map->role[r];
        PwRoleRanks *dst = &w->map.role[r];
        dst->nranks = src->nranks;
        dst->device = src->device;
        dst->ranks = malloc((size_t)(src->nranks > 0 ? src->nranks : 1) * sizeof(int));
        if (!dst->ranks) pw_comm_fatal(__FILE__, __LINE__, "out of memory for the role map");
        if (src->nranks > 0) memcpy(dst->ranks, src->ranks, (size_t)src->nranks * sizeof(int));
        w->role_rank[r] = pw_role_index(&w->map, (PwRole)r, w->rank);
    }

    pw_world_describe_rank(w, w->rank, w->who, sizeof w->who);

    /* The splits below block; meeting first under the watchdog means a rank that never
     * arrives aborts the job with a message instead of leaving the others in MPI_Comm_split. */
    MPI_Request arrive;
    PW_MPI_CHECK(MPI_Ibarrier(parent, &arrive));
    pw_watchdog_wait(w, 1, &arrive, describe_init, NULL);

    /* A private duplicate keeps our tags apart from anything else on the parent, and errors
     * return to the check macros (which abort with a message) instead of the default handler. */
    PW_MPI_CHECK(MPI_Comm_dup(parent, &w->comm));
    PW_MPI_CHECK(MPI_Comm_set_errhandler(w->comm, MPI_ERRORS_RETURN));
    for (int r = 0; r < PW_ROLE_COUNT; r++) {
        /* Every rank joins every split (collective), those outside the role with MPI_UNDEFINED;
         * the key keeps role-rank order equal to world-rank order, as the map promises. */
        int color = w->role_rank[r] >= 0 ? r : MPI_UNDEFINED;
        PW_MPI_CHECK(MPI_Comm_split(w->comm, color, w->rank, &w->role_comm[r]));
        if (w->role_comm[r] != MPI_COMM_NULL) {
            PW_MPI_CHECK(MPI_Comm_set_errhandler(w->role_comm[r], MPI_ERRORS_RETURN));
            int rr = -1;
            PW_MPI_CHECK(MPI_Comm_rank(w->role_comm[r], &rr));
            if (rr != w->role_rank[r])
                pw_comm_fatal(__FILE__, __LINE__, "role %s: communicator rank %d != map index %d",
                              pw_role_name(r), rr, w->role_rank[r]);
        }
    }
    w->mpi_cuda_aware = pw_mpi_cuda_aware();
    w->spin_s = spin_time(w->comm);
    write_rank_roles(w);

    return 0;
}

/* Defined with the code that made them: the same-rank mailbox and pinned buffers (message.c),
 * NCCL communicators (collective.c). */
void pw_message_release(PwWorld *w);
void pw_collective_release(PwWorld *w);

void pw_world_free(PwWorld *w)
{
    pw_heartbeat_stop(w); /* first: its thread uses the world's names until it has stopped */
    pw_trace_free(w);     /* a trace never closed (an error path) is dropped, not written */
    pw_message_release(w);
    pw_collective_release(w);
    for (int r = 0; r < PW_ROLE_COUNT; r++) {
        if (w->role_comm[r] != MPI_COMM_NULL) PW_MPI_CHECK(MPI_Comm_free(&w->role_comm[r]));
        free(w->map.role[r].ranks);
        w->map.role[r].ranks = NULL;
    }
    if (w->comm != MPI_COMM_NULL) PW_MPI_CHECK(MPI_Comm_free(&w->comm));
}
