/* fuzz_config.c: libFuzzer target for the configuration file (pw_cfg_load_file, PPO's and
 * sft/rm's schemas): any bytes give a message or values that validate, print and load back. */
#include <stdint.h>

#include "fuzz_cfg.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Through the file entry point: it owns the checks on the raw bytes (a NUL inside) that
     * the string entry point cannot see. */
    const char *path = fuzz_write("config.yaml", data, size);
    for (size_t i = 0; i < sizeof fuzz_schemas / sizeof fuzz_schemas[0]; i++) {
        const PwCfgSchema *s = fuzz_schemas[i];
        void *cfg = fuzz_cfg_new(s);
        PwErr err;
        if (pw_cfg_load_file(s, cfg, path, &err) == 0) fuzz_cfg_use(s, cfg);
        fuzz_cfg_delete(s, cfg);
    }
    return 0;
}
