/* ppo_driver.c: a small ppo_world for the roles tests: MPI, placement, configuration, then
 * pw_ppo_run. Usage: mpirun -np N ppo_driver PLACEMENT CONFIG OUT_DIR [--resume] [key=value ...]
 * With PPO_DRIVER_MEMORY_PLAN=1 (CPU roles), the memory plan first (rank 0 prints it), and after
 * the run each rank's most held by the CPU kernel table against its plan, which must be equal. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_blas_core.h"
#include "pw_config.h"
#include "pw_ops.h"
#include "pw_placement.h"
#include "pw_roles.h"

int main(int argc, char **argv)
{
    /* the OpenBLAS kernels ppo_world runs, so that the two give the same numbers */
    pw_blas_core_remedy(argv);
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
        const char *plan = getenv("PPO_DRIVER_MEMORY_PLAN");
        size_t peaks[64] = {0};
        if (!rc && plan && *plan == '1' && size <= 64) {
            FILE *sink = rank == 0 ? NULL : fopen("/dev/null", "w"); /* rank 0 prints it */
            rc = pw_ppo_memory_plan(&cfg, &pl, NULL, sink ? sink : stdout, peaks, &err);
            if (sink) fclose(sink);
        }
        if (!rc) {
            rc = pw_ppo_run(&cfg, &pl, MPI_COMM_WORLD, -1, argv[3], resume, &err);
            pw_config_free(&cfg);
        }
        if (!rc && plan && *plan == '1') {
            size_t held = pw_cpu_table_peak_bytes();
            printf("memory plan: rank %d: planned %zu bytes, held at most %zu\n", rank,
                   peaks[rank], held);
            if (held != peaks[rank]) rc = 1, snprintf(err.msg, sizeof err.msg, "memory plan: "
                                                  "rank %d held %zu bytes, planned %zu", rank,
                                                  held, peaks[rank]);
        }
        pw_placement_free(&pl);
    }
    /* Every rank reached the same verdict; each says so, so that a test sees it on any rank. */
    if (rc) fprintf(stderr, "ppo_driver: rank %d: error: %s\n", rank, err.msg);
    MPI_Finalize();
    return rc ? 1 : 0;
}
