/* test_mismatch.c: a receive that expects another kind, step, dtype or shape than what was sent
 * fails with a message naming that field, both sides and the message; and the channel is usable
 * again afterwards. Over MPI (2+ ranks) and through memory (1 rank). */
#include <stdlib.h>

#include "comm_test.h"
#include "pw_message.h"

static PwMsgHeader header(PwMsgKind kind, int64_t step, PwDtype dt, int ndim, const int64_t *sh)
{
    PwMsgHeader h;
    memset(&h, 0, sizeof h);
    h.magic = PW_MSG_MAGIC;
    h.version = PW_MSG_VERSION;
    h.kind = (uint8_t)kind;
    h.step = step;
    h.dtype = (uint8_t)dt;
    h.src_role = PW_ROLE_CRITIC;
    h.dst_role = PW_ROLE_ACTOR;
    h.dst_idx = 1;
    h.ndim = ndim;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (h.shape[i] = sh[i]);
    h.nbytes = (uint64_t)n * pw_dtype_size(dt);
    return h;
}

/* The check itself, without MPI: each field has its own message naming what was expected. */
static void pure_checks(void)
{
    const int64_t s24[2] = {2, 4}, s42[2] = {4, 2}, s8[1] = {8};
    PwMsgHeader want = header(PW_MSG_VALUES, 3, PW_DTYPE_F32, 2, s24);
    PwErr err;
    struct {
        PwMsgHeader got;
        const char *field, *detail;
    } cases[] = {
        {header(PW_MSG_SCORES, 3, PW_DTYPE_F32, 2, s24), "wrong kind", "got 'scores'"},
        {header(PW_MSG_VALUES, 4, PW_DTYPE_F32, 2, s24), "wrong step", "step 4"},
        {header(PW_MSG_VALUES, 3, PW_DTYPE_I32, 2, s24), "wrong dtype", "(i32"},
        {header(PW_MSG_VALUES, 3, PW_DTYPE_F32, 2, s42), "wrong shape", "[4,2]"},
        {header(PW_MSG_VALUES, 3, PW_DTYPE_F32, 1, s8), "wrong shape", "[8]"},
    };
    CHECK(pw_msg_header_check(&want, &want, &err) == 0, "identical headers refused");
    for (size_t i = 0; i < PW_ARRAY_LEN(cases); i++) {
        err.msg[0] = 0;
        int rc = pw_msg_header_check(&cases[i].got, &want, &err);
        CHECK(rc == -1 && strstr(err.msg, cases[i].field) && strstr(err.msg, cases[i].detail) &&
                  strstr(err.msg, "expected message 'values' step 3 (f32 [2,4], 32 bytes) from "
                                  "critic[0] to actor[1]"),
              "case %zu: '%s'", i, err.msg);
    }
    PwMsgHeader junk = want;
    junk.magic = 0;
    CHECK(pw_msg_header_check(&junk, &want, &err) == -1 && strstr(err.msg, "not a message header"),
          "garbage header: '%s'", err.msg);
}

/* Critic sends, actor receives; 5 messages, the first 4 received with one field wrong. */
static void over_world(PwWorld *w)
{
    int64_t s24[2] = {2, 4}, s42[2] = {4, 2}, s3[1] = {3}, sbig[1] = {300000}, s2[1] = {2};
    float a[8], b[8], big[300000];
    double d[8];
    struct {
        int64_t step;
        PwDtype dt;
        int ndim;
        int64_t *shape;
        const char *field;
    } exp[] = {
        {1, PW_DTYPE_F32, 2, s24, NULL},        /* expects step 1, is sent step 0 */
        {1, PW_DTYPE_F64, 2, s24, "wrong dtype"},
        {2, PW_DTYPE_F32, 2, s42, "wrong shape"},
        {3, PW_DTYPE_F32, 1, s3, "wrong shape"},  /* sender's payload is far larger */
        {4, PW_DTYPE_F32, 1, s2, NULL},          /* correct: the channel is clean again */
    };
    exp[0].field = "wrong step";
    const int64_t sent_step[5] = {0, 1, 2, 3, 4};
    if (pw_world_has_role(w, PW_ROLE_CRITIC)) {
        for (int i = 0; i < 8; i++) a[i] = (float)i;
        tfill(big, sizeof big, 7);
        for (int i = 0; i < 5; i++) {
            PwTensor t = pw_tensor_host(a, PW_DTYPE_F32, 2, s24);
            if (i == 3) t = pw_tensor_host(big, PW_DTYPE_F32, 1, sbig);
            if (i == 4) t = pw_tensor_host(a, PW_DTYPE_F32, 1, s2);
            PwMsgReq q;
            PwErr err;
            CHECK(pw_msg_isend(w, PW_ROLE_CRITIC, PW_ROLE_ACTOR, 0, PW_MSG_VALUES, sent_step[i], &t,
                               &q, &err) == 0 &&
                      pw_msg_wait(w, &q, &err) == 0,
                  "send %d: %s", i, err.msg);
        }
    }
    if (pw_world_has_role(w, PW_ROLE_ACTOR)) {
        for (int i = 0; i < 5; i++) {
            PwTensor t = pw_tensor_host(exp[i].dt == PW_DTYPE_F64 ? (void *)d : (void *)b,
                                        exp[i].dt, exp[i].ndim, exp[i].shape);
            PwMsgReq q;
            PwErr err;
            err.msg[0] = 0;
            int rc = pw_msg_irecv(w, PW_ROLE_ACTOR, PW_ROLE_CRITIC, 0, PW_MSG_VALUES, exp[i].step,
                                  &t, &q, &err);
            if (!rc) rc = pw_msg_wait(w, &q, &err);
            if (exp[i].field)
                CHECK(rc == -1 && strstr(err.msg, exp[i].field) && strstr(err.msg, "critic[0]"),
                      "receive %d should fail with '%s': rc %d '%s'", i, exp[i].field, rc, err.msg);
            else
                CHECK(rc == 0 && b[0] == 0.0f && b[1] == 1.0f, "receive %d: rc %d '%s'", i, rc,
                      err.msg);
        }
        /* A receive from the same rank that was never sent fails at once instead of hanging. */
        if (pw_world_has_role(w, PW_ROLE_REFERENCE)) {
            PwTensor t = pw_tensor_host(b, PW_DTYPE_F32, 1, s2);
            PwMsgReq q;
            PwErr err;
            int rc = pw_msg_irecv(w, PW_ROLE_ACTOR, PW_ROLE_REFERENCE, 0, PW_MSG_LOGP_REF, 0, &t,
                                  &q, &err);
            if (!rc) rc = pw_msg_wait(w, &q, &err);
            CHECK(rc == -1 && strstr(err.msg, "never sent"), "unsent local message: '%s'",
                  err.msg);
        }
    }
    /* Misuse: a role this rank does not hold, a peer index that does not exist. */
    PwTensor t = pw_tensor_host(a, PW_DTYPE_F32, 1, s2);
    PwMsgReq q;
    PwErr err;
    CHECK(pw_msg_isend(w, PW_ROLE_REWARD, PW_ROLE_ACTOR, 0, PW_MSG_SCORES, 0, &t, &q, &err) == -1 &&
              strstr(err.msg, "does not hold role reward"), "'%s'", err.msg);
    if (pw_world_has_role(w, PW_ROLE_ACTOR))
        CHECK(pw_msg_isend(w, PW_ROLE_ACTOR, PW_ROLE_CRITIC, 5, PW_MSG_RETURNS, 0, &t, &q,
                           &err) == -1 && strstr(err.msg, "has no rank 5"), "'%s'", err.msg);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    pure_checks();
    /* actor on rank 0, critic on the last rank (the same rank when alone: through memory),
     * reference with the actor */
    TestMap t;
    tmap_init(&t, size);
    tmap_range(&t, PW_ROLE_ACTOR, 0, 1);
    tmap_range(&t, PW_ROLE_REFERENCE, 0, 1);
    tmap_range(&t, PW_ROLE_CRITIC, size - 1, 1);
    PwWorld w;
    tworld(&w, &t, 30.0);
    over_world(&w);
    pw_world_free(&w);
    return tdone("test_mismatch");
}
