/* watchdog_child.c: jobs that must not hang, run by test_watchdog.sh, which checks how each ends.
 * Usage: watchdog_child MODE TIMEOUT_S [HEARTBEAT_S]. Every mode but finish and busy leaves some
 * rank waiting for what never comes; those two must end well with heartbeats on. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "comm_test.h"
#include "pw_collective.h"
#include "pw_message.h"

static void idle_forever(void)
{
    for (;;) sleep(1); /* ended by the other rank's abort */
}

int main(int argc, char **argv)
{
    /* `watchdog_child has-cuda`: whether the cudafail mode exists in this build (exit 0) */
    if (argc == 2 && !strcmp(argv[1], "has-cuda")) {
#ifdef PW_HAVE_CUDA
        return 0;
#else
        return 1;
#endif
    }
    int provided; /* as ppo_world starts MPI, for the heartbeat thread */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (argc < 3) {
        fprintf(stderr, "usage: %s nosend|wrongkind|collective|mismatch|dies|noinit|cudafail|"
                "stopped|finish|busy TIMEOUT_S [HEARTBEAT_S]\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argv[1];
    double timeout = atof(argv[2]), heartbeat = argc > 3 ? atof(argv[3]) : 0;
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* reference on rank 0, actor on rank 1 (alone: both on rank 0), every rank in critic */
    TestMap t;
    tmap_init(&t, size);
    tmap_range(&t, PW_ROLE_REFERENCE, 0, 1);
    tmap_range(&t, PW_ROLE_ACTOR, size > 1 ? 1 : 0, 1);
    tmap_range(&t, PW_ROLE_CRITIC, 0, size);
    PwWorld w;
    if (!strcmp(mode, "noinit") && rank == size - 1) idle_forever(); /* never joins the world */
    tworld(&w, &t, timeout);
    PwErr herr;
    if (pw_heartbeat_start(&w, heartbeat, &herr)) {
        fprintf(stderr, "pw_heartbeat_start: %s\n", herr.msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    float buf[16] = {0};
    int64_t shape[2] = {4, 4};
    PwTensor tt = pw_tensor_host(buf, PW_DTYPE_F32, 2, shape);

    if (!strcmp(mode, "nosend") || !strcmp(mode, "wrongkind") || !strcmp(mode, "mismatch")) {
        /* the reference owes the actor 'logp_ref' step 7 */
        if (pw_world_has_role(&w, PW_ROLE_REFERENCE)) {
            if (!strcmp(mode, "wrongkind"))
                pw_send(&w, PW_ROLE_REFERENCE, PW_ROLE_ACTOR, 0, PW_MSG_SCORES, 7, &tt);
            if (!strcmp(mode, "mismatch"))
                pw_send(&w, PW_ROLE_REFERENCE, PW_ROLE_ACTOR, 0, PW_MSG_LOGP_REF, 6, &tt);
        }
        if (pw_world_has_role(&w, PW_ROLE_ACTOR))
            pw_recv(&w, PW_ROLE_ACTOR, PW_ROLE_REFERENCE, 0, PW_MSG_LOGP_REF, 7, &tt);
        idle_forever();
    }
    if (!strcmp(mode, "collective")) {
        /* the last rank never joins the critic's all-reduce; the ranks between the first and
         * the last join it a timeout later than the first, so that the first is the one whose
         * watchdog reports (when two timed out together, either could abort the job before the
         * other printed: the sanitizer build once saw rank 1's report alone) */
        PwErr err;
        if (rank > 0 && rank != size - 1) usleep((useconds_t)(timeout * 1e6));
        if (rank != size - 1) pw_allreduce(&w, PW_ROLE_CRITIC, &tt, PW_REDUCE_SUM, &err);
        idle_forever();
    }
    if (!strcmp(mode, "dies")) {
        /* the reference crashes before sending; the actor must not wait out its timeout */
        if (rank == 0 && size > 1) raise(SIGKILL);
        if (pw_world_has_role(&w, PW_ROLE_ACTOR))
            pw_recv(&w, PW_ROLE_ACTOR, PW_ROLE_REFERENCE, 0, PW_MSG_LOGP_REF, 7, &tt);
        idle_forever();
    }
    if (!strcmp(mode, "stopped")) {
        /* the actor's rank stops (as SIGSTOP, a debugger or a frozen host would stop it) while
         * the reference waits for it well inside the timeout: the heartbeat must name it */
        if (pw_world_has_role(&w, PW_ROLE_ACTOR) && size > 1) raise(SIGSTOP);
        if (pw_world_has_role(&w, PW_ROLE_REFERENCE))
            pw_recv(&w, PW_ROLE_REFERENCE, PW_ROLE_ACTOR, 0, PW_MSG_LOGP_REF, 7, &tt);
        idle_forever();
    }
    if (!strcmp(mode, "busy") || !strcmp(mode, "finish")) {
        /* busy: the actor computes, calling no MPI, three silence limits long while the
         * reference waits: its heartbeat thread keeps it alive. finish: the ranks free their
         * worlds one after the other, seconds apart: a rank that said goodbye is not dead. */
        double t0 = pw_now(), hold = 3 * heartbeat;
        if (!strcmp(mode, "busy") && pw_world_has_role(&w, PW_ROLE_ACTOR)) {
            volatile double x = 0;
            while (pw_now() - t0 < hold) x += 1e-9;
            pw_send(&w, PW_ROLE_ACTOR, PW_ROLE_REFERENCE, 0, PW_MSG_LOGP_REF, 7, &tt);
        }
        if (!strcmp(mode, "busy") && pw_world_has_role(&w, PW_ROLE_REFERENCE))
            pw_recv(&w, PW_ROLE_REFERENCE, PW_ROLE_ACTOR, 0, PW_MSG_LOGP_REF, 7, &tt);
        if (!strcmp(mode, "finish")) sleep((unsigned)(rank * 2 * (int)(heartbeat + 1)));
        pw_world_free(&w);
        MPI_Finalize();
        return 0;
    }
#ifdef PW_HAVE_CUDA
    if (!strcmp(mode, "cudafail")) {
        /* the last rank's CUDA call fails (no such device, or no GPU at all): the kernels' check
         * must end the whole job through the world's fatal path, not leave rank 0 waiting */
        if (rank == size - 1) PW_CUDA_CHECK(cudaSetDevice(-1));
        if (pw_world_has_role(&w, PW_ROLE_REFERENCE) && rank != size - 1)
            pw_recv(&w, PW_ROLE_REFERENCE, PW_ROLE_ACTOR, 0, PW_MSG_LOGP_REF, 7, &tt);
        idle_forever();
    }
#endif
    fprintf(stderr, "unknown mode %s\n", mode);
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 2;
}
