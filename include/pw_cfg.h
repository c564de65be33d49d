/* pw_cfg.h: a configuration schema (typed key table, the struct it fills, cross-key rules) and
 * the one loader, override parser, validator, dumper and Markdown writer every schema uses. */
#ifndef PW_CFG_H
#define PW_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pw_common.h"

/* A list of strings (model.reward): items are owned by the list. */
typedef struct PwStrList {
    char **items;
    int n;
} PwStrList;

/* ---- values every schema shares --------------------------------------------------------- */

/* runtime.on_nonfinite: what a run does when a loss, a gradient or a weight turns NaN or
 * infinite (docs/roles.md, Non-finite values); its names, in config_table.c, serve every schema. */
typedef enum PwOnNonfinite { PW_NONFINITE_STOP = 0, PW_NONFINITE_SKIP_STEP } PwOnNonfinite;
extern const char *const pw_on_nonfinite_names[]; /* "stop", "skip_step", NULL */

/* ---- the key table ---------------------------------------------------------------------- */

/* Field types: bool, int64_t, double, char * (never NULL once defaulted; "" = not given), an
 * int-sized enum, PwStrList. */
typedef enum {
    PW_CFG_BOOL,
    PW_CFG_INT,
    PW_CFG_FLOAT,
    PW_CFG_STRING,
    PW_CFG_ENUM,
    PW_CFG_STRLIST
} PwCfgType;

/* Range flags: which bounds apply and whether they are open (excluded). */
enum {
    PW_CFG_MIN = 1u << 0,
    PW_CFG_MAX = 1u << 1,
    PW_CFG_MIN_OPEN = 1u << 2,
    PW_CFG_MAX_OPEN = 1u << 3,
    PW_CFG_REQUIRED = 1u << 4, /* string / list that must be non-empty for a run */
    PW_CFG_AUTO = 1u << 5,     /* int that also takes the word `auto`: a value the schema derives */
    PW_CFG_FREE = 1u << 6      /* changes no number of a run (time limits, progress, tracing): may
                                * differ when a run is resumed */
};

/* What an int key with PW_CFG_AUTO holds after `auto`; no range lets a real value reach it. */
#define PW_CFG_AUTO_INT INT64_MIN

typedef struct PwCfgKey {
    const char *name;              /* dotted: "ppo.gae_lambda" */
    PwCfgType type;
    size_t offset;                 /* into the schema's struct */
    const char *def;               /* the default, spelled as in a YAML file */
    double min, max;               /* used as flags say */
    unsigned flags;
    const char *const *enum_names; /* NULL-terminated, index = stored value */
    const char *doc;               /* one line */
    const char *source;            /* where the default comes from */
} PwCfgKey;

/* One configuration: its keys (in documentation order, each section's keys together) and the
 * struct their offsets point into. */
typedef struct PwCfgSchema {
    const char *name;  /* "ppo", "train": names its generated table in the docs */
    const char *title; /* first line of the YAML dump, written as a comment */
    const PwCfgKey *keys;
    size_t nkeys;
    size_t size;       /* of the struct */
    /* Rules across keys, run after the ranges and the required keys; NULL when none. */
    int (*check)(const void *cfg, PwErr *err);
} PwCfgSchema;

/* The key of that dotted name, or NULL. */
const PwCfgKey *pw_cfg_find_key(const PwCfgSchema *s, const char *name);
/* The name of an enum value of key k ("k3"), or NULL (not an enum key, or out of range). */
const char *pw_cfg_enum_name(const PwCfgKey *k, int value);

/* ---- life cycle (cfg points to the schema's struct) -------------------------------------- */

/* Fill every field with its default (any previous content is overwritten, not freed).
 * Returns 0, or -1 on allocation failure. */
int pw_cfg_defaults(const PwCfgSchema *s, void *cfg);
/* Free the strings and lists; cfg may be reused after pw_cfg_defaults. */
void pw_cfg_free(const PwCfgSchema *s, void *cfg);

/* Read a YAML file over cfg (keys not in the file keep their value). An empty file (or one
 * holding only comments) is valid and changes nothing; a top level that is not a mapping,
 * an unknown key, a key given twice, a wrong type or an out-of-range value is an error that
 * names path:line:column and the dotted key. Ranges are checked here; cross-key rules are
 * pw_cfg_validate's. After an error cfg may hold part of the file: report and stop. */
int pw_cfg_load_file(const PwCfgSchema *s, void *cfg, const char *path, PwErr *err);
/* The same from a string; `label` stands for the file name in messages. */
int pw_cfg_load_string(const PwCfgSchema *s, void *cfg, const char *text, const char *label,
                       PwErr *err);

/* Apply one "key.sub=value" argument: the value is read as a YAML value with the type rules
 * of the file (so model.reward=[a,b] is a list, and a bare word is a string). */
int pw_cfg_apply_override(const PwCfgSchema *s, void *cfg, const char *arg, PwErr *err);

/* Ranges (again: code may have set fields), required keys, then the schema's own rules; the
 * message names the keys involved. */
int pw_cfg_validate(const PwCfgSchema *s, const void *cfg, PwErr *err);

/* The whole command line: defaults, then the file (if path is not NULL), then the overrides in
 * order, then validation. On error cfg is freed. */
int pw_cfg_build(const PwCfgSchema *s, void *cfg, const char *path, const char *const *overrides,
                 int n, PwErr *err);

/* ---- output ----------------------------------------------------------------------------- */

/* The configuration as nested JSON objects (a jansson json_t *, returned as void * so that this
 * header does not pull jansson into every file; free with json_decref). */
void *pw_cfg_to_json(const PwCfgSchema *s, const void *cfg);
/* Every key as YAML that pw_cfg_load_file reads back to the same values. */
int pw_cfg_write_yaml(const PwCfgSchema *s, const void *cfg, FILE *f);
/* Write it to path atomically (temporary name, fsync, rename). */
int pw_cfg_save_yaml(const PwCfgSchema *s, const void *cfg, const char *path, PwErr *err);
/* The YAML of pw_cfg_write_yaml in a malloc'd string (free it). NULL on no memory. */
char *pw_cfg_yaml_string(const PwCfgSchema *s, const void *cfg);
/* Number of keys whose values differ; err (if given and any differ) lists the first few as
 * "key: a -> b". */
int pw_cfg_diff(const PwCfgSchema *s, const void *a, const void *b, PwErr *err);
/* For a resume: load the configuration saved at saved_path and fail, naming every changed key
 * (up to four), if it differs from cfg. */
int pw_cfg_check_saved(const PwCfgSchema *s, const void *cfg, const char *saved_path, PwErr *err);

/* The Markdown table of every key (key, type, default, range, description, default from). */
int pw_cfg_write_markdown(const PwCfgSchema *s, FILE *f);
/* Every key with its default and description, one a line, for a command's --help. */
int pw_cfg_write_help(const PwCfgSchema *s, FILE *f);

#endif
