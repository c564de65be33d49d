/* collective.c: all-reduce, broadcast, barrier and the gathers of blocks among the ranks of one
 * role. NCCL for GPU tensors of GPU roles (when built), non-blocking MPI otherwise; both waits go
 * to the watchdog. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective_internal.h"
#include "pw_trace.h"

void pw_coll_describe(const void *vctx, char *buf, size_t len)
{
    const PwCollCtx *c = vctx;
    const PwRoleRanks *rr = &c->w->map.role[c->role];
    int n = snprintf(buf, len, "%s %s of role %s over world ranks [", c->backend, c->op,
                     pw_role_name(c->role));
    for (int i = 0; i < rr->nranks && n > 0 && (size_t)n < len; i++)
        n += snprintf(buf + n, len - (size_t)n, "%s%d", i ? "," : "", rr->ranks[i]);
    if (n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "]");
    if (c->t && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " (%s, %lld elements); one of them has not joined",
                 pw_dtype_name(c->t->dtype), (long long)pw_tensor_numel(c->t));
    else if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "; one of them has not joined");
}

int pw_coll_check_role(const PwWorld *w, PwRole r, PwErr *err)
{
    if (r < 0 || r >= PW_ROLE_COUNT) return pw_errf(err, "%s: role %d out of range", w->who, r);
    if (w->role_rank[r] < 0)
        return pw_errf(err, "%s does not hold role %s for a collective", w->who, pw_role_name(r));
    return 0;
}

/* Always MPI and compiled in every build, so that the way a NCCL id travels (across nodes too)
 * runs in tests without a GPU. */
int pw_collective_share_id(PwWorld *w, PwRole r, void *id, size_t n, PwErr *err)
{
    if (pw_coll_check_role(w, r, err)) return -1;
    if (n > INT_MAX) return pw_errf(err, "%s: an id of %zu bytes is too long", w->who, n);
    MPI_Request req;
    PW_MPI_CHECK(MPI_Ibcast(id, (int)n, MPI_BYTE, 0, w->role_comm[r], &req));
    PwCollCtx ctx = {w, r, "exchange of the NCCL id", NULL, "MPI"};
    pw_watchdog_wait(w, 1, &req, pw_coll_describe, &ctx);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * NCCL path: compiled whenever NCCL is found; runs only for GPU tensors of GPU roles. */

#ifdef PW_HAVE_NCCL
int pw_coll_use_nccl(const PwWorld *w, PwRole r, const PwTensor *t)
{
    return pw_collective_nccl_for(w->map.role[r].device) && (!t || t->device == PW_DEVICE_CUDA);
}

/* Made on the first collective of the role, when every rank of the role is there anyway:
 * rank 0 of the role makes the id, the role's MPI communicator carries it to the others. */
void *pw_coll_nccl_comm(PwWorld *w, PwRole r)
{
    if (w->nccl[r]) return w->nccl[r];
    ncclUniqueId id;
    if (w->role_rank[r] == 0) PW_NCCL_CHECK(ncclGetUniqueId(&id));
    PwErr err;
    if (pw_collective_share_id(w, r, &id, sizeof id, &err)) /* callers checked the role */
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    ncclComm_t comm;
    PW_NCCL_CHECK(ncclCommInitRank(&comm, w->map.role[r].nranks, id, w->role_rank[r]));
    cudaStream_t s;
    PW_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    w->nccl[r] = comm;
    w->nccl_stream[r] = s;
    return comm;
}

typedef struct StreamWait {
    cudaStream_t s;
    ncclComm_t comm;
} StreamWait;

static int stream_ready(void *vctx)
{
    StreamWait *sw = vctx;
    ncclResult_t async = ncclSuccess;
    PW_NCCL_CHECK(ncclCommGetAsyncError(sw->comm, &async));
    PW_NCCL_CHECK(async);
    cudaError_t e = cudaStreamQuery(sw->s);
    if (e == cudaErrorNotReady) return 0;
    PW_CUDA_CHECK(e);
    return 1;
}

static int nccl_dtype(PwDtype t, ncclDataType_t *out)
{
    switch (t) {
    case PW_DTYPE_F32: *out = ncclFloat32; return 0;
    case PW_DTYPE_F64: *out = ncclFloat64; return 0;
    case PW_DTYPE_BF16: *out = ncclBfloat16; return 0;
    case PW_DTYPE_F16: *out = ncclFloat16; return 0;
    case PW_DTYPE_I32: *out = ncclInt32; return 0;
    case PW_DTYPE_I64: *out = ncclInt64; return 0;
    case PW_DTYPE_U8: *out = ncclUint8; return 0;
    default: return -1;
    }
}

void pw_coll_nccl_wait(PwWorld *w, PwRole r, PwCollCtx *ctx)
{
    StreamWait sw = {(cudaStream_t)w->nccl_stream[r], (ncclComm_t)w->nccl[r]};
    pw_watchdog_poll(w, stream_ready, &sw, pw_coll_describe, ctx);
}
#endif

void pw_collective_release(PwWorld *w)
{
    for (int r = 0; r < PW_ROLE_COUNT; r++) {
#ifdef PW_HAVE_NCCL
        if (w->nccl[r]) PW_NCCL_CHECK(ncclCommDestroy((ncclComm_t)w->nccl[r]));
        if (w->nccl_stream[r]) PW_CUDA_CHECK(cudaStreamDestroy((cudaStream_t)w->nccl_stream[r]));
#endif
        w->nccl[r] = NULL;
        w->nccl_stream[r] = NULL;
    }
}

int pw_collective_nccl_for(PwDevice role_device)
{
#ifdef PW_HAVE_NCCL
    return role_device == PW_DEVICE_CUDA;
#else
    (void)role_device;
    return 0;
#endif
}

const char *pw_collective_backend(const PwWorld *w, PwRole r)
{
    return r >= 0 && r < PW_ROLE_COUNT && pw_collective_nccl_for(w->map.role[r].device) ? "nccl"
                                                                                         : "mpi";
}

/* ---------------------------------------------------------------------------------------------
 * MPI path. GPU tensors (a GPU role built without NCCL) are copied through host memory. */

static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

static void *host_view(PwWorld *w, const PwTensor *t, size_t bytes)
{
#ifdef PW_HAVE_CUDA
    if (t->device == PW_DEVICE_CUDA && !w->mpi_cuda_aware) {
        void *h = malloc(bytes ? bytes : 1);
        if (!h) pw_comm_fatal(__FILE__, __LINE__, "out of memory staging a collective");
        if (bytes) PW_CUDA_CHECK(cudaMemcpy(h, t->data, bytes, cudaMemcpyDeviceToHost));
        return h;
    }
#endif
    (void)w;
    (void)bytes;
    return t->data;
}

static void host_view_done(const PwTensor *t, void *h, size_t bytes, int copy_back)
{
    if (h == t->data) return;
#ifdef PW_HAVE_CUDA
    if (copy_back && bytes) PW_CUDA_CHECK(cudaMemcpy(t->data, h, bytes, cudaMemcpyHostToDevice));
#endif
    (void)bytes;
    (void)copy_back;
    free(h);
}

/* MPI counts are ints: large buffers go in pieces, each a non-blocking collective. */
static void mpi_allreduce(PwWorld *w, PwRole r, void *buf, int64_t count, MPI_Datatype dt,
                          size_t esize, PwCollCtx *ctx)
{
    for (int64_t off = 0; off < count; off += INT_MAX) {
        int64_t n = count - off < INT_MAX ? count - off : INT_MAX;
        MPI_Request req;
        PW_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, (char *)buf + (size_t)off * esize, (int)n, dt,
                                    MPI_SUM, w->role_comm[r], &req));
        pw_watchdog_wait(w, 1, &req, pw_coll_describe, ctx);
    }
}

static int allreduce(PwWorld *w, PwRole r, PwTensor *t, PwReduceOp op, PwErr *err)
{
    if (pw_coll_check_role(w, r, err)) return -1;
    int floating = t->dtype == PW_DTYPE_F32 || t->dtype == PW_DTYPE_F64 ||
                   t->dtype == PW_DTYPE_BF16 || t->dtype == PW_DTYPE_F16;
    if (op == PW_REDUCE_MEAN && !floating)
        return pw_errf(err, "%s: all-reduce mean of %s is not defined (floating dtypes only)",
                       w->who, pw_dtype_name(t->dtype));
    int64_t count = pw_tensor_numel(t);
    int nranks = w->map.role[r].nranks;
    PwCollCtx ctx = {w, r, op == PW_REDUCE_MEAN ? "all-reduce (mean)" : "all-reduce (sum)", t, ""};

#ifdef PW_HAVE_NCCL
    if (pw_coll_use_nccl(w, r, t)) {
        ncclDataType_t dt;
        if (nccl_dtype(t->dtype, &dt))
            return pw_errf(err, "%s: NCCL all-reduce of %s", w->who, pw_dtype_name(t->dtype));
        ncclComm_t comm = (ncclComm_t)pw_coll_nccl_comm(w, r);
        ctx.backend = "NCCL";
        PW_NCCL_CHECK(ncclAllReduce(t->data, t->data, (size_t)count, dt,
                                    op == PW_REDUCE_MEAN ? ncclAvg : ncclSum, comm,
                                    (cudaStream_t)w->nccl_stream[r]));
        pw_coll_nccl_wait(w, r, &ctx);
        return 0;
    }
#endif
    ctx.backend = "MPI";
    MPI_Datatype dt;
    switch (t->dtype) {
    case PW_DTYPE_F32: dt = MPI_FLOAT; break;
    case PW_DTYPE_F64: dt = MPI_DOUBLE; break;
    case PW_DTYPE_I32: dt = MPI_INT32_T; break;
    case PW_DTYPE_I64: dt = MPI_INT64_T; break;
    case PW_DTYPE_BF16: dt = MPI_FLOAT; break; /* MPI has no bf16: summed in f32 */
    default:
        return pw_errf(err, "%s: MPI all-reduce of %s is not supported (f32, f64, bf16, i32, "
                       "i64)", w->who, pw_dtype_name(t->dtype));
    }
    size_t bytes = pw_tensor_bytes(t);
    void *h = host_view(w, t, bytes);
    if (t->dtype == PW_DTYPE_BF16) {
        float *f = malloc((size_t)(count ? count : 1) * sizeof *f);
        if (!f) pw_comm_fatal(__FILE__, __LINE__, "out of memory for a bf16 all-reduce");
        uint16_t *b = h;
        for (int64_t i = 0; i < count; i++) f[i] = bf16_to_f32(b[i]);
        mpi_allreduce(w, r, f, count, MPI_FLOAT, sizeof *f, &ctx);
        float scale = op == PW_REDUCE_MEAN ? 1.0f / (float)nranks : 1.0f;
        for (int64_t i = 0; i < count; i++) b[i] = f32_to_bf16(f[i] * scale);
        free(f);
    } else {
        mpi_allreduce(w, r, h, count, dt, pw_dtype_size(t->dtype), &ctx);
        if (op == PW_REDUCE_MEAN && t->dtype == PW_DTYPE_F32) {
            float *f = h, s = 1.0f / (float)nranks;
            for (int64_t i = 0; i < count; i++) f[i] *= s;
        } else if (op == PW_REDUCE_MEAN) { /* f64; f16 was refused above */
            double *d = h, s = 1.0 / (double)nranks;
            for (int64_t i = 0; i < count; i++) d[i] *= s;
        }
    }
    host_view_done(t, h, bytes, 1);
    return 0;
}

static int broadcast(PwWorld *w, PwRole r, PwTensor *t, int root, PwErr *err)
{
    if (pw_coll_check_role(w, r, err)) return -1;
    int nranks = w->map.role[r].nranks;
    if (root < 0 || root >= nranks)
        return pw_errf(err, "%s: broadcast root %d is not a rank of role %s (%d ranks)", w->who,
                       root, pw_role_name(r), nranks);
    size_t bytes = pw_tensor_bytes(t);
    PwCollCtx ctx = {w, r, "broadcast", t, "MPI"};
#ifdef PW_HAVE_NCCL
    if (pw_coll_use_nccl(w, r, t)) {
        ncclComm_t comm = (ncclComm_t)pw_coll_nccl_comm(w, r);
        ctx.backend = "NCCL";
        PW_NCCL_CHECK(ncclBroadcast(t->data, t->data, bytes, ncclUint8, root, comm,
                                    (cudaStream_t)w->nccl_stream[r]));
        pw_coll_nccl_wait(w, r, &ctx);
        return 0;
    }
#endif
    void *h = host_view(w, t, bytes);
    for (size_t off = 0; off < bytes || (off == 0 && bytes == 0); off += INT_MAX) {
        size_t n = bytes - off < (size_t)INT_MAX ? bytes - off : (size_t)INT_MAX;
        MPI_Request req;
        PW_MPI_CHECK(MPI_Ibcast((char *)h + off, (int)n, MPI_BYTE, root, w->role_comm[r], &req));
        pw_watchdog_wait(w, 1, &req, pw_coll_describe, &ctx);
        if (bytes == 0) break;
    }
    host_view_done(t, h, bytes, w->role_rank[r] != root);
    return 0;
}

static int barrier(PwWorld *w, PwRole r, PwErr *err)
{
    if (pw_coll_check_role(w, r, err)) return -1;
    PwCollCtx ctx = {w, r, "barrier", NULL, "MPI"};
#ifdef PW_HAVE_NCCL
    /* NCCL has no barrier: drain the role's stream, then meet on MPI, so that work queued
     * before the barrier is finished on every rank once it returns. */
    if (w->nccl[r]) pw_coll_nccl_wait(w, r, &ctx);
#endif
    MPI_Request req;
    PW_MPI_CHECK(MPI_Ibarrier(w->role_comm[r], &req));
    pw_watchdog_wait(w, 1, &req, pw_coll_describe, &ctx);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Blocks: a tensor split over the role's ranks. */

static int check_blocks(const PwWorld *w, PwRole r, const int64_t *starts, int64_t numel,
                        PwErr *err)
{
    if (pw_coll_check_role(w, r, err)) return -1;
    int n = w->map.role[r].nranks;
    for (int k = 0; k < n; k++)
        if (starts[k] < 0 || starts[k + 1] < starts[k])
            return pw_errf(err, "%s: blocks of role %s: block %d is [%lld, %lld), not a range",
                           w->who, pw_role_name(r), k, (long long)starts[k],
                           (long long)starts[k + 1]);
    if (starts[n] > numel)
        return pw_errf(err, "%s: blocks of role %s end at element %lld of a tensor of %lld",
                       w->who, pw_role_name(r), (long long)starts[n], (long long)numel);
    return 0;
}

/* MPI counts and displacements are ints: an element type of the dtype's size counts elements,
 * not bytes, and larger blocks go in pieces of at most pw_coll_piece_max elements. */
int64_t pw_coll_piece_max = INT_MAX;

static MPI_Datatype element_type(size_t esize)
{
    MPI_Datatype et;
    PW_MPI_CHECK(MPI_Type_contiguous((int)esize, MPI_BYTE, &et));
    PW_MPI_CHECK(MPI_Type_commit(&et));
    return et;
}

#ifdef PW_HAVE_NCCL
/* NCCL's all-gather and reduce-scatter want equal blocks: one operation per block instead, from
 * its owner (reduce 0: a broadcast) or into it (reduce 1: a sum, float32), grouped so that they
 * run as one, and waited for. */
static void nccl_blocks(PwWorld *w, PwRole r, PwTensor *t, const int64_t *starts, int reduce,
                        PwCollCtx *ctx)
{
    ncclComm_t comm = (ncclComm_t)pw_coll_nccl_comm(w, r);
    cudaStream_t s = (cudaStream_t)w->nccl_stream[r];
    size_t es = pw_dtype_size(t->dtype);
    ctx->backend = "NCCL";
    PW_NCCL_CHECK(ncclGroupStart());
    for (int k = 0; k < w->map.role[r].nranks; k++) {
        char *p = (char *)t->data + (size_t)starts[k] * es;
        size_t count = (size_t)(starts[k + 1] - starts[k]);
        if (!count) continue;
        if (reduce)
            PW_NCCL_CHECK(ncclReduce(p, p, count, ncclFloat32, ncclSum, k, comm, s));
        else
            PW_NCCL_CHECK(ncclBroadcast(p, p, count * es, ncclUint8, k, comm, s));
    }
    PW_NCCL_CHECK(ncclGroupEnd());
    pw_coll_nccl_wait(w, r, ctx);
}
#endif

/* Blocks past what one MPI call counts (pw_coll_piece_max elements): each block from its owner
 * (reduce 0: a broadcast) or summed into it (reduce 1: et a type MPI sums), in pieces, every
 * rank making the same calls in the same order. */
static void mpi_block_pieces(PwWorld *w, PwRole r, char *h, size_t es, MPI_Datatype et,
                             const int64_t *starts, int reduce, PwCollCtx *ctx)
{
    const int64_t pm = pw_coll_piece_max;
    const int n = w->map.role[r].nranks, me = w->role_rank[r];
    MPI_Request req;
    for (int k = 0; k < n; k++)
        for (int64_t off = starts[k]; off < starts[k + 1]; off += pm) {
            int c = (int)(starts[k + 1] - off < pm ? starts[k + 1] - off : pm);
            char *p = h + (size_t)off * es;
            if (reduce)
                PW_MPI_CHECK(MPI_Ireduce(k == me ? MPI_IN_PLACE : p, p, c, et, MPI_SUM, k,
                                         w->role_comm[r], &req));
            else
                PW_MPI_CHECK(MPI_Ibcast(p, c, et, k, w->role_comm[r], &req));
            pw_watchdog_wait(w, 1, &req, pw_coll_describe, ctx);
        }
}

static int allgather_blocks(PwWorld *w, PwRole r, PwTensor *t, const int64_t *starts, PwErr *err)
{
    if (check_blocks(w, r, starts, pw_tensor_numel(t), err)) return -1;
    int n = w->map.role[r].nranks;
    size_t es = pw_dtype_size(t->dtype);
    PwCollCtx ctx = {w, r, "all-gather of blocks", t, "MPI"};
#ifdef PW_HAVE_NCCL
    if (pw_coll_use_nccl(w, r, t)) {
        nccl_blocks(w, r, t, starts, 0, &ctx);
        return 0;
    }
#endif
    size_t bytes = (size_t)starts[n] * es;
    char *h = host_view(w, t, bytes);
    MPI_Datatype et = element_type(es);
    int fits = starts[n] <= pw_coll_piece_max;
    int *counts = malloc((size_t)n * sizeof *counts), *displs = malloc((size_t)n * sizeof *displs);
    if (!counts || !displs) pw_comm_fatal(__FILE__, __LINE__, "out of memory for an all-gather");
    for (int k = 0; k < n; k++) {
        counts[k] = (int)(starts[k + 1] - starts[k]);
        displs[k] = (int)starts[k];
    }
    MPI_Request req;
    if (fits) {
        PW_MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, h, counts, displs, et,
                                     w->role_comm[r], &req));
        pw_watchdog_wait(w, 1, &req, pw_coll_describe, &ctx);
    } else {
        mpi_block_pieces(w, r, h, es, et, starts, 0, &ctx);
    }
    free(counts);
    free(displs);
    PW_MPI_CHECK(MPI_Type_free(&et));
    host_view_done(t, h, bytes, 1);
    return 0;
}

static int reduce_scatter_blocks(PwWorld *w, PwRole r, PwTensor *t, const int64_t *starts,
                                 PwErr *err)
{
    if (check_blocks(w, r, starts, pw_tensor_numel(t), err)) return -1;
    if (t->dtype != PW_DTYPE_F32)
        return pw_errf(err, "%s: a reduce-scatter of %s (float32 only)", w->who,
                       pw_dtype_name(t->dtype));
    int n = w->map.role[r].nranks, me = w->role_rank[r];
    PwCollCtx ctx = {w, r, "reduce-scatter of blocks", t, "MPI"};
#ifdef PW_HAVE_NCCL
    if (pw_coll_use_nccl(w, r, t)) {
        nccl_blocks(w, r, t, starts, 1, &ctx);
        return 0;
    }
#endif
    size_t bytes = (size_t)starts[n] * sizeof(float);
    float *h = host_view(w, t, bytes);
    MPI_Request req;
    if (starts[n] <= pw_coll_piece_max) {
        int *counts = malloc((size_t)n * sizeof *counts);
        if (!counts) pw_comm_fatal(__FILE__, __LINE__, "out of memory for a reduce-scatter");
        for (int k = 0; k < n; k++) counts[k] = (int)(starts[k + 1] - starts[k]);
        /* in place, MPI leaves this rank's sum at the front of the buffer */
        PW_MPI_CHECK(MPI_Ireduce_scatter(MPI_IN_PLACE, h, counts, MPI_FLOAT, MPI_SUM,
                                         w->role_comm[r], &req));
        pw_watchdog_wait(w, 1, &req, pw_coll_describe, &ctx);
        memmove(h + starts[me], h, (size_t)counts[me] * sizeof *h);
        free(counts);
    } else {
        mpi_block_pieces(w, r, (char *)h, sizeof(float), MPI_FLOAT, starts, 1, &ctx);
    }
    host_view_done(t, h, bytes, 1);
    return 0;
}

enum { GATHER_TAG = 31 }; /* the role's communicator carries no other point-to-point message */

static int gather_blocks(PwWorld *w, PwRole r, const void *mine, void *all, PwDtype dtype,
                         const int64_t *starts, int root, PwErr *err)
{
    if (check_blocks(w, r, starts, INT64_MAX, err)) return -1;
    int n = w->map.role[r].nranks, me = w->role_rank[r];
    if (root < 0 || root >= n)
        return pw_errf(err, "%s: gather root %d is not a rank of role %s (%d ranks)", w->who,
                       root, pw_role_name(r), n);
    if (me == root && !all && starts[n] > 0)
        return pw_errf(err, "%s: gather of role %s: the root has no buffer", w->who,
                       pw_role_name(r));
    size_t es = pw_dtype_size(dtype);
    PwCollCtx ctx = {w, r, "gather of blocks", NULL, "MPI"};
    MPI_Datatype et = element_type(es);
    /* pieces of at most pw_coll_piece_max elements: count them first */
    const int64_t pm = pw_coll_piece_max;
    int64_t npieces = 0;
    for (int k = 0; k < n; k++)
        if (me == root ? k != root : k == me) npieces += (starts[k + 1] - starts[k] + pm - 1) / pm;
    MPI_Request *req = malloc((size_t)(npieces ? npieces : 1) * sizeof *req);
    if (!req) pw_comm_fatal(__FILE__, __LINE__, "out of memory for a gather");
    int nreq = 0;
    for (int k = 0; k < n; k++) {
        if (me == root ? k == root : k != me) continue;
        for (int64_t off = starts[k]; off < starts[k + 1]; off += pm) {
            int64_t c = starts[k + 1] - off < pm ? starts[k + 1] - off : pm;
            if (me == root)
                PW_MPI_CHECK(MPI_Irecv((char *)all + (size_t)off * es, (int)c, et, k, GATHER_TAG,
                                       w->role_comm[r], &req[nreq++]));
            else
                PW_MPI_CHECK(MPI_Isend((const char *)mine + (size_t)(off - starts[k]) * es,
                                       (int)c, et, root, GATHER_TAG, w->role_comm[r],
                                       &req[nreq++]));
        }
    }
    size_t own = (size_t)(starts[me + 1] - starts[me]) * es;
    if (me == root && own) memcpy((char *)all + (size_t)starts[me] * es, mine, own);
    pw_watchdog_wait(w, nreq, req, pw_coll_describe, &ctx);
    free(req);
    PW_MPI_CHECK(MPI_Type_free(&et));
    return 0;
}

/* The public forms count the bytes each rank hands in (comm/bytes_collective) and trace the
 * call; the bodies above have several ways out, so the accounting wraps them. */
void pw_coll_account(PwWorld *w, PwRole r, const char *name, uint64_t bytes, double t0)
{
    w->bytes_coll += bytes;
    if (w->trace) pw_trace_collective(w, r, name, bytes, t0, pw_now());
}

int pw_allreduce(PwWorld *w, PwRole r, PwTensor *t, PwReduceOp op, PwErr *err)
{
    double t0 = w->trace ? pw_now() : 0.0;
    int rc = allreduce(w, r, t, op, err);
    if (!rc) pw_coll_account(w, r, "allreduce", pw_tensor_bytes(t), t0);
    return rc;
}

int pw_broadcast(PwWorld *w, PwRole r, PwTensor *t, int root, PwErr *err)
{
    double t0 = w->trace ? pw_now() : 0.0;
    int rc = broadcast(w, r, t, root, err);
    if (!rc) pw_coll_account(w, r, "broadcast", pw_tensor_bytes(t), t0);
    return rc;
}

int pw_barrier(PwWorld *w, PwRole r, PwErr *err)
{
    double t0 = w->trace ? pw_now() : 0.0;
    int rc = barrier(w, r, err);
    if (!rc) pw_coll_account(w, r, "barrier", 0, t0);
    return rc;
}

int pw_allgather_blocks(PwWorld *w, PwRole r, PwTensor *t, const int64_t *starts, PwErr *err)
{
    double t0 = w->trace ? pw_now() : 0.0;
    int rc = allgather_blocks(w, r, t, starts, err);
    if (!rc) {
        int me = w->role_rank[r];
        pw_coll_account(w, r, "allgather", (uint64_t)(starts[me + 1] - starts[me]) *
                        pw_dtype_size(t->dtype), t0);
    }
    return rc;
}

int pw_reduce_scatter_blocks(PwWorld *w, PwRole r, PwTensor *t, const int64_t *starts,
                             PwErr *err)
{
    double t0 = w->trace ? pw_now() : 0.0;
    int rc = reduce_scatter_blocks(w, r, t, starts, err);
    if (!rc) pw_coll_account(w, r, "reduce_scatter", pw_tensor_bytes(t), t0);
    return rc;
}

int pw_gather_blocks(PwWorld *w, PwRole r, const void *mine, void *all, PwDtype dtype,
                     const int64_t *starts, int root, PwErr *err)
{
    double t0 = w->trace ? pw_now() : 0.0;
    int rc = gather_blocks(w, r, mine, all, dtype, starts, root, err);
    if (!rc) {
        int me = w->role_rank[r];
        pw_coll_account(w, r, "gather", (uint64_t)(starts[me + 1] - starts[me]) *
                        pw_dtype_size(dtype), t0);
    }
    return rc;
}
