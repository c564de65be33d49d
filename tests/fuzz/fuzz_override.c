/* fuzz_override.c: libFuzzer target for command-line overrides (pw_cfg_apply_override): each
 * line of the input is one key=value argument, applied in order as ppo_world applies them. */
#include <stdint.h>
#include <string.h>

#include "fuzz_cfg.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    for (size_t i = 0; i < sizeof fuzz_schemas / sizeof fuzz_schemas[0]; i++) {
        const PwCfgSchema *s = fuzz_schemas[i];
        void *cfg = fuzz_cfg_new(s);
        int applied = 0, failed = 0;
        /* The first failed override stops ppo_world (cfg may then hold half a value: pw_cfg.h
         * says report and stop), so only a command line that was accepted whole goes on. */
        char *save = NULL, *copy = strdup(text);
        if (!copy) exit(2);
        for (char *arg = strtok_r(copy, "\n", &save); arg && !failed;
             arg = strtok_r(NULL, "\n", &save)) {
            PwErr err;
            if (pw_cfg_apply_override(s, cfg, arg, &err) == 0) applied++;
            else failed = 1;
        }
        if (applied && !failed) fuzz_cfg_use(s, cfg);
        free(copy);
        fuzz_cfg_delete(s, cfg);
    }
    free(text);
    return 0;
}
