/* route.c: which slice of a batch goes from which producer rank to which consumer rank, for any
 * pair of data-parallel degrees. Pure arithmetic on block distributions; no MPI. */
#include "pw_comm.h"

PwBlock pw_block(int64_t nrows, int nparts, int part)
{
    /* The first nrows % nparts parts take one extra row, so sizes differ by at most one and
     * a part's start is a closed form (no loop over the parts before it). */
    PwBlock b = {0, 0};
    if (nparts <= 0 || part < 0 || part >= nparts || nrows <= 0) return b;
    int64_t base = nrows / nparts, extra = nrows % nparts;
    b.count = base + (part < extra ? 1 : 0);
    b.start = part * base + (part < extra ? part : extra);
    return b;
}

/* The parts of a distribution over `n` that overlap rows [lo, hi), in ascending order; each
 * route is the overlap itself. Shared by both directions: a producer intersects its block with
 * the consumers' distribution, a consumer its block with the producers'. */
static int intersect(int64_t nrows, int n, int64_t lo, int64_t hi, PwRoute *out, int max)
{
    int count = 0;
    if (lo >= hi) return 0;
    /* Blocks are ascending, so one pass from the first overlapping part suffices; the first
     * part is found by the inverse of pw_block's closed form. */
    int64_t base = nrows / n, extra = nrows % n;
    int64_t big = extra * (base + 1); /* rows held by the parts with one extra row */
    int first = lo < big ? (int)(lo / (base + 1)) : (int)(extra + (lo - big) / (base ? base : 1));
    for (int p = first; p < n; p++) {
        PwBlock b = pw_block(nrows, n, p);
        if (b.start >= hi) break;
        int64_t s = b.start > lo ? b.start : lo;
        int64_t e = b.start + b.count < hi ? b.start + b.count : hi;
        if (e <= s) continue;
        if (count < max) {
            out[count].peer = p;
            out[count].row0 = s;
            out[count].nrows = e - s;
        }
        count++;
    }
    return count;
}

int pw_route_sends(int64_t nrows, int nprod, int prod, int ncons, PwRoute *out, int max)
{
    if (ncons <= 0) return 0;
    PwBlock b = pw_block(nrows, nprod, prod);
    return intersect(nrows, ncons, b.start, b.start + b.count, out, max);
}

int pw_route_recvs(int64_t nrows, int nprod, int ncons, int cons, PwRoute *out, int max)
{
    if (nprod <= 0) return 0;
    PwBlock b = pw_block(nrows, ncons, cons);
    return intersect(nrows, nprod, b.start, b.start + b.count, out, max);
}
