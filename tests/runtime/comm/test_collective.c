/* test_collective.c: all-reduce (sum, mean), broadcast and barrier inside roles over MPI: results
 * equal the serial sum over the role's ranks, for roles that span all, some or one rank; the
 * gathers of blocks of uneven sizes (one empty), to all and to one, whole and in pieces; and the
 * exchange of a NCCL id from a role's first rank, which is MPI in every build. */
#include <stdlib.h>

#include "collective_internal.h" /* pw_coll_piece_max */
#include "comm_test.h"
#include "pw_collective.h"

enum { N = 1000 };

/* Rank-dependent values that are exact in every dtype tested, so sums compare exactly. */
static double value(int role_rank, int i) { return (double)((role_rank * 37 + i * 11) % 101) - 50.0; }

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16); /* exact for the small integers used here */
}
static double from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void set(void *p, PwDtype dt, int i, double v)
{
    switch (dt) {
    case PW_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case PW_DTYPE_F64: ((double *)p)[i] = v; break;
    case PW_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case PW_DTYPE_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case PW_DTYPE_BF16: ((uint16_t *)p)[i] = to_bf16((float)v); break;
    default: break;
    }
}
static double get(const void *p, PwDtype dt, int i)
{
    switch (dt) {
    case PW_DTYPE_F32: return ((const float *)p)[i];
    case PW_DTYPE_F64: return ((const double *)p)[i];
    case PW_DTYPE_I32: return ((const int32_t *)p)[i];
    case PW_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case PW_DTYPE_BF16: return from_bf16(((const uint16_t *)p)[i]);
    default: return 0;
    }
}

/* The blocks of role rank k: uneven (3 + 5k elements), the second one empty (with 2 ranks or
 * more). Element i holds 1000 * (its owner + 1) + i in float32, its owner + 1 in bfloat16: exact
 * either way, so the results compare exactly. */
static void block_starts(int n, int64_t *starts)
{
    starts[0] = 0;
    for (int k = 0; k < n; k++) starts[k + 1] = starts[k] + (k == 1 ? 0 : 3 + 5 * k);
}

static void check_blocks(PwWorld *w, PwRole r)
{
    int me = w->role_rank[r], n = w->map.role[r].nranks;
    int64_t starts[65];
    block_starts(n, starts);
    int64_t total = starts[n];
    PwErr err;
    /* whole (one MPI call), then in pieces of 2 elements (the path of tensors past INT_MAX) */
    for (int pass = 0; pass < 2; pass++) {
        pw_coll_piece_max = pass ? 2 : INT_MAX;
        float f[400];
        uint16_t h[400];
        for (int64_t i = 0; i < total; i++) {
            int own = i >= starts[me] && i < starts[me + 1];
            f[i] = own ? (float)(1000 * (me + 1) + i) : -1.0f;
            h[i] = to_bf16(own ? (float)(me + 1) : -1.0f);
        }
        f[total] = 7.0f; /* past the blocks: never written */
        int64_t fl[1] = {total + 1}, hl[1] = {total};
        PwTensor tf = pw_tensor_host(f, PW_DTYPE_F32, 1, fl);
        PwTensor th = pw_tensor_host(h, PW_DTYPE_BF16, 1, hl);
        CHECK(pw_allgather_blocks(w, r, &tf, starts, &err) == 0, "all-gather: %s", err.msg);
        CHECK(pw_allgather_blocks(w, r, &th, starts, &err) == 0, "all-gather bf16: %s", err.msg);
        int bad = f[total] != 7.0f;
        for (int k = 0; k < n; k++)
            for (int64_t i = starts[k]; i < starts[k + 1]; i++)
                bad += f[i] != (float)(1000 * (k + 1) + i) || from_bf16(h[i]) != k + 1;
        CHECK(bad == 0, "role %s (%d ranks) all-gather of blocks, pass %d: %d wrong",
              pw_role_name(r), n, pass, bad);
        /* to the last rank alone: each rank hands in its block only */
        int64_t mine_n = starts[me + 1] - starts[me];
        float mine[64], all[400];
        for (int64_t i = 0; i < mine_n; i++) mine[i] = (float)(-(1000 * (me + 1) + starts[me] + i));
        for (int64_t i = 0; i < total; i++) all[i] = 0.5f;
        int root = n - 1;
        CHECK(pw_gather_blocks(w, r, mine, me == root ? all : NULL, PW_DTYPE_F32, starts, root,
                               &err) == 0, "gather: %s", err.msg);
        bad = 0;
        for (int k = 0; me == root && k < n; k++)
            for (int64_t i = starts[k]; i < starts[k + 1]; i++)
                bad += all[i] != (float)(-(1000 * (k + 1) + i));
        CHECK(bad == 0, "role %s (%d ranks) gather of blocks, pass %d: %d wrong",
              pw_role_name(r), n, pass, bad);
        /* summed into each block's owner: element i is (rank + 1) * i on every rank, so the
         * owner's block holds i * n (n + 1) / 2, exact in float32 */
        for (int64_t i = 0; i < total; i++) f[i] = (float)((me + 1) * i);
        f[total] = 7.0f;
        CHECK(pw_reduce_scatter_blocks(w, r, &tf, starts, &err) == 0, "reduce-scatter: %s",
              err.msg);
        bad = f[total] != 7.0f;
        for (int64_t i = starts[me]; i < starts[me + 1]; i++)
            bad += f[i] != (float)(i * n * (n + 1) / 2);
        CHECK(bad == 0, "role %s (%d ranks) reduce-scatter of blocks, pass %d: %d wrong",
              pw_role_name(r), n, pass, bad);
    }
    pw_coll_piece_max = INT_MAX;
    /* refusals, alike on every rank: no collective starts */
    float f[4];
    int64_t fl[1] = {4};
    PwTensor tf = pw_tensor_host(f, PW_DTYPE_F32, 1, fl);
    CHECK(pw_allgather_blocks(w, r, &tf, starts, &err) == (total > 4 ? -1 : 0) &&
              (total <= 4 || strstr(err.msg, "of a tensor of 4")),
          "blocks past the tensor's end: '%s'", err.msg);
    int64_t back[65];
    memcpy(back, starts, sizeof back);
    back[n] = back[n - 1] - 1; /* the last block reversed */
    CHECK(pw_gather_blocks(w, r, f, f, PW_DTYPE_F32, back, 0, &err) == -1 &&
              strstr(err.msg, "not a range"), "a reversed block: '%s'", err.msg);
    PwTensor th = pw_tensor_host(f, PW_DTYPE_BF16, 1, fl);
    CHECK(pw_reduce_scatter_blocks(w, r, &th, (int64_t[65]){0}, &err) == -1 &&
              strstr(err.msg, "float32 only"), "a reduce-scatter of bfloat16: '%s'", err.msg);
    CHECK(pw_gather_blocks(w, r, f, f, PW_DTYPE_F32, starts, n, &err) == -1 &&
              strstr(err.msg, "root"), "gather to a rank outside the role: '%s'", err.msg);
}

static void check_role(PwWorld *w, PwRole r)
{
    if (!pw_world_has_role(w, r)) return;
    int me = w->role_rank[r], n = w->map.role[r].nranks;
    CHECK(strcmp(pw_collective_backend(w, r), "mpi") == 0, "CPU role not on MPI");
    static const PwDtype dts[] = {PW_DTYPE_F32, PW_DTYPE_F64, PW_DTYPE_I32, PW_DTYPE_I64,
                                  PW_DTYPE_BF16};
    double *expect = malloc(N * sizeof *expect);
    double buf[N];
    int64_t shape[2] = {N / 10, 10};
    PwErr err;
    for (size_t k = 0; k < PW_ARRAY_LEN(dts); k++)
        for (int op = 0; op < 2; op++) {
            PwDtype dt = dts[k];
            int floating = dt == PW_DTYPE_F32 || dt == PW_DTYPE_F64 || dt == PW_DTYPE_BF16;
            PwTensor t = pw_tensor_host(buf, dt, 2, shape);
            for (int i = 0; i < N; i++) {
                set(buf, dt, i, value(me, i));
                expect[i] = 0;
                for (int q = 0; q < n; q++) expect[i] += value(q, i); /* serial sum */
                if (op == PW_REDUCE_MEAN) expect[i] /= n;
            }
            int rc = pw_allreduce(w, r, &t, (PwReduceOp)op, &err);
            if (op == PW_REDUCE_MEAN && !floating) {
                CHECK(rc == -1 && strstr(err.msg, "not defined"), "int mean: '%s'", err.msg);
                continue;
            }
            CHECK(rc == 0, "%s %s: %s", pw_role_name(r), pw_dtype_name(dt), err.msg);
            double tol = dt == PW_DTYPE_BF16 ? 1e-2 : (dt == PW_DTYPE_F32 ? 1e-6 : 1e-12);
            int bad = 0;
            for (int i = 0; i < N; i++) {
                double g = get(buf, dt, i);
                bad += !(fabs(g - expect[i]) <= tol * fmax(1.0, fabs(expect[i])));
            }
            CHECK(bad == 0, "role %s (%d ranks) %s %s: %d of %d wrong", pw_role_name(r), n,
                  op ? "mean" : "sum", pw_dtype_name(dt), bad, N);
        }
    /* a dtype MPI cannot add */
    PwTensor t16 = pw_tensor_host(buf, PW_DTYPE_F16, 2, shape);
    CHECK(pw_allreduce(w, r, &t16, PW_REDUCE_SUM, &err) == -1 && strstr(err.msg, "f16"),
          "f16 sum: '%s'", err.msg);

    /* broadcast from the last rank of the role, every byte */
    unsigned char bytes[3001];
    int64_t bl[1] = {sizeof bytes};
    if (me == n - 1) tfill(bytes, sizeof bytes, 42 + (uint64_t)r);
    else memset(bytes, 0, sizeof bytes);
    PwTensor tb = pw_tensor_host(bytes, PW_DTYPE_U8, 1, bl);
    CHECK(pw_broadcast(w, r, &tb, n - 1, &err) == 0, "broadcast: %s", err.msg);
    CHECK(tverify(bytes, sizeof bytes, 42 + (uint64_t)r) < 0, "role %s: broadcast corrupted",
          pw_role_name(r));
    CHECK(pw_broadcast(w, r, &tb, n, &err) == -1 && strstr(err.msg, "root"), "bad root: '%s'",
          err.msg);
    CHECK(pw_barrier(w, r, &err) == 0, "barrier: %s", err.msg);

    check_blocks(w, r);

    /* a NCCL-sized id (128 bytes) from the role's first rank, as NCCL communicators get theirs */
    unsigned char id[128];
    if (me == 0) tfill(id, sizeof id, 7000 + (uint64_t)r);
    else memset(id, 0, sizeof id);
    CHECK(pw_collective_share_id(w, r, id, sizeof id, &err) == 0, "id: %s", err.msg);
    CHECK(tverify(id, sizeof id, 7000 + (uint64_t)r) < 0, "role %s: id corrupted", pw_role_name(r));
    free(expect);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* actor: every rank; critic: the even ranks; reward: the last rank alone */
    TestMap t;
    tmap_init(&t, size);
    tmap_range(&t, PW_ROLE_ACTOR, 0, size);
    int even[64], ne = 0;
    for (int r = 0; r < size; r += 2) even[ne++] = r;
    tmap_list(&t, PW_ROLE_CRITIC, ne, even);
    tmap_range(&t, PW_ROLE_REWARD, size - 1, 1);
    PwWorld w;
    tworld(&w, &t, 30.0);
    check_role(&w, PW_ROLE_ACTOR);
    check_role(&w, PW_ROLE_CRITIC);
    check_role(&w, PW_ROLE_REWARD);
    PwErr err;
    CHECK(pw_world_has_role(&w, PW_ROLE_GENERATOR) == 0 &&
              pw_barrier(&w, PW_ROLE_GENERATOR, &err) == -1 && strstr(err.msg, "does not hold"),
          "collective of a role not held: '%s'", err.msg);
    unsigned char id[128];
    CHECK(pw_collective_share_id(&w, PW_ROLE_GENERATOR, id, sizeof id, &err) == -1 &&
              strstr(err.msg, "does not hold"), "id for a role not held: '%s'", err.msg);
    pw_world_free(&w);
    return tdone("test_collective");
}
