/* test_messages.c: round trips of every dtype and many shapes through the message API, between
 * roles on different ranks (MPI) and on the same rank (memory), checking every payload byte. */
#include <stdlib.h>

#include "comm_test.h"
#include "pw_message.h"

/* Shapes from a scalar to 6 dims, an empty one, and one large enough to leave MPI's eager path. */
typedef struct Shape {
    int ndim;
    int64_t d[PW_MAX_DIMS];
} Shape;
static const Shape shapes[] = {
    {0, {0}},          {1, {1}},          {1, {17}},        {2, {3, 5}},       {2, {0, 4}},
    {3, {2, 3, 4}},    {4, {2, 1, 3, 2}}, {6, {1, 2, 1, 3, 1, 2}}, {2, {257, 1031}},
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };
enum { NMSG = PW_DTYPE_COUNT * NSHAPES };

static PwTensor make(int m, void *data)
{
    const Shape *s = &shapes[m % NSHAPES];
    return pw_tensor_host(data, (PwDtype)(m / NSHAPES), s->ndim, s->d);
}

static uint64_t seed_of(PwRole src, int src_idx, int dst_idx, int m)
{
    return ((uint64_t)src * 1000 + (uint64_t)src_idx) * 1000003ULL + (uint64_t)dst_idx * 7919 +
           (uint64_t)m;
}

static void check_world(const PwWorld *w, const TestMap *t)
{
    for (int r = 0; r < PW_ROLE_COUNT; r++) {
        int idx = pw_role_index(&t->map, (PwRole)r, w->rank);
        CHECK(w->role_rank[r] == idx, "role %s: index %d, expected %d", pw_role_name(r),
              w->role_rank[r], idx);
        if (idx < 0) {
            CHECK(w->role_comm[r] == MPI_COMM_NULL, "role %s: communicator without the role",
                  pw_role_name(r));
            continue;
        }
        int size = 0, rank = -1;
        MPI_Comm_size(w->role_comm[r], &size);
        MPI_Comm_rank(w->role_comm[r], &rank);
        CHECK(size == t->map.role[r].nranks && rank == idx, "role %s: comm size %d rank %d",
              pw_role_name(r), size, rank);
        CHECK(strstr(w->who, pw_role_name(r)) != NULL, "'%s' does not name role %s", w->who,
              pw_role_name(r));
    }
}

/* Maps that do not describe the job are refused with a message, not used. */
static void check_bad_maps(int size)
{
    PwWorld w;
    PwErr err;
    TestMap t;
    tmap_init(&t, size + 1);
    CHECK(pw_world_init(&w, MPI_COMM_WORLD, &t.map, 5, &err) == -1 &&
          strstr(err.msg, "ranks but the job has"), "world size mismatch not caught");
    tmap_init(&t, size);
    int desc[2] = {size - 1, 0};
    tmap_list(&t, PW_ROLE_ACTOR, size > 1 ? 2 : 1, desc);
    if (size > 1)
        CHECK(pw_world_init(&w, MPI_COMM_WORLD, &t.map, 5, &err) == -1 &&
              strstr(err.msg, "ascend"), "descending ranks not caught");
    tmap_init(&t, size);
    int out[1] = {size};
    tmap_list(&t, PW_ROLE_ACTOR, 1, out);
    CHECK(pw_world_init(&w, MPI_COMM_WORLD, &t.map, 5, &err) == -1 &&
          strstr(err.msg, "outside"), "rank outside the job not caught");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check_bad_maps(size);

    /* actor on every rank; reference on rank 0 and critic on the last rank: each sends to every
     * actor rank, so with 2+ ranks some pairs share a rank (memory) and some do not (MPI). */
    TestMap t;
    tmap_init(&t, size);
    tmap_range(&t, PW_ROLE_ACTOR, 0, size);
    tmap_range(&t, PW_ROLE_REFERENCE, 0, 1);
    tmap_range(&t, PW_ROLE_CRITIC, size - 1, 1);
    PwWorld w;
    tworld(&w, &t, 30.0);
    check_world(&w, &t);

    const PwRole senders[2] = {PW_ROLE_REFERENCE, PW_ROLE_CRITIC};
    const PwMsgKind kinds[2] = {PW_MSG_LOGP_REF, PW_MSG_VALUES};
    int nsend = 0, nrecv = 0;
    PwMsgReq *sreq = malloc(sizeof *sreq * 2 * NMSG * (size_t)size);
    PwMsgReq *rreq = malloc(sizeof *rreq * 2 * NMSG);
    void **sbuf = calloc(2 * NMSG * (size_t)size, sizeof *sbuf);
    void **rbuf = calloc(2 * NMSG, sizeof *rbuf);
    PwErr err;

    /* Receives are posted before the sends on purpose: a same-rank receive may be posted early
     * as long as its wait comes after the send. */
    for (int s = 0; s < 2; s++)
        for (int m = 0; m < NMSG; m++) {
            PwTensor tt = make(m, NULL);
            rbuf[nrecv] = malloc(pw_tensor_bytes(&tt) + 1);
            memset(rbuf[nrecv], 0xEE, pw_tensor_bytes(&tt) + 1);
            tt.data = rbuf[nrecv];
            CHECK(pw_msg_irecv(&w, PW_ROLE_ACTOR, senders[s], 0, kinds[s], m, &tt, &rreq[nrecv],
                               &err) == 0, "irecv: %s", err.msg);
            nrecv++;
        }
    for (int s = 0; s < 2; s++) {
        if (!pw_world_has_role(&w, senders[s])) continue;
        for (int d = 0; d < size; d++)
            for (int m = 0; m < NMSG; m++) {
                PwTensor tt = make(m, NULL);
                sbuf[nsend] = malloc(pw_tensor_bytes(&tt) + 1);
                tfill(sbuf[nsend], pw_tensor_bytes(&tt), seed_of(senders[s], 0, d, m));
                tt.data = sbuf[nsend];
                CHECK(pw_msg_isend(&w, senders[s], PW_ROLE_ACTOR, d, kinds[s], m, &tt,
                                   &sreq[nsend], &err) == 0, "isend: %s", err.msg);
                nsend++;
            }
    }
    CHECK(pw_msg_waitall(&w, nrecv, rreq, &err) == 0, "receives: %s", err.msg);
    CHECK(pw_msg_waitall(&w, nsend, sreq, &err) == 0, "sends: %s", err.msg);
    long bad = 0;
    for (int i = 0; i < nrecv; i++) {
        int s = i / NMSG, m = i % NMSG;
        PwTensor tt = make(m, NULL);
        size_t n = pw_tensor_bytes(&tt);
        long at = tverify(rbuf[i], n, seed_of(senders[s], 0, w.role_rank[PW_ROLE_ACTOR], m));
        unsigned char guard = ((unsigned char *)rbuf[i])[n];
        if (at >= 0 || guard != 0xEE) {
            bad++;
            CHECK(0, "from %s: %s message %d (%zu bytes): byte %ld wrong, guard %02x",
                  pw_role_name(senders[s]), pw_dtype_name(tt.dtype), m, n, at, guard);
        }
    }
    CHECK(bad == 0, "%ld of %d messages corrupted", bad, nrecv);
    /* The received header is the sender's: it names the sender's role rank. */
    CHECK(rreq[NMSG].hdr.src_role == PW_ROLE_CRITIC && rreq[NMSG].hdr.step == 0,
          "received header does not describe the critic's message");

    /* The blocking forms, both ways between two roles that may share a rank. */
    float v[5] = {1, 2, 3, 4, 5}, got[5] = {0};
    int64_t five[1] = {5};
    PwTensor tv = pw_tensor_host(v, PW_DTYPE_F32, 1, five);
    PwTensor tg = pw_tensor_host(got, PW_DTYPE_F32, 1, five);
    if (pw_world_has_role(&w, PW_ROLE_CRITIC))
        pw_send(&w, PW_ROLE_CRITIC, PW_ROLE_REFERENCE, 0, PW_MSG_VALUES, 99, &tv);
    if (pw_world_has_role(&w, PW_ROLE_REFERENCE)) {
        pw_recv(&w, PW_ROLE_REFERENCE, PW_ROLE_CRITIC, 0, PW_MSG_VALUES, 99, &tg);
        CHECK(memcmp(v, got, sizeof v) == 0, "blocking round trip corrupted");
    }

    for (int i = 0; i < nsend; i++) free(sbuf[i]);
    for (int i = 0; i < nrecv; i++) free(rbuf[i]);
    free(sbuf); free(rbuf); free(sreq); free(rreq);
    pw_world_free(&w);
    return tdone("test_messages");
}
