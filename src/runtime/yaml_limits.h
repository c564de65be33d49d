/* yaml_limits.h: the one pass over a YAML text that placement.c and config.c make before they
 * build a document from it: its bounds (docs/architecture.md, Files ppo_world reads) and its
 * first tag, which both readers refuse. Private to src/runtime. */
#ifndef PW_YAML_LIMITS_H
#define PW_YAML_LIMITS_H

#include <stddef.h>

#include "pw_common.h"

/* Placements and configurations need a few hundred nodes, a handful of levels and no anchors;
 * these bounds are far above that and far below what makes libyaml slow: it looks anchors up
 * one by one (100,000 of them took minutes to load) and rescans every open level of nesting for
 * each token (20,000 levels of '[' took 5 s). */
#define PW_YAML_MAX_NODES 200000
#define PW_YAML_MAX_DEPTH 64
#define PW_YAML_MAX_ANCHORS 256
#define PW_YAML_MAX_ALIASES 256

/* A YAML tag (`!!str 4`, `!local x`): libyaml's document loader gives `!!str 4` the tag of a
 * plain `4`, so only the events tell whether one was written. */
typedef struct PwYamlTag {
    char tag[64];     /* as written, shortened: "!!str", "!local" */
    char key[160];    /* the dotted key it stands under: "roles.actor.threads", "" at the top */
    size_t line, col; /* 1-based */
} PwYamlTag;

/* Walks the events of `text` (every document of it) once and stops at the first bound it passes
 * or the first tag, whichever comes first:
 *   -1: a bound, with "LABEL:LINE:COL: more than N ..." in `err`;
 *    1: a tag, with `*tag` filled (each reader words its refusal: the key names differ);
 *    0: neither.
 * A text that is not YAML passes: building the document fails at the same place, and the caller
 * words that error its own way. */
int pw_yaml_scan(const char *text, size_t len, const char *label, PwYamlTag *tag, PwErr *err);

#endif
