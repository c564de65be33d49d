/* grad_sync.c: a model's gradients summed over a role's ranks in buckets posted while the
 * backward goes on (pw_collective.h). MPI: one non-blocking all-reduce per range, in place, and
 * an MPI_Testall at every report so that the library moves the posted ones along (Open MPI
 * progresses non-blocking collectives only inside MPI calls). NCCL: the bucket's all-reduces as
 * one group on the role's NCCL stream, after an event recorded on the model's stream. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "collective_internal.h"
#include "pw_model.h"
#include "pw_trace.h"

struct PwGradSync {
    PwWorld *w;
    PwRole role;
    PwTensor g;
    size_t bucket_bytes;
    int early;       /* post buckets during the backward (else everything at end) */
    int nccl;        /* over the role's NCCL communicator */
    double t0;       /* the first post (0: none yet), when tracing */
    void *stream;    /* the model's stream of the reports: every post waits for it */
    /* ranges reported and not yet posted, and every range posted */
    PwGradRange *pend, *posted;
    int npend, cap_pend, nposted, cap_posted;
    size_t pend_bytes;
    int buckets_early;
    MPI_Request *req;
    int nreq, cap_req;
};

static void *grow(void *p, int *cap, int need, size_t size)
{
    if (need <= *cap) return p;
    int c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(p, (size_t)c * size);
    if (!q) pw_comm_fatal(__FILE__, __LINE__, "out of memory for the gradient buckets");
    *cap = c;
    return q;
}

PwGradSync *pw_grad_sync_begin(PwWorld *w, PwRole r, const PwTensor *grads, size_t bucket_bytes,
                               PwErr *err)
{
    if (pw_coll_check_role(w, r, err)) return NULL;
    if (grads->dtype != PW_DTYPE_F32) {
        pw_errf(err, "%s: gradient buckets of %s (float32 only)", w->who,
                pw_dtype_name(grads->dtype));
        return NULL;
    }
    PwGradSync *s = calloc(1, sizeof *s);
    if (!s) {
        pw_errf(err, "out of memory for the gradient buckets");
        return NULL;
    }
    s->w = w;
    s->role = r;
    s->g = *grads;
    s->bucket_bytes = bucket_bytes;
#ifdef PW_HAVE_NCCL
    s->nccl = pw_coll_use_nccl(w, r, grads);
#endif
    /* host memory over MPI, or NCCL; GPU memory over MPI is staged through the host, where
     * posting early would wait for the model's stream at every report */
    s->early = bucket_bytes > 0 && w->map.role[r].nranks > 1 &&
               (s->nccl || grads->device == PW_DEVICE_CPU);
    return s;
}

static void post_mpi(PwGradSync *s, const PwGradRange *r)
{
    float *base = s->g.data;
    for (size_t off = 0; off < r->count; off += INT_MAX) {
        size_t n = r->count - off < (size_t)INT_MAX ? r->count - off : (size_t)INT_MAX;
        s->req = grow(s->req, &s->cap_req, s->nreq + 1, sizeof *s->req);
        PW_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, base + r->off + off, (int)n, MPI_FLOAT, MPI_SUM,
                                    s->w->role_comm[s->role], &s->req[s->nreq]));
        s->nreq++;
    }
}

/* Posts ranges r[0..n) as one bucket, after the work queued on `stream` (NCCL). */
static void post(PwGradSync *s, const PwGradRange *r, int n, void *stream)
{
    if (!n) return;
    if (s->w->trace && !s->t0) s->t0 = pw_now(); /* the trace's span: first post to the end */
    s->posted = grow(s->posted, &s->cap_posted, s->nposted + n, sizeof *s->posted);
    memcpy(s->posted + s->nposted, r, (size_t)n * sizeof *r);
    s->nposted += n;
#ifdef PW_HAVE_NCCL
    if (s->nccl) {
        ncclComm_t comm = (ncclComm_t)pw_coll_nccl_comm(s->w, s->role);
        cudaStream_t ns = (cudaStream_t)s->w->nccl_stream[s->role];
        if (stream) { /* the bucket's sum waits for the backward's work that wrote it */
            cudaEvent_t ev;
            PW_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
            PW_CUDA_CHECK(cudaEventRecord(ev, (cudaStream_t)stream));
            PW_CUDA_CHECK(cudaStreamWaitEvent(ns, ev, 0));
            PW_CUDA_CHECK(cudaEventDestroy(ev)); /* released once it has completed */
        }
        float *base = s->g.data;
        PW_NCCL_CHECK(ncclGroupStart());
        for (int i = 0; i < n; i++)
            PW_NCCL_CHECK(ncclAllReduce(base + r[i].off, base + r[i].off, r[i].count, ncclFloat32,
                                        ncclSum, comm, ns));
        PW_NCCL_CHECK(ncclGroupEnd());
        return;
    }
#endif
    (void)stream;
    for (int i = 0; i < n; i++) post_mpi(s, &r[i]);
}

void pw_grad_sync_ready(void *ctx, const PwGradRange *r, int n, void *stream)
{
    PwGradSync *s = ctx;
    if (!s->early) return; /* end sums the whole tensor at once */
    s->stream = stream;
    s->pend = grow(s->pend, &s->cap_pend, s->npend + n, sizeof *s->pend);
    for (int i = 0; i < n; i++) {
        if (!r[i].count) continue; /* a head the model lacks */
        s->pend[s->npend++] = r[i];
        s->pend_bytes += r[i].count * sizeof(float);
    }
    if (s->pend_bytes >= s->bucket_bytes) {
        post(s, s->pend, s->npend, s->stream);
        s->buckets_early++;
        s->npend = 0;
        s->pend_bytes = 0;
    }
    if (s->nreq) { /* progress: the posted sums advance while the backward goes on */
        int flag;
        PW_MPI_CHECK(MPI_Testall(s->nreq, s->req, &flag, MPI_STATUSES_IGNORE));
    }
}

static int by_offset(const void *a, const void *b)
{
    const PwGradRange *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static void grad_sync_free(PwGradSync *s)
{
    free(s->pend);
    free(s->posted);
    free(s->req);
    free(s);
}

int pw_grad_sync_end(PwGradSync *s, int *early, PwErr *err)
{
    if (early) *early = s ? s->buckets_early : 0;
    if (!s) return 0;
    PwWorld *w = s->w;
    PwRole r = s->role;
    uint64_t bytes = pw_tensor_bytes(&s->g);
    if (!s->early) { /* one all-reduce of the whole tensor, as without buckets */
        int rc = w->map.role[r].nranks > 1 ? pw_allreduce(w, r, &s->g, PW_REDUCE_SUM, err) : 0;
        grad_sync_free(s);
        return rc;
    }
    /* the last bucket, then every float no report named (a family that reports less is only
     * slower), found between the posted ranges in order; both after the backward's work on the
     * model's stream, which may still be writing them */
    post(s, s->pend, s->npend, s->stream);
    size_t n = (size_t)pw_tensor_numel(&s->g), at = 0;
    int overlap = 0, np = s->nposted;
    PwGradRange *sorted = malloc((size_t)(np ? np : 1) * sizeof *sorted);
    if (!sorted) pw_comm_fatal(__FILE__, __LINE__, "out of memory for the gradient buckets");
    if (np) memcpy(sorted, s->posted, (size_t)np * sizeof *sorted);
    qsort(sorted, (size_t)np, sizeof *sorted, by_offset);
    size_t bad = 0;
    for (int i = 0; i <= np; i++) {
        size_t next = i < np ? sorted[i].off : n;
        if (next > at) {
            PwGradRange gap = {at, next - at};
            post(s, &gap, 1, s->stream);
        } else if (next < at && !overlap) {
            overlap = 1;
            bad = next;
        }
        if (i < np && sorted[i].off + sorted[i].count > at) at = sorted[i].off + sorted[i].count;
    }
    free(sorted);
    PwCollCtx ctx = {w, r, "all-reduce (gradient buckets)", &s->g, "MPI"};
#ifdef PW_HAVE_NCCL
    if (s->nccl) {
        ctx.backend = "NCCL";
        pw_coll_nccl_wait(w, r, &ctx);
    }
#endif
    if (s->nreq) pw_watchdog_wait(w, s->nreq, s->req, pw_coll_describe, &ctx);
    pw_coll_account(w, r, "allreduce", bytes, s->t0 ? s->t0 : pw_now());
    grad_sync_free(s);
    if (overlap)
        return pw_errf(err, "%s: the gradient float %zu was reported ready twice in one backward",
                       w->who, bad);
    return 0;
}
