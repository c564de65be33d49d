/* test_grad_sync.c: gradients summed in buckets as they are reported ready (pw_collective.h,
 * PwGradSync) over MPI: the sum equals the serial one exactly (integer-valued floats) whether the
 * ranges come one by one, gathered into buckets, or not at all (summed at the end); the number
 * of buckets posted before the end follows bucket_bytes; bucket_bytes 0 and a role of one rank
 * post nothing early; a float reported twice and a dtype other than float32 are refused. */
#include <stdlib.h>

#include "comm_test.h"
#include "pw_collective.h"
#include "pw_model.h"

enum { N = 10000 };

static float value(int role_rank, int i) { return (float)((role_rank * 37 + i * 11) % 101 - 50); }

static void fill(float *g, int me)
{
    for (int i = 0; i < N; i++) g[i] = value(me, i);
}

static int wrong(const float *g, int n)
{
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float e = 0.0f;
        for (int q = 0; q < n; q++) e += value(q, i);
        bad += g[i] != e;
    }
    return bad;
}

/* Reports ranges as a backward would, several per call, in an order that is not the offsets'. */
static void report(PwGradSync *s, int chunk)
{
    /* calls of `chunk` floats from the top down, leaving [0, 100) and [200, 1000) unreported */
    for (int hi = N; hi - chunk >= 1000; hi -= chunk) {
        PwGradRange r = {(size_t)(hi - chunk), (size_t)chunk};
        pw_grad_sync_ready(s, &r, 1, NULL);
    }
    /* then [100, 200) and what the calls left above 1000 (none for chunk 1000: an empty range) */
    PwGradRange two[2] = {{100, 100}, {1000, (size_t)((N - 1000) % chunk)}};
    pw_grad_sync_ready(s, two, 2, NULL);
}

static void check_role(PwWorld *w, PwRole r)
{
    if (!pw_world_has_role(w, r)) return;
    int me = w->role_rank[r], n = w->map.role[r].nranks;
    float *g = malloc(N * sizeof *g);
    int64_t shape[1] = {N};
    PwTensor t = pw_tensor_host(g, PW_DTYPE_F32, 1, shape);
    PwErr err;
    /* bucket_bytes, chunk (floats per report), buckets expected before the end (nranks > 1) */
    static const struct {
        size_t bucket;
        int chunk, early;
    } cases[] = {
        {1, 1000, 10},       /* every report its own bucket: 9 of 1000 floats, the pair */
        {16000, 1000, 2},    /* 4000 bytes a report: a bucket every 4 reports, 2 before the end */
        {8000, 700, 4},      /* 2800 bytes a report: a bucket every 3 of the 12, the pair last */
        {28000, 700, 1},     /* a bucket after 10 of the 12, the rest at the end */
        {1 << 30, 1000, 0},  /* never full: all at the end */
        {0, 1000, 0},        /* no buckets: one all-reduce at the end */
    };
    for (size_t k = 0; k < PW_ARRAY_LEN(cases); k++) {
        fill(g, me);
        PwGradSync *s = pw_grad_sync_begin(w, r, &t, cases[k].bucket, &err);
        CHECK(s != NULL, "begin: %s", err.msg);
        if (!s) continue;
        report(s, cases[k].chunk);
        int early = -1;
        CHECK(pw_grad_sync_end(s, &early, &err) == 0, "end: %s", err.msg);
        int bad = wrong(g, n);
        CHECK(bad == 0, "role %s (%d ranks) case %zu: %d of %d sums wrong", pw_role_name(r), n, k,
              bad, N);
        int want = n > 1 ? cases[k].early : 0;
        CHECK(early == want, "role %s (%d ranks) case %zu: %d buckets before the end, expected %d",
              pw_role_name(r), n, k, early, want);
    }
    /* nothing reported at all: the whole tensor at the end */
    fill(g, me);
    PwGradSync *s = pw_grad_sync_begin(w, r, &t, 64, &err);
    CHECK(s && pw_grad_sync_end(s, NULL, &err) == 0 && wrong(g, n) == 0, "nothing reported");
    /* a float reported twice: refused at the end, on every rank alike */
    s = pw_grad_sync_begin(w, r, &t, 1, &err);
    if (s) {
        PwGradRange a = {0, 100}, b = {50, 100};
        pw_grad_sync_ready(s, &a, 1, NULL);
        pw_grad_sync_ready(s, &b, 1, NULL);
        int rc = pw_grad_sync_end(s, NULL, &err);
        if (n > 1)
            CHECK(rc == -1 && strstr(err.msg, "float 50 was reported ready twice"),
                  "overlap: rc %d '%s'", rc, rc ? err.msg : "");
        else
            CHECK(rc == 0, "one rank sums nothing: rc %d", rc);
    }
    CHECK(pw_grad_sync_end(NULL, NULL, &err) == 0, "end of NULL");
    /* only float32 gradients */
    double d[4];
    int64_t s4[1] = {4};
    PwTensor t64 = pw_tensor_host(d, PW_DTYPE_F64, 1, s4);
    CHECK(!pw_grad_sync_begin(w, r, &t64, 1, &err) && strstr(err.msg, "float32 only"),
          "f64: '%s'", err.msg);
    free(g);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* actor: every rank; reward: the last rank alone */
    TestMap t;
    tmap_init(&t, size);
    tmap_range(&t, PW_ROLE_ACTOR, 0, size);
    tmap_range(&t, PW_ROLE_REWARD, size - 1, 1);
    PwWorld w;
    tworld(&w, &t, 30.0);
    check_role(&w, PW_ROLE_ACTOR);
    check_role(&w, PW_ROLE_REWARD);
    PwErr err;
    float x[4];
    int64_t s4[1] = {4};
    PwTensor tx = pw_tensor_host(x, PW_DTYPE_F32, 1, s4);
    CHECK(!pw_grad_sync_begin(&w, PW_ROLE_GENERATOR, &tx, 1, &err) &&
              strstr(err.msg, "does not hold"), "role not held: '%s'", err.msg);
    pw_world_free(&w);
    return tdone("test_grad_sync");
}
