/* bench_world.h: what the data-parallel benchmarks (bench_grad_sync, bench_zero) share: a world
 * whose every rank holds the actor role, and their integer options. */
#ifndef PW_BENCH_WORLD_H
#define PW_BENCH_WORLD_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_comm.h"

enum { BENCH_MAX_RANKS = 64 };

/* Every rank of MPI_COMM_WORLD (at most BENCH_MAX_RANKS) in the actor role on `dev`; `ranks`
 * (BENCH_MAX_RANKS ints) must outlive the world. Ends the job on an error. */
static inline void bench_actor_world(PwWorld *w, int *ranks, PwDevice dev)
{
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > BENCH_MAX_RANKS) pw_comm_fatal(__FILE__, __LINE__, "at most 64 ranks");
    for (int i = 0; i < size; i++) ranks[i] = i;
    PwRoleMap map;
    memset(&map, 0, sizeof map);
    map.world_size = size;
    map.role[PW_ROLE_ACTOR].nranks = size;
    map.role[PW_ROLE_ACTOR].ranks = ranks;
    map.role[PW_ROLE_ACTOR].device = dev;
    PwErr err;
    if (pw_world_init(w, MPI_COMM_WORLD, &map, 600.0, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err.msg);
}

/* argv[*i] is option `name` of program `prog`: its value, an integer in [lo, hi]; else a message
 * and exit 2 */
static inline int bench_arg_int(const char *prog, int argc, char **argv, int *i,
                                const char *name, int lo, int hi)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n", prog, name);
        exit(2);
    }
    char *end;
    long v = strtol(argv[++*i], &end, 10);
    if (*end || v < lo || v > hi) {
        fprintf(stderr, "%s: %s %s: expected an integer in [%d, %d]\n", prog, name, argv[*i], lo,
                hi);
        exit(2);
    }
    return (int)v;
}

#endif
