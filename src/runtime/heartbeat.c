/* heartbeat.c: every rank's sign of life. A thread per rank sends a small message to the next
 * rank of a ring and watches the one before it; a rank silent too long ends the job by name. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pw_comm.h"

/* The watchdog's timeout bounds one wait, and a long generation or a checkpoint write is a
 * wait its peers must sit out, so it stays minutes long. A stopped rank (SIGSTOP, a debugger,
 * a frozen host) looks the same to its peers until then. A thread of its own beats whatever
 * the rank's main thread is doing, so silence means the whole process has stopped. */

enum { BEAT = 1, BYE = 2 }; /* BYE: this rank stops beating on purpose (pw_world_free) */

/* Beats per silence limit: ten, so that one late beat (a loaded machine) is not a death. */
#define PW_BEATS_PER_LIMIT 10.0
/* The thread looks at its requests this often: cheap, and bounds how late a stop is seen. */
#define PW_BEAT_POLL_S 0.05

struct PwHeartbeat {
    const PwWorld *w;    /* its map and names only: both fixed once the world is built */
    MPI_Comm comm;       /* a duplicate of the world's: beats never meet the roles' messages */
    pthread_t thread;
    double silence_s, period_s;
    int next, prev;      /* world ranks this one beats to and watches */
    atomic_int stop;
};

static _Noreturn void declare_dead(const struct PwHeartbeat *h, double silent)
{
    char peer[200];
    pw_world_describe_rank(h->w, h->prev, peer, sizeof peer);
    pw_comm_fatal(__FILE__, __LINE__,
                  "heartbeat: %s has given no sign of life for %.1f s (one is sent every %.1f s): "
                  "it is stopped, or its host is gone; noticed by %s; aborting the job "
                  "(runtime.heartbeat_s sets how long a rank may be silent)",
                  peer, silent, h->period_s, h->w->who);
}

/* An error on a beat to or from a neighbour (the transport saw its process or host go, where
 * the library reports that instead of ending the job) is itself a sign of death: say whose,
 * not only which call failed. The communicator returns errors (pw_heartbeat_start), and every
 * operation is non-blocking, so a dead neighbour can neither hang this thread nor crash it. */
static void check_peer(const struct PwHeartbeat *h, int rc, int peer, const char *what)
{
    if (rc == MPI_SUCCESS) return;
    char who[200], msg[MPI_MAX_ERROR_STRING];
    int n = 0;
    pw_world_describe_rank(h->w, peer, who, sizeof who);
    MPI_Error_string(rc, msg, &n);
    pw_comm_fatal(__FILE__, __LINE__,
                  "heartbeat: %s %s failed (%s): that rank is dead, or its host is gone; "
                  "noticed by %s; aborting the job", what, who, msg, h->w->who);
}

static void pause_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static void *beat(void *arg)
{
    struct PwHeartbeat *h = arg;
    int in = 0, out = 0;
    MPI_Request rreq, sreq = MPI_REQUEST_NULL;
    check_peer(h, MPI_Irecv(&in, 1, MPI_INT, h->prev, 0, h->comm, &rreq), h->prev,
               "receiving a beat from");
    double heard = pw_now(), sent = -1e300;
    int prev_done = 0, bye_posted = 0;
    for (;;) {
        double now = pw_now();
        /* Everything that arrived since the last look: beats, then perhaps a goodbye. */
        while (!prev_done) {
            int got = 0;
            check_peer(h, MPI_Test(&rreq, &got, MPI_STATUS_IGNORE), h->prev,
                       "receiving a beat from");
            if (!got) break;
            heard = now;
            if (in == BYE)
                prev_done = 1;
            else
                check_peer(h, MPI_Irecv(&in, 1, MPI_INT, h->prev, 0, h->comm, &rreq), h->prev,
                           "receiving a beat from");
        }
        /* One beat in flight at most: a peer that takes none must not pile them up here. */
        int sent_done = 1;
        if (sreq != MPI_REQUEST_NULL)
            check_peer(h, MPI_Test(&sreq, &sent_done, MPI_STATUS_IGNORE), h->next,
                       "sending a beat to");
        int stopping = atomic_load(&h->stop);
        if (sent_done && bye_posted && prev_done) break;
        if (sent_done && !bye_posted && (stopping || now - sent >= h->period_s)) {
            out = stopping ? BYE : BEAT;
            check_peer(h, MPI_Isend(&out, 1, MPI_INT, h->next, 0, h->comm, &sreq), h->next,
                       "sending a beat to");
            sent = now;
            bye_posted = stopping;
        }
        /* Still watched while stopping: the rank before may die before it says goodbye. */
        if (!prev_done && now - heard > h->silence_s) declare_dead(h, now - heard);
        pause_s(PW_BEAT_POLL_S);
    }
    return NULL;
}

static void describe_start(const void *ctx, char *buf, size_t len)
{
    (void)ctx;
    snprintf(buf, len, "every rank of the job to start its heartbeat (pw_heartbeat_start)");
}

int pw_heartbeat_start(PwWorld *w, double silence_s, PwErr *err)
{
    if (!(silence_s >= 0)) return pw_errf(err, "heartbeat: silence limit %g s; expected >= 0",
                                          silence_s);
    if (silence_s == 0 || w->size < 2) return 0;
    /* The thread calls MPI beside the main thread; a library that cannot take that gets no
     * heartbeats (the watchdog's timeout still ends every wait), and says so once. */
    int level = MPI_THREAD_SINGLE;
    PW_MPI_CHECK(MPI_Query_thread(&level));
    if (level < MPI_THREAD_MULTIPLE) {
        if (w->rank == 0)
            fprintf(stderr, "[ppo_world] heartbeats off: MPI was started without "
                    "MPI_THREAD_MULTIPLE; a stopped rank is noticed only by the watchdog's "
                    "timeout (%.0f s)\n", w->timeout_s);
        return 0;
    }
    struct PwHeartbeat *h = calloc(1, sizeof *h);
    if (!h) return pw_errf(err, "heartbeat: out of memory");
    h->w = w;
    h->silence_s = silence_s;
    h->period_s = silence_s / PW_BEATS_PER_LIMIT;
    h->next = (w->rank + 1) % w->size;
    h->prev = (w->rank + w->size - 1) % w->size;
    atomic_init(&h->stop, 0);
    /* Collective: meet under the watchdog, so a rank that never comes does not hang the rest. */
    MPI_Request req;
    PW_MPI_CHECK(MPI_Comm_idup(w->comm, &h->comm, &req));
    pw_watchdog_wait(w, 1, &req, describe_start, NULL);
    PW_MPI_CHECK(MPI_Comm_set_errhandler(h->comm, MPI_ERRORS_RETURN));
    int rc = pthread_create(&h->thread, NULL, beat, h);
    if (rc) {
        PW_MPI_CHECK(MPI_Comm_free(&h->comm));
        free(h);
        return pw_errf(err, "heartbeat: cannot start a thread: %s", strerror(rc));
    }
    w->heartbeat = h;
    return 0;
}

void pw_heartbeat_stop(PwWorld *w)
{
    struct PwHeartbeat *h = w->heartbeat;
    if (!h) return;
    /* Says goodbye to the next rank and waits for the previous one's: every beat sent is
     * taken before the communicator goes, and no rank mistakes a finished one for a dead one. */
    atomic_store(&h->stop, 1);
    pthread_join(h->thread, NULL);
    PW_MPI_CHECK(MPI_Comm_free(&h->comm));
    free(h);
    w->heartbeat = NULL;
}
