/* test_fanout.c: the broadcast of one rank's tensor to every rank of a role (pw_fanout.h), as
 * the actor's weights reach the generators: every receiver gets the sender's bytes, transfers
 * posted back to back arrive in order, a receiver on the sender's rank is written directly (or
 * through the mailbox when none is bound; or by the sender in place, its buffer sent as is), bytes_sent counts a copy per receiver on another
 * rank, a receive expecting another step fails naming the field and the broadcast, and misuse
 * is refused before anything is posted. Run on 1, 2 and 4 ranks. */
#include <stdlib.h>

#include "comm_test.h"
#include "pw_fanout.h"

enum { NT = 3, NEL = 1000 };

static uint64_t seed_of(int transfer) { return 0xfa0000u + (uint64_t)transfer; }

/* The actor (sender: actor rank 0 on world rank `root`) and the generator on `ng` world ranks
 * `gen`; NT transfers of NEL floats posted back to back, then one wait on each side. */
static void layout(const char *name, int size, int root, int ng, const int *gen, int bind)
{
    TestMap t;
    tmap_init(&t, size);
    tmap_list(&t, PW_ROLE_ACTOR, 1, &root);
    tmap_list(&t, PW_ROLE_GENERATOR, ng, gen);
    PwWorld w;
    tworld(&w, &t, 30.0);
    PwFanout f;
    PwErr err;
    CHECK(pw_fanout_init(&w, PW_ROLE_ACTOR, 0, PW_ROLE_GENERATOR, &f, &err) == 0, "%s: %s", name,
          err.msg);
    int local = 0, nremote = 0;
    for (int i = 0; i < ng; i++) *(gen[i] == root ? &local : &nremote) += 1;
    CHECK(f.root == root && f.local == local && f.nremote == nremote, "%s: root %d local %d "
          "remote %d", name, f.root, f.local, f.nremote);
    int member = w.rank == root;
    for (int i = 0; i < ng; i++) member |= gen[i] == w.rank;
    CHECK((f.comm != MPI_COMM_NULL) == (member && nremote > 0), "%s: communicator on rank %d",
          name, w.rank);

    static float src[NT][NEL], dst[NT][NEL];
    memset(dst, 0, sizeof dst);
    int64_t shape[1] = {NEL};
    int is_gen = pw_world_has_role(&w, PW_ROLE_GENERATOR);
    if (bind && is_gen && w.rank == root) {
        PwTensor b = pw_tensor_host(dst[0], PW_DTYPE_F32, 1, shape);
        pw_fanout_bind(&f, &b);
    }
    PwMsgReq req[2 * NT];
    int n = 0;
    if (w.rank == root) {
        for (int k = 0; k < NT; k++) {
            tfill(src[k], sizeof src[k], seed_of(k));
            PwTensor s = pw_tensor_host(src[k], PW_DTYPE_F32, 1, shape);
            CHECK(pw_fanout_isend(&w, &f, PW_MSG_WEIGHTS, k, &s, &req[n++], &err) == 0, "%s: %s",
                  name, err.msg);
        }
        CHECK(w.bytes_sent == (uint64_t)NT * nremote * sizeof src[0], "%s: bytes_sent %llu",
              name, (unsigned long long)w.bytes_sent);
    }
    if (is_gen) {
        for (int k = 0; k < NT; k++) {
            /* a bound receiver receives every transfer into the bound buffer */
            float *into = bind && w.rank == root ? dst[0] : dst[k];
            PwTensor d = pw_tensor_host(into, PW_DTYPE_F32, 1, shape);
            CHECK(pw_fanout_irecv(&w, &f, PW_MSG_WEIGHTS, k, &d, &req[n++], &err) == 0, "%s: %s",
                  name, err.msg);
            if (bind && w.rank == root) { /* each receive completes the mailbox marker */
                CHECK(pw_msg_waitall(&w, 1, &req[--n], &err) == 0, "%s: %s", name, err.msg);
                CHECK(tverify(dst[0], sizeof dst[0], seed_of(NT - 1)) < 0,
                      "%s: bound receiver holds another transfer's bytes", name);
            }
        }
    }
    CHECK(pw_msg_waitall(&w, n, req, &err) == 0, "%s: %s", name, err.msg);
    if (is_gen && !(bind && w.rank == root))
        for (int k = 0; k < NT; k++)
            CHECK(tverify(dst[k], sizeof dst[k], seed_of(k)) < 0, "%s: rank %d transfer %d: "
                  "byte %ld differs", name, w.rank, k, tverify(dst[k], sizeof dst[k], seed_of(k)));
    pw_fanout_free(&f);
    pw_world_free(&w);
}

/* The actor on rank 0 and the generator on ranks first..size-1, with the weights' fanout. */
static void actor0_world(int size, int first, PwWorld *w, PwFanout *f)
{
    TestMap t;
    tmap_init(&t, size);
    int zero = 0;
    tmap_list(&t, PW_ROLE_ACTOR, 1, &zero);
    tmap_range(&t, PW_ROLE_GENERATOR, first, size - first);
    tworld(w, &t, 30.0);
    PwErr err;
    CHECK(pw_fanout_init(w, PW_ROLE_ACTOR, 0, PW_ROLE_GENERATOR, f, &err) == 0, "%s", err.msg);
}

/* The sender writes the bound buffer itself and sends it (the actor packing its weights straight
 * into the generator on its rank): nothing is copied over it, the local receive completes, and
 * every other receiver gets its bytes. */
static void sent_in_place(int size)
{
    PwWorld w;
    PwFanout f;
    PwErr err;
    actor0_world(size, 0, &w, &f);
    float a[8] = {0}, b[8] = {0};
    int64_t shape[1] = {8};
    PwMsgReq q[2];
    PwTensor ta = pw_tensor_host(a, PW_DTYPE_F32, 1, shape),
             tb = pw_tensor_host(b, PW_DTYPE_F32, 1, shape);
    if (w.rank == 0) {
        pw_fanout_bind(&f, &ta);
        for (int i = 0; i < 8; i++) a[i] = (float)(i + 1) * 0.5f;
        CHECK(pw_fanout_isend(&w, &f, PW_MSG_WEIGHTS, 0, &ta, &q[0], &err) == 0, "%s", err.msg);
        CHECK(pw_fanout_irecv(&w, &f, PW_MSG_WEIGHTS, 0, &ta, &q[1], &err) == 0, "%s", err.msg);
        CHECK(pw_msg_waitall(&w, 2, q, &err) == 0, "in place: %s", err.msg);
        CHECK(a[0] == 0.5f && a[7] == 4.0f, "in place: the sender's buffer changed: %g %g", a[0],
              a[7]);
    } else {
        CHECK(pw_fanout_irecv(&w, &f, PW_MSG_WEIGHTS, 0, &tb, &q[1], &err) == 0, "%s", err.msg);
        CHECK(pw_msg_waitall(&w, 1, &q[1], &err) == 0 && b[0] == 0.5f && b[7] == 4.0f,
              "in place, rank %d: %s %g %g", w.rank, err.msg, b[0], b[7]);
    }
    pw_fanout_free(&f);
    pw_world_free(&w);
}

/* The local receiver bound to one buffer receiving into another: refused, naming the message. */
static void bound_elsewhere(int size)
{
    PwWorld w;
    PwFanout f;
    PwErr err;
    actor0_world(size, 0, &w, &f);
    float a[8] = {0}, b[8] = {0}, s[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int64_t shape[1] = {8};
    PwMsgReq q[2];
    PwTensor ts = pw_tensor_host(s, PW_DTYPE_F32, 1, shape),
             ta = pw_tensor_host(a, PW_DTYPE_F32, 1, shape),
             tb = pw_tensor_host(b, PW_DTYPE_F32, 1, shape);
    if (w.rank == 0) {
        pw_fanout_bind(&f, &ta);
        CHECK(pw_fanout_isend(&w, &f, PW_MSG_WEIGHTS, 0, &ts, &q[0], &err) == 0, "%s", err.msg);
        CHECK(a[7] == 8.0f, "the bound buffer was not written at the send: %g", a[7]);
        CHECK(pw_fanout_irecv(&w, &f, PW_MSG_WEIGHTS, 0, &tb, &q[1], &err) == 0, "%s", err.msg);
        err.msg[0] = 0;
        CHECK(pw_msg_waitall(&w, 1, &q[1], &err) == -1 &&
                  strstr(err.msg, "another buffer than the one it is received into"),
              "receiving a bound broadcast elsewhere: '%s'", err.msg);
        CHECK(pw_msg_waitall(&w, 1, &q[0], &err) == 0, "%s", err.msg);
    } else {
        CHECK(pw_fanout_irecv(&w, &f, PW_MSG_WEIGHTS, 0, &tb, &q[1], &err) == 0, "%s", err.msg);
        CHECK(pw_msg_waitall(&w, 1, &q[1], &err) == 0 && b[7] == 8.0f, "%s %g", err.msg, b[7]);
    }
    pw_fanout_free(&f);
    pw_world_free(&w);
}

/* A receiver expecting step 7 of a broadcast of step 6: the header check names the field and
 * the broadcast ("to every generator rank"). The same byte count, so the payload's broadcast
 * still completes everywhere and the test can end. */
static void wrong_step(int size)
{
    PwWorld w;
    PwFanout f;
    PwErr err;
    actor0_world(size, 1, &w, &f);
    float x[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    PwTensor tx = pw_tensor_host(x, PW_DTYPE_F32, 1, shape);
    PwMsgReq q;
    if (w.rank == 0) {
        CHECK(pw_fanout_isend(&w, &f, PW_MSG_WEIGHTS, 6, &tx, &q, &err) == 0, "%s", err.msg);
        CHECK(pw_msg_waitall(&w, 1, &q, &err) == 0, "%s", err.msg);
    } else {
        CHECK(pw_fanout_irecv(&w, &f, PW_MSG_WEIGHTS, 7, &tx, &q, &err) == 0, "%s", err.msg);
        err.msg[0] = 0;
        CHECK(pw_msg_waitall(&w, 1, &q, &err) == -1 && strstr(err.msg, "wrong step") &&
                  strstr(err.msg, "'weights' step 7 (f32 [4], 16 bytes) from actor[0] to every "
                                  "generator rank") &&
                  strstr(err.msg, "step 6"),
              "wrong step: '%s'", err.msg);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    pw_fanout_free(&f);
    pw_world_free(&w);
}

/* Misuse refused before anything is posted, each naming what was wrong: a fanout between roles
 * that do not exist or from a sender index the role lacks; a send from a rank that is not the
 * sender; a receive on a rank without the receiving role; a send whose size is not the bound
 * receiver's. */
static void misuse(int size)
{
    PwWorld w;
    PwFanout f, g;
    PwErr err;
    actor0_world(size, size > 1 ? 1 : 0, &w, &f);
    err.msg[0] = 0;
    CHECK(pw_fanout_init(&w, PW_ROLE_COUNT, 0, PW_ROLE_GENERATOR, &g, &err) == -1 &&
              strstr(err.msg, "out of range"), "a role out of range: '%s'", err.msg);
    err.msg[0] = 0;
    CHECK(pw_fanout_init(&w, PW_ROLE_ACTOR, 1, PW_ROLE_GENERATOR, &g, &err) == -1 &&
              strstr(err.msg, "broadcast from actor[1] to generator: role actor has 1 ranks"),
          "a sender index the role lacks: '%s'", err.msg);
    float a[8] = {0}, s[4] = {1, 2, 3, 4};
    int64_t s8[1] = {8}, s4[1] = {4};
    PwTensor ta = pw_tensor_host(a, PW_DTYPE_F32, 1, s8), ts = pw_tensor_host(s, PW_DTYPE_F32, 1, s4);
    PwMsgReq q;
    err.msg[0] = 0;
    if (w.rank != 0) {
        CHECK(pw_fanout_isend(&w, &f, PW_MSG_WEIGHTS, 0, &ts, &q, &err) == -1 &&
                  strstr(err.msg, "is not actor[0], the sender of this broadcast"),
              "a send from a receiver: '%s'", err.msg);
    } else if (size > 1) {
        CHECK(pw_fanout_irecv(&w, &f, PW_MSG_WEIGHTS, 0, &ts, &q, &err) == -1 &&
                  strstr(err.msg, "does not hold role generator, a receiver of this broadcast"),
              "a receive without the role: '%s'", err.msg);
    } else {
        pw_fanout_bind(&f, &ta);
        CHECK(pw_fanout_isend(&w, &f, PW_MSG_WEIGHTS, 0, &ts, &q, &err) == -1 &&
                  strstr(err.msg, "broadcast of 16 bytes, but the bound receiver generator[0] "
                                  "holds 32"), "a send the bound buffer cannot take: '%s'",
              err.msg);
        CHECK(a[0] == 0.0f, "the bound buffer was written by a refused send");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    pw_fanout_free(&f);
    pw_world_free(&w);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int all[64], rest[64];
    for (int i = 0; i < size; i++) {
        all[i] = i;
        rest[i] = i + 1; /* 1 .. size-1 */
    }
    layout("every rank, bound", size, 0, size, all, 1);
    layout("every rank, mailbox", size, 0, size, all, 0);
    if (size > 1) {
        layout("other ranks", size, 0, size - 1, rest, 0);
        /* the sender on the last rank, a receiver there too */
        layout("last rank sends", size, size - 1, size, all, 1);
        wrong_step(size);
    }
    bound_elsewhere(size);
    sent_in_place(size);
    misuse(size);
    return tdone("comm fanout");
}
