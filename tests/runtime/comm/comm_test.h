/* comm_test.h: what the communication tests share: role maps written in code (no placement
 * file), MPI start-up, and deterministic payload bytes that say where they came from. */
#ifndef PW_COMM_TEST_H
#define PW_COMM_TEST_H

#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "pw_comm.h"
#include "pw_test.h"

/* A role map with its own rank arrays; roles start empty. */
typedef struct TestMap {
    PwRoleMap map;
    int ranks[PW_ROLE_COUNT][64];
} TestMap;

static inline void tmap_init(TestMap *t, int world_size)
{
    memset(t, 0, sizeof *t);
    t->map.world_size = world_size;
    for (int r = 0; r < PW_ROLE_COUNT; r++) t->map.role[r].ranks = t->ranks[r];
}

/* Role r on world ranks first, first+1, ..., first+n-1. */
static inline void tmap_range(TestMap *t, PwRole r, int first, int n)
{
    t->map.role[r].nranks = n;
    for (int i = 0; i < n; i++) t->ranks[r][i] = first + i;
}

static inline void tmap_list(TestMap *t, PwRole r, int n, const int *ranks)
{
    t->map.role[r].nranks = n;
    for (int i = 0; i < n; i++) t->ranks[r][i] = ranks[i];
}

/* A world over MPI_COMM_WORLD or the end of the test. */
static inline void tworld(PwWorld *w, const TestMap *t, double timeout_s)
{
    PwErr err;
    if (pw_world_init(w, MPI_COMM_WORLD, &t->map, timeout_s, &err)) {
        fprintf(stderr, "pw_world_init: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Byte i of a payload identified by `seed` (sender, receiver, message number). */
static inline unsigned char tbyte(uint64_t seed, size_t i)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL;
    z ^= z >> 29;
    return (unsigned char)(z ^ (z >> 17));
}

static inline void tfill(void *p, size_t n, uint64_t seed)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++) b[i] = tbyte(seed, i);
}

/* Index of the first wrong byte, or -1. */
static inline long tverify(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != tbyte(seed, i)) return (long)i;
    return -1;
}

/* Every rank's verdict: the test fails on all ranks if it failed on one, so mpirun's exit
 * code and each rank's tally agree. */
static inline int tdone(const char *name)
{
    int mine = pw_test_failures, any = 0, rank = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int rc = pw_test_done(name);
    MPI_Finalize();
    if (any && !rc && rank == 0) fprintf(stderr, "%s: another rank failed\n", name);
    return any ? 1 : rc;
}

#endif
