/* fuzz_placement.c: libFuzzer target for the placement file (pw_placement_load): any bytes must
 * give a placement or a message, and a placement must answer every per-rank query and print. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_util.h"
#include "pw_placement.h"
#include "pw_startup.h"

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    devnull = fopen("/dev/null", "w");
    return 0;
}

/* Everything a job does with a loaded placement before any MPI message: the per-rank queries
 * of start-up and the dry-run table, for every rank of the job. */
static void use(const PwPlacement *p, int world_size)
{
    PwErr err;
    PwPlaceRow rows[8];
    PwBinding b;
    memset(&b, 0, sizeof b);
    for (int r = 0; r < world_size; r++) {
        char buf[256];
        (void)pw_placement_rank_device(p, r);
        (void)pw_placement_rank_threads(p, r);
        pw_placement_rank_roles(p, r, buf, sizeof buf);
        pw_placement_rank_models(p, r, buf, sizeof buf);
        (void)pw_placement_check_gpu(p, r, 0, "no GPU found", "host", &err);
        pw_place_row(p, r, &b, &rows[r]);
    }
    (void)pw_placement_check_cores(p, world_size, 1, "host", &err);
    if (devnull) pw_place_report(devnull, p, rows, world_size, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("placement.yaml", data, size);
    /* The file states its own world size or fits several: the sizes of the shipped
     * placements, so the seeds load, and 1 and 8 at the ends of what the tests run. */
    static const int sizes[] = {1, 2, 3, 5, 8};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        PwPlacement p;
        PwErr err;
        if (pw_placement_load(path, sizes[i], &p, &err) == 0) {
            use(&p, sizes[i]);
            pw_placement_free(&p);
        }
    }
    return 0;
}
