/* watchdog.c: the one place the runtime waits. Polls cheaply, and past the world's timeout ends
 * the job with a message naming the waiting rank and what it waited for, so nothing hangs. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pw_comm.h"

double pw_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Backoff: spin while a message is likely moments away (a spinning receiver keeps shared-memory
 * transfers moving at full speed), yield while waits are short (lets an oversubscribed peer on
 * the same core run), sleep briefly once a wait is clearly long (a peer busy computing). Any
 * progress resets the backoff, so a transfer that starts after a long wait runs at full speed. */
#define PW_YIELD_S 0.5
#define PW_SLEEP_NS 100000L

typedef struct Backoff {
    double start, phase_start, spin_s;
} Backoff;

static void backoff_step(Backoff *b, double now)
{
    double idle = now - b->phase_start;
    if (idle < b->spin_s) return;
    if (idle < PW_YIELD_S) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, PW_SLEEP_NS};
    nanosleep(&ts, NULL);
}

static _Noreturn void timeout_abort(PwWorld *w, double waited, PwDescribeFn describe,
                                    const void *ctx)
{
    char what[600] = "an unnamed operation";
    if (describe) describe(ctx, what, sizeof what);
    char msg[1000];
    snprintf(msg, sizeof msg, "watchdog: %s waited %.1f s (timeout %.1f s) for %s; aborting the job",
             w->who, waited, w->timeout_s, what);
    pw_comm_fatal(__FILE__, __LINE__, "%s", msg);
}

void pw_watchdog_wait(PwWorld *w, int n, MPI_Request *reqs, PwDescribeFn describe, const void *ctx)
{
    int done = 0;
    PW_MPI_CHECK(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
    if (done) return;
    double t0 = pw_now();
    Backoff b = {t0, t0, w->spin_s};
    int idx_small[64];
    int *idx = n <= (int)PW_ARRAY_LEN(idx_small) ? idx_small : malloc((size_t)n * sizeof *idx);
    if (!idx) pw_comm_fatal(__FILE__, __LINE__, "out of memory waiting for %d requests", n);
    for (;;) {
        /* MPI_Testsome reports partial progress (a header before its payload), which resets
         * the backoff; completed requests become MPI_REQUEST_NULL and are skipped after, and
         * MPI_UNDEFINED says none is left. */
        int outcount = 0;
        PW_MPI_CHECK(MPI_Testsome(n, reqs, &outcount, idx, MPI_STATUSES_IGNORE));
        if (outcount == MPI_UNDEFINED) break;
        double now = pw_now();
        if (outcount > 0) b.phase_start = now;
        if (now - b.start > w->timeout_s) timeout_abort(w, now - b.start, describe, ctx);
        backoff_step(&b, now);
    }
    if (idx != idx_small) free(idx);
}

void pw_watchdog_poll(PwWorld *w, int (*ready)(void *ctx), void *ctx, PwDescribeFn describe,
                      const void *dctx)
{
    if (ready(ctx)) return;
    double t0 = pw_now();
    Backoff b = {t0, t0, w->spin_s};
    for (;;) {
        if (ready(ctx)) return;
        double now = pw_now();
        if (now - b.start > w->timeout_s) timeout_abort(w, now - b.start, describe, dctx);
        backoff_step(&b, now);
    }
}
