/* fuzz_cfg.h: what the two configuration targets (file, key=value overrides) check after a
 * successful read, for each schema: the dump reads back to the same values (pw_cfg.h). */
#ifndef FUZZ_CFG_H
#define FUZZ_CFG_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "pw_config.h"
#include "pw_train_config.h"

static const PwCfgSchema *const fuzz_schemas[] = {&pw_config_schema, &pw_train_config_schema};

/* A broken promise of the library, not a bad input: libFuzzer records a crash and keeps the
 * input that caused it, so the message goes to stderr and the process aborts. */
static void fuzz_fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz: %s: %s\n", what, detail);
    abort();
}

static void *fuzz_cfg_new(const PwCfgSchema *s)
{
    void *cfg = malloc(s->size);
    if (!cfg || pw_cfg_defaults(s, cfg)) exit(2);
    return cfg;
}

static void fuzz_cfg_delete(const PwCfgSchema *s, void *cfg)
{
    pw_cfg_free(s, cfg);
    free(cfg);
}

/* What a run does with a configuration it accepted: validate it, write it as JSON (the run
 * folder's record) and as YAML (config.yaml, which a resume reads back and compares with
 * pw_cfg_check_saved). A value that does not survive that trip would stop every resume. */
static void fuzz_cfg_use(const PwCfgSchema *s, const void *cfg)
{
    PwErr err;
    (void)pw_cfg_validate(s, cfg, &err);
    json_t *j = pw_cfg_to_json(s, cfg);
    if (j) free(json_dumps(j, JSON_COMPACT));
    json_decref(j);

    char *yaml = pw_cfg_yaml_string(s, cfg);
    if (!yaml) fuzz_fail(s->name, "pw_cfg_yaml_string failed");
    void *back = fuzz_cfg_new(s);
    if (pw_cfg_load_string(s, back, yaml, "dump", &err)) {
        fprintf(stderr, "%s\n", yaml);
        fuzz_fail("the dump does not load back", err.msg);
    }
    if (pw_cfg_diff(s, cfg, back, &err)) {
        fprintf(stderr, "%s\n", yaml);
        fuzz_fail("the dump loads back to other values", err.msg);
    }
    fuzz_cfg_delete(s, back);
    free(yaml);
}

#endif
