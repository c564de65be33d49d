/* ppo_driver.c: a small ppo_world for the roles tests: MPI, placement, configuration, then
 * pw_ppo_run. Usage: mpirun -np N ppo_driver PLACEMENT CONFIG OUT_DIR [--resume] [key=value ...] */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "pw_config.h"
#include "pw_placement.h"
#include "pw_roles.h"

int main(int argc, char **argv)
{
    /* as ppo_world starts MPI: the heartbeat thread calls it beside the main thread */
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0)
            fprintf(stderr, "usage: ppo_driver PLACEMENT CONFIG OUT_DIR [key=value ...]\n");
        MPI_Finalize();
        return 2;
    }
    PwErr err = {{0}};
    PwPlacement pl;
    PwConfig cfg;
    int rc = pw_placement_load(argv[1], size, &pl, &err);
    if (!rc) {
        int resume = argc > 4 && !strcmp(argv[4], "--resume"), first = 4 + resume;
        rc = pw_config_build(&cfg, argv[2], (const char *const *)argv + first, argc - first, &err);
        if (!rc) {
            rc = pw_ppo_run(&cfg, &pl, MPI_COMM_WORLD, -1, argv[3], resume, &err);
            pw_config_free(&cfg);
        }
        pw_placement_free(&pl);
    }
    /* Every rank reached the same verdict; each says so, so that a test sees it on any rank. */
    if (rc) fprintf(stderr, "ppo_driver: rank %d: error: %s\n", rank, err.msg);
    MPI_Finalize();
    return rc ? 1 : 0;
}
