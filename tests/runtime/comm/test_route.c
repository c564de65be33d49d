/* test_route.c: batch routing as pure arithmetic: for many producer/consumer degrees and batch
 * sizes every row leaves one producer and reaches one consumer exactly once, in row order. */
#include <stdlib.h>

#include "pw_comm.h"
#include "pw_test.h"

static void check_blocks(int64_t nrows, int n)
{
    int64_t next = 0, lo = INT64_MAX, hi = 0;
    for (int p = 0; p < n; p++) {
        PwBlock b = pw_block(nrows, n, p);
        CHECK(b.start == next, "nrows %lld parts %d: part %d starts at %lld, expected %lld",
              (long long)nrows, n, p, (long long)b.start, (long long)next);
        next = b.start + b.count;
        if (b.count < lo) lo = b.count;
        if (b.count > hi) hi = b.count;
    }
    CHECK(next == nrows, "nrows %lld parts %d: blocks cover %lld rows", (long long)nrows, n,
          (long long)next);
    CHECK(hi - lo <= 1, "nrows %lld parts %d: block sizes %lld..%lld", (long long)nrows, n,
          (long long)lo, (long long)hi);
}

/* Sends and receives must be the same set of slices seen from both ends, and each consumer's
 * receives must tile its block in order. */
static void check_mix(int64_t nrows, int nprod, int ncons)
{
    enum { MAXR = 64 };
    PwRoute r[MAXR];
    int *seen = calloc((size_t)(nrows ? nrows : 1), sizeof *seen);
    int64_t sent_slices = 0;
    for (int p = 0; p < nprod; p++) {
        int n = pw_route_sends(nrows, nprod, p, ncons, r, MAXR);
        CHECK(n <= MAXR, "too many routes");
        PwBlock b = pw_block(nrows, nprod, p);
        int64_t at = b.start;
        for (int i = 0; i < n && i < MAXR; i++) {
            CHECK(r[i].row0 == at && r[i].nrows > 0, "%d->%d rows %lld: producer %d route %d "
                  "starts at %lld, expected %lld", nprod, ncons, (long long)nrows, p, i,
                  (long long)r[i].row0, (long long)at);
            PwBlock c = pw_block(nrows, ncons, r[i].peer);
            CHECK(r[i].row0 >= c.start && r[i].row0 + r[i].nrows <= c.start + c.count,
                  "%d->%d: slice outside consumer %d's block", nprod, ncons, r[i].peer);
            for (int64_t k = r[i].row0; k < r[i].row0 + r[i].nrows; k++) seen[k]++;
            at += r[i].nrows;
            sent_slices++;
        }
        CHECK(at == b.start + b.count, "%d->%d rows %lld: producer %d sends %lld of %lld rows",
              nprod, ncons, (long long)nrows, p, (long long)(at - b.start), (long long)b.count);
    }
    for (int64_t k = 0; k < nrows; k++)
        CHECK(seen[k] == 1, "%d->%d rows %lld: row %lld sent %d times", nprod, ncons,
              (long long)nrows, (long long)k, seen[k]);
    int64_t recv_slices = 0;
    for (int c = 0; c < ncons; c++) {
        int n = pw_route_recvs(nrows, nprod, ncons, c, r, MAXR);
        PwBlock b = pw_block(nrows, ncons, c);
        int64_t at = b.start;
        for (int i = 0; i < n && i < MAXR; i++) {
            CHECK(r[i].row0 == at, "%d->%d rows %lld: consumer %d gets row %lld, expected %lld",
                  nprod, ncons, (long long)nrows, c, (long long)r[i].row0, (long long)at);
            /* the same slice must appear among the producer's sends */
            PwRoute s[MAXR];
            int ns = pw_route_sends(nrows, nprod, r[i].peer, ncons, s, MAXR), found = 0;
            for (int j = 0; j < ns && j < MAXR; j++)
                found += s[j].peer == c && s[j].row0 == r[i].row0 && s[j].nrows == r[i].nrows;
            CHECK(found == 1, "%d->%d: consumer %d's slice at %lld not sent by producer %d",
                  nprod, ncons, c, (long long)r[i].row0, r[i].peer);
            at += r[i].nrows;
            recv_slices++;
        }
        CHECK(at == b.start + b.count, "%d->%d rows %lld: consumer %d receives %lld of %lld rows",
              nprod, ncons, (long long)nrows, c, (long long)(at - b.start), (long long)b.count);
    }
    CHECK(sent_slices == recv_slices, "%d->%d: %lld slices sent, %lld received", nprod, ncons,
          (long long)sent_slices, (long long)recv_slices);
    free(seen);
}

int main(void)
{
    static const int64_t sizes[] = {0, 1, 2, 3, 5, 7, 12, 13, 60, 64, 97, 1000};
    for (size_t s = 0; s < PW_ARRAY_LEN(sizes); s++)
        for (int p = 1; p <= 9; p++) {
            check_blocks(sizes[s], p);
            for (int c = 1; c <= 9; c++) check_mix(sizes[s], p, c);
        }
    /* Named cases from the design: 2 generator ranks feeding 3 actor ranks, 12 rows. */
    PwRoute r[4];
    int n = pw_route_sends(12, 2, 1, 3, r, 4);
    CHECK(n == 2 && r[0].peer == 1 && r[0].row0 == 6 && r[0].nrows == 2 && r[1].peer == 2 &&
          r[1].row0 == 8 && r[1].nrows == 4, "2->3, 12 rows: generator 1 routes wrong");
    n = pw_route_recvs(12, 2, 3, 1, r, 4);
    CHECK(n == 2 && r[0].peer == 0 && r[0].nrows == 2 && r[1].peer == 1 && r[1].nrows == 2,
          "2->3, 12 rows: actor 1 routes wrong");
    /* `max` smaller than the route count: count still reported, nothing written past max */
    n = pw_route_sends(100, 1, 0, 7, r, 2);
    CHECK(n == 7, "1->7 should have 7 routes, got %d", n);
    return pw_test_done("test_route");
}
