/* xfer.c: the messages of one phase of the PPO step: rows of the global batch routed from the
 * block of each producer to the blocks of the consumers, posted without blocking, then one wait. */
#include <stdlib.h>
#include <string.h>

#include "pw_collective.h"
#include "pw_trace.h"
#include "roles.h"

const char *const pw_phase_names[PW_PH_COUNT] = {"generate", "evaluate", "advantages",
                                                  "train",    "weights",  "idle"};

static PwMsgReq *next_req(PwXfer *x)
{
    int b = x->n / PW_XFER_BLOCK;
    if (b == x->nblk) { /* only the table of blocks grows; the blocks stay where they are */
        PwMsgReq **t = realloc(x->blk, (size_t)(b + 1) * sizeof *t);
        if (!t) pw_comm_fatal(__FILE__, __LINE__, "out of memory for messages");
        x->blk = t;
        x->blk[b] = pw_roles_alloc(PW_XFER_BLOCK * sizeof **t);
        x->nblk = b + 1;
    }
    return &x->blk[b][x->n++ % PW_XFER_BLOCK];
}

void pw_xfer_send(PwXfer *x, PwWorld *w, PwRole src, PwRole dst, int dst_idx, PwMsgKind kind,
                  int64_t step, const PwTensor *t)
{
    PwErr err;
    if (pw_msg_isend(w, src, dst, dst_idx, kind, step, t, next_req(x), &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
}

void pw_xfer_recv(PwXfer *x, PwWorld *w, PwRole dst, PwRole src, int src_idx, PwMsgKind kind,
                  int64_t step, PwTensor *t)
{
    PwErr err;
    if (pw_msg_irecv(w, dst, src, src_idx, kind, step, t, next_req(x), &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
}

void pw_xfer_fanout_send(PwXfer *x, PwWorld *w, PwFanout *f, PwMsgKind kind, int64_t step,
                         const PwTensor *t)
{
    PwErr err;
    if (pw_fanout_isend(w, f, kind, step, t, next_req(x), &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
}

void pw_xfer_fanout_recv(PwXfer *x, PwWorld *w, PwFanout *f, PwMsgKind kind, int64_t step,
                         PwTensor *t)
{
    PwErr err;
    if (pw_fanout_irecv(w, f, kind, step, t, next_req(x), &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
}

static int group_idx(PwGroup g, int i) { return g.idx ? g.idx[i] : i; }

/* The slice of `local` (this side's block, dimension 0) holding global rows route->row0.. */
static PwTensor slice_rows(const PwTensor *local, PwBlock blk, const PwRoute *route)
{
    PwTensor s = *local;
    size_t row_bytes = blk.count ? pw_tensor_bytes(local) / (size_t)blk.count : 0;
    s.data = (char *)local->data + (size_t)(route->row0 - blk.start) * row_bytes;
    s.shape[0] = route->nrows;
    return s;
}

static PwRoute *routes_of(int64_t N, PwGroup prod, PwGroup cons, int me, int sending, int *nout)
{
    int n = sending ? pw_route_sends(N, prod.n, me, cons.n, NULL, 0)
                    : pw_route_recvs(N, prod.n, cons.n, me, NULL, 0);
    PwRoute *r = pw_roles_alloc((size_t)(n ? n : 1) * sizeof *r);
    if (sending) pw_route_sends(N, prod.n, me, cons.n, r, n);
    else pw_route_recvs(N, prod.n, cons.n, me, r, n);
    *nout = n;
    return r;
}

void pw_xfer_send_rows(PwXfer *x, PwWorld *w, PwGroup prod, int me, PwGroup cons, PwMsgKind kind,
                       int64_t step, int64_t N, const PwTensor *local)
{
    PwBlock blk = pw_block(N, prod.n, me);
    int n;
    PwRoute *r = routes_of(N, prod, cons, me, 1, &n);
    for (int i = 0; i < n; i++) {
        PwTensor s = slice_rows(local, blk, &r[i]);
        pw_xfer_send(x, w, prod.role, cons.role, group_idx(cons, r[i].peer), kind, step, &s);
    }
    free(r);
}

void pw_xfer_recv_rows(PwXfer *x, PwWorld *w, PwGroup prod, PwGroup cons, int me, PwMsgKind kind,
                       int64_t step, int64_t N, PwTensor *local)
{
    PwBlock blk = pw_block(N, cons.n, me);
    int n;
    PwRoute *r = routes_of(N, prod, cons, me, 0, &n);
    for (int i = 0; i < n; i++) {
        PwTensor s = slice_rows(local, blk, &r[i]);
        pw_xfer_recv(x, w, cons.role, prod.role, group_idx(prod, r[i].peer), kind, step, &s);
    }
    free(r);
}

double pw_xfer_wait(PwXfer *x, PwWorld *w)
{
    PwErr err;
    double t0 = pw_now();
    /* Block by block: every rank posted all its sends of the phase before waiting, so waiting
     * for one block's receives before the next cannot deadlock. */
    for (int b = 0; b * PW_XFER_BLOCK < x->n; b++) {
        int n = x->n - b * PW_XFER_BLOCK < PW_XFER_BLOCK ? x->n - b * PW_XFER_BLOCK : PW_XFER_BLOCK;
        if (pw_msg_waitall(w, n, x->blk[b], &err)) pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    }
    double t1 = pw_now();
    if (w->trace && x->n) pw_trace_span(w, PW_TRACE_COMM, PW_TRACE_PHASE, "idle", t0, t1);
    x->n = 0;
    return t1 - t0;
}

void pw_xfer_free(PwXfer *x)
{
    for (int b = 0; b < x->nblk; b++) free(x->blk[b]);
    free(x->blk);
    memset(x, 0, sizeof *x);
}

void pw_roles_allreduce_f64(PwRun *r, PwRole role, double *x, int n)
{
    if (r->w.map.role[role].nranks <= 1) return;
    PwErr err;
    int64_t shape[1] = {n};
    PwTensor t = pw_tensor_host(x, PW_DTYPE_F64, 1, shape);
    if (pw_allreduce(&r->w, role, &t, PW_REDUCE_SUM, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
}
