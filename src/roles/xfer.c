/* xfer.c: the messages of one phase of the PPO step: rows of the global batch routed from the
 * block of each producer to the blocks of the consumers, posted without blocking, then one wait. */
#include <stdlib.h>
#include <string.h>

#include "pw_collective.h"
#include "roles.h"

const char *const pw_phase_names[PW_PH_COUNT] = {"generate", "evaluate", "advantages",
                                                  "train",    "weights",  "idle"};

static PwMsgReq *next_req(PwXfer *x)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 16;
        PwMsgReq *q = realloc(x->req, (size_t)x->cap * sizeof *q);
        if (!q) pw_comm_fatal(__FILE__, __LINE__, "out of memory for messages");
        x->req = q;
    }
    return &x->req[x->n++];
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
    if (x->n && pw_msg_waitall(w, x->n, x->req, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
    x->n = 0;
    return pw_now() - t0;
}

void pw_xfer_free(PwXfer *x)
{
    free(x->req);
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
