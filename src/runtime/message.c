/* message.c: typed tensor messages between roles: header + payload over non-blocking MPI, a
 * mailbox in memory between roles of the same rank, host staging of GPU tensors, batch routing. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "message_internal.h"
#include "pw_trace.h"

/* ---------------------------------------------------------------------------------------------
 * Types, names, tags */

static const char *const kind_names[PW_MSG_KIND_COUNT] = {
    "tokens", "logp_ref", "logp_gen", "versions", "values",  "scores",
    "returns", "weights", "report", "control", "test"};

const char *pw_msg_kind_name(PwMsgKind k)
{
    return (k >= 0 && k < PW_MSG_KIND_COUNT) ? kind_names[k] : "?";
}

/* Tag = (kind, source role, destination role, header|payload). The source and destination
 * world ranks are MPI's own envelope; the roles are in the tag because a rank may hold several
 * roles, and the kind because one pair of roles exchanges several kinds that must never match
 * each other's receives. Steps are not in the tag: MPI keeps one tag's messages in order, and a
 * step that is off is then reported by the header check instead of waiting forever. */
int pw_msg_tag(PwMsgKind kind, PwRole src, PwRole dst, int payload)
{
    return 1 + (((int)kind * PW_ROLE_COUNT + (int)src) * PW_ROLE_COUNT + (int)dst) * 2 +
           (payload ? 1 : 0);
}

static void tag_decode(int tag, int *kind, int *src, int *dst, int *payload)
{
    int x = tag - 1;
    *payload = x % 2;
    x /= 2;
    *dst = x % PW_ROLE_COUNT;
    x /= PW_ROLE_COUNT;
    *src = x % PW_ROLE_COUNT;
    *kind = x / PW_ROLE_COUNT;
}

/* The header travels as raw bytes between ranks of one build: its layout must not depend on
 * padding the compiler chooses (docs/runtime.md gives its size). */
_Static_assert(sizeof(PwMsgHeader) == 96, "PwMsgHeader layout changed: update docs/runtime.md");

/* ---------------------------------------------------------------------------------------------
 * Header description and check */

static void fmt_shape(char *buf, size_t len, int ndim, const int64_t *shape)
{
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

/* "'values' step 3 (f32 [4,16], 256 bytes) from critic[0] to actor[1]" */
static void fmt_msg(char *buf, size_t len, const PwMsgHeader *h)
{
    char shape[160];
    fmt_shape(shape, sizeof shape, h->ndim, h->shape);
    char to[48];
    if (h->dst_idx < 0) /* a broadcast (fanout.c) */
        snprintf(to, sizeof to, "every %s rank", pw_role_name((PwRole)h->dst_role));
    else
        snprintf(to, sizeof to, "%s[%d]", pw_role_name((PwRole)h->dst_role), h->dst_idx);
    snprintf(buf, len, "'%s' step %lld (%s %s, %llu bytes) from %s[%d] to %s",
             pw_msg_kind_name((PwMsgKind)h->kind), (long long)h->step,
             pw_dtype_name((PwDtype)h->dtype), shape, (unsigned long long)h->nbytes,
             pw_role_name((PwRole)h->src_role), h->src_idx, to);
}

int pw_msg_header_check(const PwMsgHeader *got, const PwMsgHeader *want, PwErr *err)
{
    char w[400], g[400];
    fmt_msg(w, sizeof w, want);
    if (got->magic != PW_MSG_MAGIC || got->version != PW_MSG_VERSION)
        return pw_errf(err, "expected message %s, got bytes that are not a message header "
                       "(magic %08x version %u)", w, got->magic, got->version);
    fmt_msg(g, sizeof g, got);
    const char *field = NULL;
    if (got->src_role != want->src_role || got->src_idx != want->src_idx ||
        got->dst_role != want->dst_role || got->dst_idx != want->dst_idx)
        field = "wrong sender or receiver";
    else if (got->kind != want->kind)
        field = "wrong kind";
    else if (got->step != want->step)
        field = "wrong step";
    else if (got->dtype != want->dtype)
        field = "wrong dtype";
    else if (got->ndim != want->ndim || memcmp(got->shape, want->shape,
                                               (size_t)want->ndim * sizeof want->shape[0]))
        field = "wrong shape";
    else if (got->nbytes != want->nbytes)
        field = "wrong byte count";
    if (!field) return 0;
    return pw_errf(err, "%s: expected message %s, got %s", field, w, g);
}

void pw_msg_fill_header(PwMsgHeader *h, PwMsgKind kind, int64_t step, PwRole src, int src_idx,
                        PwRole dst, int dst_idx, const PwTensor *t)
{
    memset(h, 0, sizeof *h);
    h->magic = PW_MSG_MAGIC;
    h->version = PW_MSG_VERSION;
    h->kind = (uint8_t)kind;
    h->dtype = (uint8_t)t->dtype;
    h->src_role = src;
    h->src_idx = src_idx;
    h->dst_role = dst;
    h->dst_idx = dst_idx;
    h->step = step;
    h->ndim = t->ndim;
    for (int i = 0; i < t->ndim; i++) h->shape[i] = t->shape[i];
    h->nbytes = pw_tensor_bytes(t);
}

/* ---------------------------------------------------------------------------------------------
 * Host staging of GPU tensors. MPI without CUDA support reads only host memory; pinned buffers
 * make the device copies fast, and a few are kept because cudaMallocHost is slow. */

#ifdef PW_HAVE_CUDA
static void *pinned_get(PwWorld *w, size_t bytes)
{
    int best = -1;
    for (int i = 0; i < (int)PW_ARRAY_LEN(w->pinned); i++)
        if (w->pinned[i] && w->pinned_bytes[i] >= bytes &&
            (best < 0 || w->pinned_bytes[i] < w->pinned_bytes[best]))
            best = i;
    if (best >= 0) {
        void *p = w->pinned[best];
        w->pinned[best] = NULL;
        return p;
    }
    void *p = NULL;
    PW_CUDA_CHECK(cudaMallocHost(&p, bytes ? bytes : 1));
    return p;
}

static void pinned_put(PwWorld *w, void *p, size_t bytes)
{
    int slot = -1;
    for (int i = 0; i < (int)PW_ARRAY_LEN(w->pinned); i++) {
        if (!w->pinned[i]) { slot = i; break; }
        if (slot < 0 || w->pinned_bytes[i] < w->pinned_bytes[slot]) slot = i;
    }
    if (w->pinned[slot]) {
        if (w->pinned_bytes[slot] >= bytes) { /* keep the larger buffers */
            PW_CUDA_CHECK(cudaFreeHost(p));
            return;
        }
        PW_CUDA_CHECK(cudaFreeHost(w->pinned[slot]));
    }
    w->pinned[slot] = p;
    w->pinned_bytes[slot] = bytes;
}
#endif

void pw_msg_copy_bytes(void *dst, const void *src, size_t n, int device_involved)
{
    if (!n) return;
#ifdef PW_HAVE_CUDA
    if (device_involved) {
        /* The models' kernels run on streams that do not wait for the default stream, and
         * cudaMemcpy may return before a copy into device memory has landed: wait for it, so
         * the next kernel of any stream sees the bytes. */
        PW_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDefault));
        PW_CUDA_CHECK(cudaStreamSynchronize(0));
        return;
    }
#endif
    (void)device_involved;
    memcpy(dst, src, n);
}

/* ---------------------------------------------------------------------------------------------
 * Same-rank mailbox: roles of one rank talk through memory, in send order per tag. */

typedef struct PwLocalMsg {
    struct PwLocalMsg *next;
    int tag;
    PwMsgHeader hdr;
    void *data;   /* the payload's copy, or NULL: */
    void *direct; /* the receiver's buffer the sender wrote it into (a broadcast, fanout.c) */
} PwLocalMsg;

void pw_message_release(PwWorld *w)
{
    while (w->local_head) {
        PwLocalMsg *m = w->local_head;
        w->local_head = m->next;
        free(m->data);
        free(m);
    }
    w->local_tail = NULL;
#ifdef PW_HAVE_CUDA
    for (int i = 0; i < (int)PW_ARRAY_LEN(w->pinned); i++)
        if (w->pinned[i]) PW_CUDA_CHECK(cudaFreeHost(w->pinned[i]));
#endif
    memset(w->pinned, 0, sizeof w->pinned);
}

void pw_msg_mailbox_push(PwWorld *w, int tag, const PwMsgHeader *h, void *data, void *direct)
{
    PwLocalMsg *m = calloc(1, sizeof *m);
    if (!m) pw_comm_fatal(__FILE__, __LINE__, "out of memory for a local message");
    m->tag = tag;
    m->hdr = *h;
    m->data = data;
    m->direct = direct;
    if (w->local_tail) w->local_tail->next = m;
    else w->local_head = m;
    w->local_tail = m;
}

void pw_msg_mailbox_copy(PwWorld *w, int tag, const PwMsgHeader *h, const PwTensor *t)
{
    size_t n = h->nbytes;
    void *data = malloc(n ? n : 1);
    if (!data) pw_comm_fatal(__FILE__, __LINE__, "out of memory for a %zu-byte local message", n);
    pw_msg_copy_bytes(data, t->data, n, t->device == PW_DEVICE_CUDA);
    pw_msg_mailbox_push(w, tag, h, data, NULL);
}

static PwLocalMsg *mailbox_take(PwWorld *w, int tag)
{
    PwLocalMsg *prev = NULL;
    for (PwLocalMsg *m = w->local_head; m; prev = m, m = m->next) {
        if (m->tag != tag) continue;
        if (prev) prev->next = m->next;
        else w->local_head = m->next;
        if (w->local_tail == m) w->local_tail = prev;
        return m;
    }
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Posting. Payloads over INT_MAX bytes travel as 1 MiB blocks plus a tail, since MPI counts
 * are ints. */

MPI_Datatype pw_msg_big_block_type(void)
{
    static MPI_Datatype t = MPI_DATATYPE_NULL;
    if (t == MPI_DATATYPE_NULL) {
        PW_MPI_CHECK(MPI_Type_contiguous((int)PW_MSG_BIG_BLOCK, MPI_BYTE, &t));
        PW_MPI_CHECK(MPI_Type_commit(&t));
    }
    return t;
}

static void post_payload(PwWorld *w, PwMsgReq *q, void *buf, size_t n, int is_recv)
{
    MPI_Request *r = &q->req[1];
    if (n <= (size_t)INT_MAX) {
        if (is_recv) PW_MPI_CHECK(MPI_Irecv(buf, (int)n, MPI_BYTE, q->peer, q->tag, w->comm, r));
        else PW_MPI_CHECK(MPI_Isend(buf, (int)n, MPI_BYTE, q->peer, q->tag, w->comm, r));
        return;
    }
    size_t blocks = n / PW_MSG_BIG_BLOCK, tail = n % PW_MSG_BIG_BLOCK;
    char *tailp = (char *)buf + blocks * PW_MSG_BIG_BLOCK;
    if (is_recv) {
        PW_MPI_CHECK(MPI_Irecv(buf, (int)blocks, pw_msg_big_block_type(), q->peer, q->tag, w->comm, r));
        PW_MPI_CHECK(MPI_Irecv(tailp, (int)tail, MPI_BYTE, q->peer, q->tag, w->comm, r + 1));
    } else {
        PW_MPI_CHECK(MPI_Isend(buf, (int)blocks, pw_msg_big_block_type(), q->peer, q->tag, w->comm, r));
        PW_MPI_CHECK(MPI_Isend(tailp, (int)tail, MPI_BYTE, q->peer, q->tag, w->comm, r + 1));
    }
}

static int check_endpoints(const PwWorld *w, PwRole mine, PwRole other, int other_idx,
                           const PwTensor *t, PwErr *err)
{
    if (mine < 0 || mine >= PW_ROLE_COUNT || other < 0 || other >= PW_ROLE_COUNT)
        return pw_errf(err, "%s: role out of range", w->who);
    if (w->role_rank[mine] < 0)
        return pw_errf(err, "%s does not hold role %s", w->who, pw_role_name(mine));
    if (other_idx < 0 || other_idx >= w->map.role[other].nranks)
        return pw_errf(err, "%s: role %s has no rank %d (it has %d)", w->who, pw_role_name(other),
                       other_idx, w->map.role[other].nranks);
    if (t->dtype < 0 || t->dtype >= PW_DTYPE_COUNT || t->ndim < 0 || t->ndim > PW_MAX_DIMS)
        return pw_errf(err, "%s: tensor with dtype %d and %d dims is not valid", w->who,
                       (int)t->dtype, t->ndim);
    return 0;
}

void *pw_msg_stage(PwWorld *w, PwMsgReq *q)
{
    q->stage = NULL;
#ifdef PW_HAVE_CUDA
    if (q->tensor.device == PW_DEVICE_CUDA && !w->mpi_cuda_aware) {
        q->stage_bytes = pw_tensor_bytes(&q->tensor);
        q->stage = pinned_get(w, q->stage_bytes);
        return q->stage;
    }
#endif
    (void)w;
    return q->tensor.data;
}

int pw_msg_isend(PwWorld *w, PwRole src, PwRole dst, int dst_idx, PwMsgKind kind, int64_t step,
                 const PwTensor *t, PwMsgReq *req, PwErr *err)
{
    double t0 = w->trace ? pw_now() : 0.0;
    memset(req, 0, sizeof *req);
    req->req[0] = req->req[1] = req->req[2] = MPI_REQUEST_NULL;
    if (check_endpoints(w, src, dst, dst_idx, t, err)) return -1;
    req->tensor = *t;
    req->peer = pw_world_rank_of(w, dst, dst_idx);
    req->tag = pw_msg_tag(kind, src, dst, 0);
    pw_msg_fill_header(&req->hdr, kind, step, src, w->role_rank[src], dst, dst_idx, t);
    size_t n = req->hdr.nbytes;
    req->active = 1;

    if (req->peer == w->rank) {
        /* Through memory: a private copy makes the send complete at once, like a buffered send. */
        pw_msg_mailbox_copy(w, req->tag, &req->hdr, t);
        req->local = 1;
        if (w->trace) pw_trace_message(w, &req->hdr, 0, req->peer, t0, pw_now());
        return 0;
    }
    void *buf = pw_msg_stage(w, req);
    if (buf != t->data) pw_msg_copy_bytes(buf, t->data, n, 1);
    PW_MPI_CHECK(MPI_Isend(&req->hdr, (int)sizeof req->hdr, MPI_BYTE, req->peer, req->tag,
                           w->comm, &req->req[0]));
    req->tag = pw_msg_tag(kind, src, dst, 1);
    post_payload(w, req, buf, n, 0);
    /* The step's reports are measurements about the traffic, not part of it (comm/bytes_sent). */
    if (kind != PW_MSG_REPORT) w->bytes_sent += n;
    if (w->trace) pw_trace_message(w, &req->hdr, 0, req->peer, t0, pw_now());
    return 0;
}

int pw_msg_irecv(PwWorld *w, PwRole dst, PwRole src, int src_idx, PwMsgKind kind, int64_t step,
                 PwTensor *t, PwMsgReq *req, PwErr *err)
{
    memset(req, 0, sizeof *req);
    req->req[0] = req->req[1] = req->req[2] = MPI_REQUEST_NULL;
    if (check_endpoints(w, dst, src, src_idx, t, err)) return -1;
    req->is_recv = 1;
    req->tensor = *t;
    req->peer = pw_world_rank_of(w, src, src_idx);
    req->tag = pw_msg_tag(kind, src, dst, 0);
    pw_msg_fill_header(&req->want, kind, step, src, src_idx, dst, w->role_rank[dst], t);
    req->active = 1;
    if (req->peer == w->rank) { /* matched in pw_msg_wait, from the mailbox */
        req->local = 1;
        return 0;
    }
    /* Header and payload are posted together so the payload lands in place without waiting a
     * round trip for the header; the header is still checked before the payload is used. */
    PW_MPI_CHECK(MPI_Irecv(&req->hdr, (int)sizeof req->hdr, MPI_BYTE, req->peer, req->tag,
                           w->comm, &req->req[0]));
    req->tag = pw_msg_tag(kind, src, dst, 1);
    post_payload(w, req, pw_msg_stage(w, req), req->want.nbytes, 1);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Completion */

typedef struct WaitCtx {
    const PwWorld *w;
    const PwMsgReq *reqs;
    const MPI_Request *mpi;
    const int *owner; /* message index of each MPI request */
    int n;
} WaitCtx;

/* Called by the watchdog on timeout: names the first message still pending, its peer, and
 * whatever else that peer has sent to this rank instead (often the real bug: a wrong kind or
 * role on one side). */
static void describe_wait(const void *vctx, char *buf, size_t len)
{
    const WaitCtx *c = vctx;
    int i = 0;
    while (i < c->n && c->mpi[i] == MPI_REQUEST_NULL) i++;
    if (i == c->n) i = 0;
    const PwMsgReq *q = &c->reqs[c->owner[i]];
    char m[400];
    fmt_msg(m, sizeof m, q->is_recv ? &q->want : &q->hdr);
    const PwMsgHeader *h = q->is_recv ? &q->want : &q->hdr;
    const PwRole peer_role = (PwRole)(q->is_recv ? h->src_role : h->dst_role);
    const int peer_idx = q->is_recv ? h->src_idx : h->dst_idx;
    if (q->collective) {
        snprintf(buf, len, "%s broadcast of message %s from world rank %d; every rank of the "
                 "broadcast must post it, and one has not", q->is_recv ? "receiving" : "sending",
                 m, q->peer);
        return;
    }
    int n = snprintf(buf, len, "%s message %s; %s %s[%d] is world rank %d",
                     q->is_recv ? "receiving" : "the receiver to take", m,
                     q->is_recv ? "sender" : "receiver", pw_role_name(peer_role), peer_idx,
                     q->peer);
    if (!q->is_recv || n < 0 || (size_t)n >= len) return;
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(q->peer, MPI_ANY_TAG, c->w->comm, &flag, &st) == MPI_SUCCESS && flag) {
        int kind, src, dst, payload;
        tag_decode(st.MPI_TAG, &kind, &src, &dst, &payload);
        snprintf(buf + n, len - (size_t)n, "; pending from that rank instead: '%s' from %s to %s",
                 pw_msg_kind_name((PwMsgKind)kind), pw_role_name((PwRole)src),
                 pw_role_name((PwRole)dst));
    } else {
        snprintf(buf + n, len - (size_t)n, "; nothing from that rank has arrived");
    }
}

/* `ok`: the header matched, so a staged payload is the caller's data and goes to the device. */
static void finish_request(PwWorld *w, PwMsgReq *q, int ok)
{
#ifdef PW_HAVE_CUDA
    if (q->stage) {
        if (q->is_recv && ok) pw_msg_copy_bytes(q->tensor.data, q->stage, q->want.nbytes, 1);
        pinned_put(w, q->stage, q->stage_bytes);
        q->stage = NULL;
    }
#endif
    (void)w;
    (void)ok;
    q->active = 0;
}

/* A header that does not match leaves its payload in flight: take it off the wire (cancel the
 * posted receive if it had not matched, then receive the real payload into scratch) so the
 * next message on this channel is not confused with it. */
static void drain_payload(PwWorld *w, PwMsgReq *q)
{
    int consumed = 0;
    for (int k = 1; k < 3; k++) {
        if (q->req[k] == MPI_REQUEST_NULL) continue;
        MPI_Status st;
        int cancelled = 0;
        MPI_Cancel(&q->req[k]);
        MPI_Wait(&q->req[k], &st); /* a truncation error here is expected: not checked */
        MPI_Test_cancelled(&st, &cancelled);
        if (!cancelled) consumed = 1;
        q->req[k] = MPI_REQUEST_NULL;
    }
    if (consumed || q->hdr.magic != PW_MSG_MAGIC || q->hdr.nbytes > (uint64_t)INT_MAX) return;
    /* The sender posts the payload right after the header, so it is coming; the watchdog
     * still guards the wait. */
    void *scratch = malloc(q->hdr.nbytes ? q->hdr.nbytes : 1);
    if (!scratch) pw_comm_fatal(__FILE__, __LINE__, "out of memory draining a payload");
    MPI_Request r;
    PW_MPI_CHECK(MPI_Irecv(scratch, (int)q->hdr.nbytes, MPI_BYTE, q->peer, q->tag, w->comm, &r));
    pw_watchdog_wait(w, 1, &r, NULL, NULL);
    free(scratch);
}

int pw_msg_waitall(PwWorld *w, int n, PwMsgReq *reqs, PwErr *err)
{
    int rc = 0;
    double t0 = w->trace ? pw_now() : 0.0;
    /* Same-rank messages first: they are complete or they can never come (one thread). */
    for (int i = 0; i < n; i++) {
        PwMsgReq *q = &reqs[i];
        if (!q->active || !q->local) continue;
        q->active = 0;
        if (!q->is_recv) continue;
        PwLocalMsg *m = mailbox_take(w, q->tag);
        if (!m) {
            char d[400];
            fmt_msg(d, sizeof d, &q->want);
            if (!rc)
                rc = pw_errf(err, "%s waits for message %s from its own rank, which was never "
                             "sent: on one rank, send before receiving", w->who, d);
            continue;
        }
        q->hdr = m->hdr;
        if (pw_msg_header_check(&m->hdr, &q->want, rc ? NULL : err)) {
            rc = -1;
        } else if (!m->data && m->direct != q->tensor.data) {
            char d[400];
            fmt_msg(d, sizeof d, &q->want);
            rc = pw_errf(rc ? NULL : err, "%s: message %s was written into another buffer than "
                         "the one it is received into (the broadcast's bound receiver)",
                         w->who, d);
        } else if (m->data) {
            pw_msg_copy_bytes(q->tensor.data, m->data, m->hdr.nbytes,
                              q->tensor.device == PW_DEVICE_CUDA);
        }
        if (w->trace && !rc) pw_trace_message(w, &q->hdr, 1, q->peer, t0, pw_now());
        free(m->data);
        free(m);
    }

    /* Remote: headers first, so a mismatch is reported before its payload is trusted. The
     * common case (a message or two) keeps its request lists on the stack: small messages
     * are bound by per-message overhead. */
    MPI_Request mpi_small[12];
    int owner_small[12];
    int heap = 3 * n + 1 > 12;
    MPI_Request *mpi = heap ? malloc((size_t)(3 * n + 1) * sizeof *mpi) : mpi_small;
    int *owner = heap ? malloc((size_t)(3 * n + 1) * sizeof *owner) : owner_small;
    if (!mpi || !owner) pw_comm_fatal(__FILE__, __LINE__, "out of memory waiting for messages");
    WaitCtx ctx = {w, reqs, mpi, owner, 0};
    for (int i = 0; i < n; i++) {
        if (!reqs[i].active || reqs[i].req[0] == MPI_REQUEST_NULL) continue;
        owner[ctx.n] = i;
        mpi[ctx.n++] = reqs[i].req[0];
    }
    pw_watchdog_wait(w, ctx.n, mpi, describe_wait, &ctx);
    for (int i = 0; i < n; i++) {
        PwMsgReq *q = &reqs[i];
        q->req[0] = MPI_REQUEST_NULL;
        if (!q->active || !q->is_recv) continue;
        if (pw_msg_header_check(&q->hdr, &q->want, rc ? NULL : err)) {
            rc = -1;
            if (q->collective) {
                /* A broadcast cannot be cancelled: its payload stays posted (and its stage with
                 * it), and the caller ends the job on the error. */
                q->req[1] = q->req[2] = MPI_REQUEST_NULL;
                q->stage = NULL;
                q->active = 0;
                continue;
            }
            drain_payload(w, q);
            finish_request(w, q, 0);
        }
    }

    ctx.n = 0;
    for (int i = 0; i < n; i++) {
        if (!reqs[i].active) continue;
        for (int k = 1; k < 3; k++) {
            if (reqs[i].req[k] == MPI_REQUEST_NULL) continue;
            owner[ctx.n] = i;
            mpi[ctx.n++] = reqs[i].req[k];
        }
    }
    pw_watchdog_wait(w, ctx.n, mpi, describe_wait, &ctx);
    /* A receive's span is the wait it completed in: all of one wait's messages share it. */
    double t1 = w->trace ? pw_now() : 0.0;
    for (int i = 0; i < n; i++) {
        if (!reqs[i].active) continue;
        reqs[i].req[1] = reqs[i].req[2] = MPI_REQUEST_NULL;
        if (w->trace && reqs[i].is_recv) pw_trace_message(w, &reqs[i].hdr, 1, reqs[i].peer, t0, t1);
        finish_request(w, &reqs[i], 1);
    }
    if (heap) {
        free(mpi);
        free(owner);
    }
    return rc;
}

int pw_msg_wait(PwWorld *w, PwMsgReq *req, PwErr *err) { return pw_msg_waitall(w, 1, req, err); }

void pw_send(PwWorld *w, PwRole src, PwRole dst, int dst_idx, PwMsgKind kind, int64_t step,
             const PwTensor *t)
{
    PwErr err;
    PwMsgReq q;
    if (pw_msg_isend(w, src, dst, dst_idx, kind, step, t, &q, &err) || pw_msg_wait(w, &q, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
}

void pw_recv(PwWorld *w, PwRole dst, PwRole src, int src_idx, PwMsgKind kind, int64_t step,
             PwTensor *t)
{
    PwErr err;
    PwMsgReq q;
    if (pw_msg_irecv(w, dst, src, src_idx, kind, step, t, &q, &err) || pw_msg_wait(w, &q, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
}

/* ---------------------------------------------------------------------------------------------
 * Batches routed between roles of different data-parallel degrees */

typedef int (*RouteFn)(int64_t, int, int, int, PwRoute *, int);

static void batch_move(PwWorld *w, PwRole mine, PwRole other, int sending, PwMsgKind kind,
                       int64_t step, int64_t nrows, const PwTensor *local)
{
    PwErr err;
    if (mine < 0 || mine >= PW_ROLE_COUNT || w->role_rank[mine] < 0)
        pw_comm_fatal(__FILE__, __LINE__, "%s does not hold role %s for a batch", w->who,
                      pw_role_name(mine));
    int nmine = w->map.role[mine].nranks, nother = w->map.role[other].nranks;
    int me = w->role_rank[mine];
    PwBlock blk = pw_block(nrows, nmine, me);
    if (local->ndim < 1 || local->shape[0] != blk.count)
        pw_comm_fatal(__FILE__, __LINE__, "%s: batch '%s' step %lld of %lld rows: this rank's "
                      "block has %lld rows but the tensor has %lld", w->who,
                      pw_msg_kind_name(kind), (long long)step, (long long)nrows,
                      (long long)blk.count, (long long)(local->ndim ? local->shape[0] : 0));
    int nroutes = sending ? pw_route_sends(nrows, nmine, me, nother, NULL, 0)
                          : pw_route_recvs(nrows, nother, nmine, me, NULL, 0);
    if (nroutes == 0) return;
    PwRoute *routes = malloc((size_t)nroutes * sizeof *routes);
    PwMsgReq *reqs = malloc((size_t)nroutes * sizeof *reqs);
    if (!routes || !reqs) pw_comm_fatal(__FILE__, __LINE__, "out of memory routing a batch");
    if (sending) pw_route_sends(nrows, nmine, me, nother, routes, nroutes);
    else pw_route_recvs(nrows, nother, nmine, me, routes, nroutes);

    size_t row_bytes = blk.count ? pw_tensor_bytes(local) / (size_t)blk.count : 0;
    int rc = 0;
    for (int i = 0; i < nroutes && !rc; i++) {
        PwTensor slice = *local;
        slice.data = (char *)local->data + (size_t)(routes[i].row0 - blk.start) * row_bytes;
        slice.shape[0] = routes[i].nrows;
        rc = sending ? pw_msg_isend(w, mine, other, routes[i].peer, kind, step, &slice, &reqs[i],
                                    &err)
                     : pw_msg_irecv(w, mine, other, routes[i].peer, kind, step, &slice, &reqs[i],
                                    &err);
    }
    if (!rc) rc = pw_msg_waitall(w, nroutes, reqs, &err);
    free(routes);
    free(reqs);
    if (rc) pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
}

void pw_batch_send(PwWorld *w, PwRole src, PwRole dst, PwMsgKind kind, int64_t step,
                   int64_t nrows, const PwTensor *local)
{
    batch_move(w, src, dst, 1, kind, step, nrows, local);
}

void pw_batch_recv(PwWorld *w, PwRole dst, PwRole src, PwMsgKind kind, int64_t step,
                   int64_t nrows, PwTensor *local)
{
    batch_move(w, dst, src, 0, kind, step, nrows, local);
}
