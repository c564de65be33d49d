/* pw_startup.h: the start of every ppo_world process: read the placement on every rank, agree on
 * the verdict, bind with hwloc, and print the rank -> roles -> cores/NUMA/GPU table. */
#ifndef PW_STARTUP_H
#define PW_STARTUP_H

#include <stdio.h>

#include "pw_binding.h"
#include "pw_common.h"
#include "pw_placement.h"

typedef struct PwStartupOpts {
    const char *placement; /* path of the placement file */
    int world_size;        /* --world-size: 0 = the job's size; without MPI the ranks to plan */
    int use_mpi;           /* 0: plan world_size ranks on this host without launching them */
    FILE *report;          /* where rank 0 prints the table; NULL for none */
} PwStartupOpts;

typedef struct PwStartup {
    int rank, size;        /* this process in MPI_COMM_WORLD (0 and world_size without MPI) */
    PwPlacement place;
    PwBinding binding;     /* this rank's cores, threads and GPU, already applied with MPI */
    PwBinding *all;        /* every rank's host and GPU (the memory plan groups ranks by them):
                            * rank 0's after a job's startup, the planned ranks' without one;
                            * NULL on other ranks */
    PwTopo *topo;
} PwStartup;

/* Collective over MPI_COMM_WORLD when use_mpi. Every check that can differ between ranks or
 * nodes is agreed with MPI_Allreduce, so on failure every rank returns -1 with the same message
 * (the lowest failing rank's) in err, and no rank is left waiting. */
int pw_startup(const PwStartupOpts *o, PwStartup *s, PwErr *err);
void pw_startup_free(PwStartup *s);

/* One row of the table; plain characters so rows travel in one MPI_Gather of bytes. */
typedef struct PwPlaceRow {
    int rank;
    char roles[64];
    char device[8];
    char models[192];
    PwBinding b;
} PwPlaceRow;

void pw_place_row(const PwPlacement *p, int rank, const PwBinding *b, PwPlaceRow *row);
void pw_place_report(FILE *f, const PwPlacement *p, const PwPlaceRow *rows, int n, int planned);

#endif
