/* yaml_limits.h: the bounds on a YAML text that placement.c and config.c check before they
 * build a document from it (docs/architecture.md, Files ppo_world reads). */
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

/* Walks the events of `text` (every document of it) and stops at the first bound it passes:
 * -1 with "LABEL:LINE:COL: more than N ..." in `err`. A text that is not YAML passes: building
 * the document fails at the same place, and the caller words that error its own way. */
int pw_yaml_check_limits(const char *text, size_t len, const char *label, PwErr *err);

#endif
