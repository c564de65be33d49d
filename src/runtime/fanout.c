/* fanout.c: one rank's tensor to every rank of a role as one broadcast (pw_fanout.h). The
 * header and the payload each go as a non-blocking MPI_Ibcast over a communicator of the
 * sender and the receivers on other ranks, so the sender hands the buffer over once, whatever
 * the number of receivers, and MPI spreads it (a tree or a pipeline, its choice), where a
 * message per receiver made the sender push it once per receiver. Collectives on one
 * communicator match by order: the sender and every receiver post the same transfers in the
 * same order, as the step's schedule does. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "message_internal.h"
#include "pw_fanout.h"
#include "pw_trace.h"

int pw_fanout_init(PwWorld *w, PwRole src, int src_idx, PwRole dst, PwFanout *f, PwErr *err)
{
    memset(f, 0, sizeof *f);
    f->comm = MPI_COMM_NULL;
    if (src < 0 || src >= PW_ROLE_COUNT || dst < 0 || dst >= PW_ROLE_COUNT)
        return pw_errf(err, "%s: broadcast between roles %d and %d: out of range", w->who, src,
                       dst);
    const PwRoleRanks *s = &w->map.role[src], *d = &w->map.role[dst];
    if (src_idx < 0 || src_idx >= s->nranks || d->nranks <= 0)
        return pw_errf(err, "%s: broadcast from %s[%d] to %s: role %s has %d ranks, %s %d",
                       w->who, pw_role_name(src), src_idx, pw_role_name(dst), pw_role_name(src),
                       s->nranks, pw_role_name(dst), d->nranks);
    f->src = src;
    f->dst = dst;
    f->src_idx = src_idx;
    f->root = s->ranks[src_idx];
    int member = w->rank == f->root;
    for (int i = 0; i < d->nranks; i++) {
        if (d->ranks[i] == f->root) {
            f->local = 1;
        } else {
            f->nremote++;
            if (d->ranks[i] == w->rank) member = 1;
        }
    }
    /* Every rank computed the same nremote from the same map: all split, or none. */
    if (f->nremote)
        PW_MPI_CHECK(MPI_Comm_split(w->comm, member ? 0 : MPI_UNDEFINED,
                                    w->rank == f->root ? -1 : w->rank, &f->comm));
    return 0;
}

void pw_fanout_free(PwFanout *f)
{
    if (f->comm != MPI_COMM_NULL) PW_MPI_CHECK(MPI_Comm_free(&f->comm));
    f->comm = MPI_COMM_NULL;
}

void pw_fanout_bind(PwFanout *f, const PwTensor *t) { f->bound = *t; }

/* Header, then the payload (in 1 MiB blocks plus a tail past INT_MAX bytes), all rooted at the
 * sender, rank 0 of the communicator. */
static void post(PwFanout *f, PwMsgReq *q, void *buf, size_t n)
{
    PW_MPI_CHECK(MPI_Ibcast(&q->hdr, (int)sizeof q->hdr, MPI_BYTE, 0, f->comm, &q->req[0]));
    if (n <= (size_t)INT_MAX) {
        PW_MPI_CHECK(MPI_Ibcast(buf, (int)n, MPI_BYTE, 0, f->comm, &q->req[1]));
        return;
    }
    size_t blocks = n / PW_MSG_BIG_BLOCK, tail = n % PW_MSG_BIG_BLOCK;
    PW_MPI_CHECK(MPI_Ibcast(buf, (int)blocks, pw_msg_big_block_type(), 0, f->comm, &q->req[1]));
    PW_MPI_CHECK(MPI_Ibcast((char *)buf + blocks * PW_MSG_BIG_BLOCK, (int)tail, MPI_BYTE, 0,
                            f->comm, &q->req[2]));
}

static int check_tensor(const PwWorld *w, const PwTensor *t, PwErr *err)
{
    if (t->dtype < 0 || t->dtype >= PW_DTYPE_COUNT || t->ndim < 0 || t->ndim > PW_MAX_DIMS)
        return pw_errf(err, "%s: tensor with dtype %d and %d dims is not valid", w->who,
                       (int)t->dtype, t->ndim);
    return 0;
}

static void start(PwMsgReq *req, const PwTensor *t, int peer)
{
    memset(req, 0, sizeof *req);
    req->req[0] = req->req[1] = req->req[2] = MPI_REQUEST_NULL;
    req->tensor = *t;
    req->peer = peer;
    req->collective = 1;
}

int pw_fanout_isend(PwWorld *w, PwFanout *f, PwMsgKind kind, int64_t step, const PwTensor *t,
                    PwMsgReq *req, PwErr *err)
{
    double t0 = w->trace ? pw_now() : 0.0;
    start(req, t, f->root);
    if (w->rank != f->root || w->role_rank[f->src] != f->src_idx)
        return pw_errf(err, "%s is not %s[%d], the sender of this broadcast", w->who,
                       pw_role_name(f->src), f->src_idx);
    if (check_tensor(w, t, err)) return -1;
    size_t n = pw_tensor_bytes(t);
    if (f->local) { /* the receiver on this rank: written now, or a mailbox copy */
        int idx = w->role_rank[f->dst];
        PwMsgHeader h;
        pw_msg_fill_header(&h, kind, step, f->src, f->src_idx, f->dst, idx, t);
        int tag = pw_msg_tag(kind, f->src, f->dst, 0), dev = t->device == PW_DEVICE_CUDA;
        if (f->bound.data) {
            if (pw_tensor_bytes(&f->bound) != n)
                return pw_errf(err, "%s: broadcast of %zu bytes, but the bound receiver %s[%d] "
                               "holds %zu", w->who, n, pw_role_name(f->dst), idx,
                               pw_tensor_bytes(&f->bound));
            if (f->bound.data != t->data) /* else the sender wrote it in place */
                pw_msg_copy_bytes(f->bound.data, t->data, n,
                                  dev || f->bound.device == PW_DEVICE_CUDA);
            pw_msg_mailbox_push(w, tag, &h, NULL, f->bound.data);
        } else {
            pw_msg_mailbox_copy(w, tag, &h, t);
        }
        if (w->trace) pw_trace_message(w, &h, 0, w->rank, t0, pw_now());
    }
    if (!f->nremote) return 0;
    pw_msg_fill_header(&req->hdr, kind, step, f->src, f->src_idx, f->dst, -1, t);
    req->active = 1;
    void *buf = pw_msg_stage(w, req);
    if (buf != t->data) pw_msg_copy_bytes(buf, t->data, n, 1);
    post(f, req, buf, n);
    /* comm/bytes_sent and the trace count what each receiver gets from this rank, as for
     * messages; how MPI spreads the bytes is its own. */
    const PwRoleRanks *d = &w->map.role[f->dst];
    for (int i = 0; i < d->nranks; i++) {
        if (d->ranks[i] == f->root) continue;
        if (kind != PW_MSG_REPORT) w->bytes_sent += n;
        if (w->trace) pw_trace_message(w, &req->hdr, 0, d->ranks[i], t0, pw_now());
    }
    return 0;
}

int pw_fanout_irecv(PwWorld *w, PwFanout *f, PwMsgKind kind, int64_t step, PwTensor *t,
                    PwMsgReq *req, PwErr *err)
{
    int me = w->role_rank[f->dst];
    if (me < 0)
        return pw_errf(err, "%s does not hold role %s, a receiver of this broadcast", w->who,
                       pw_role_name(f->dst));
    if (w->rank == f->root) /* the mailbox, like a message between roles of one rank */
        return pw_msg_irecv(w, f->dst, f->src, f->src_idx, kind, step, t, req, err);
    start(req, t, f->root);
    if (check_tensor(w, t, err)) return -1;
    req->is_recv = 1;
    pw_msg_fill_header(&req->want, kind, step, f->src, f->src_idx, f->dst, -1, t);
    req->active = 1;
    post(f, req, pw_msg_stage(w, req), req->want.nbytes);
    return 0;
}
