/* devices_file.c: devices.txt, the report of `ppo_world devices` (the build, the CPU and the
 * OpenBLAS kernels, the driver, each GPU) kept in every run folder, so that a run's figures can
 * be told apart by what made them: one build gives the same figures on the same BLAS kernels
 * and GPUs, and another rounding gives another trajectory (docs/roles.md, Checkpoints and
 * resume). */
#include "devices_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pw_device.h"
#include "pw_file.h"

void pw_devices_file_write(const char *dir, int64_t resumed_step)
{
    char path[1100], host[256] = "?", when[64] = "?";
    snprintf(path, sizeof path, "%s/devices.txt", dir);
    gethostname(host, sizeof host - 1);
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    /* a resumption keeps what the file said of the earlier starts; one unreadable is left out */
    char *old = NULL;
    size_t old_len = 0;
    if (resumed_step >= 0) {
        PwErr e;
        old = pw_file_read(path, PW_FILE_MAX_YAML, &old_len, &e);
    }
    /* whole or not at all (pw_file.h); whatever stood at the name (a FIFO would block an open
     * for writing) is replaced, never written through */
    PwFileOut o;
    PwErr e;
    FILE *f = pw_file_out_open(&o, path, &e);
    if (f) {
        if (old) fwrite(old, 1, old_len, f);
        if (resumed_step >= 0)
            fprintf(f, "# resumed at step %lld, %s, on %s\n", (long long)resumed_step, when,
                    host);
        else
            fprintf(f, "# started %s, on %s\n", when, host);
        pw_device_report(f); /* an error stays on the stream: the close says it */
    }
    if (!f || pw_file_out_close(&o, 0, &e))
        fprintf(stderr, "ppo_world: warning: %s (the run goes on)\n", e.msg);
    free(old);
}
