/* test_batch.c: batches routed between roles of different data-parallel degrees over real MPI:
 * every row of the batch reaches the consumer whose block holds it, exactly once and in order,
 * whether producer and consumer ranks are apart, overlap, or coincide. */
#include <stdlib.h>

#include "comm_test.h"
#include "pw_message.h"

enum { COLS = 3 };

/* Row k of the global batch is {k*10+0, k*10+1, k*10+2}: a row that arrives twice, late or in
 * the wrong place shows in its values. */
static void run_mix(int size, int nprod, int ncons, int prod_first, int cons_first, int64_t nrows,
                    int64_t step)
{
    TestMap t;
    tmap_init(&t, size);
    tmap_range(&t, PW_ROLE_GENERATOR, prod_first, nprod);
    tmap_range(&t, PW_ROLE_ACTOR, cons_first, ncons);
    PwWorld w;
    tworld(&w, &t, 30.0);

    int64_t *out = NULL, *in = NULL;
    if (pw_world_has_role(&w, PW_ROLE_GENERATOR)) {
        PwBlock b = pw_block(nrows, nprod, w.role_rank[PW_ROLE_GENERATOR]);
        out = malloc(sizeof *out * (size_t)(b.count * COLS + 1));
        for (int64_t i = 0; i < b.count; i++)
            for (int c = 0; c < COLS; c++) out[i * COLS + c] = (b.start + i) * 10 + c;
        int64_t shape[2] = {b.count, COLS};
        PwTensor tt = pw_tensor_host(out, PW_DTYPE_I64, 2, shape);
        pw_batch_send(&w, PW_ROLE_GENERATOR, PW_ROLE_ACTOR, PW_MSG_TOKENS, step, nrows, &tt);
    }
    int64_t rows_here = 0;
    if (pw_world_has_role(&w, PW_ROLE_ACTOR)) {
        PwBlock b = pw_block(nrows, ncons, w.role_rank[PW_ROLE_ACTOR]);
        in = malloc(sizeof *in * (size_t)(b.count * COLS + 1));
        for (int64_t i = 0; i < b.count * COLS; i++) in[i] = -1;
        int64_t shape[2] = {b.count, COLS};
        PwTensor tt = pw_tensor_host(in, PW_DTYPE_I64, 2, shape);
        pw_batch_recv(&w, PW_ROLE_ACTOR, PW_ROLE_GENERATOR, PW_MSG_TOKENS, step, nrows, &tt);
        int bad = 0;
        for (int64_t i = 0; i < b.count; i++)
            for (int c = 0; c < COLS; c++) bad += in[i * COLS + c] != (b.start + i) * 10 + c;
        CHECK(bad == 0, "%d->%d (ranks %d.. -> %d..) rows %lld: actor %d has %d wrong values",
              nprod, ncons, prod_first, cons_first, (long long)nrows, w.role_rank[PW_ROLE_ACTOR],
              bad);
        rows_here = b.count;
    }
    /* Exactly once: the consumers' rows add up to the batch. */
    int64_t total = 0;
    MPI_Allreduce(&rows_here, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == nrows, "%d->%d rows %lld: %lld rows arrived", nprod, ncons, (long long)nrows,
          (long long)total);
    free(out);
    free(in);
    pw_world_free(&w);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static const int mixes[][2] = {{1, 1}, {2, 3}, {3, 2}, {4, 1}, {1, 4}, {5, 3},
                                   {3, 5}, {2, 7}, {7, 2}, {8, 8}, {4, 4}};
    static const int64_t rows[] = {1, 13, 64};
    int64_t step = 0;
    for (size_t m = 0; m < PW_ARRAY_LEN(mixes); m++) {
        int p = mixes[m][0], c = mixes[m][1];
        if (p > size || c > size) continue;
        for (size_t r = 0; r < PW_ARRAY_LEN(rows); r++) {
            /* both from rank 0 (overlapping, some slices through memory) ... */
            run_mix(size, p, c, 0, 0, rows[r], step++);
            /* ... and apart as far as the job allows (producers first, consumers last) */
            run_mix(size, p, c, 0, size - c, rows[r], step++);
        }
    }
    return tdone("test_batch");
}
