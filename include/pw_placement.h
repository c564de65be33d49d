/* pw_placement.h: the placement file (YAML, schema in docs/placement.md) -> role map, binding
 * policy and the file positions that later checks (GPU present, cores per node) point at. */
#ifndef PW_PLACEMENT_H
#define PW_PLACEMENT_H

#include "pw_common.h"
#include "pw_role.h"

/* What hwloc does with each rank's CPUs (the `bind:` key). */
typedef enum PwBind { PW_BIND_NONE = 0, PW_BIND_CORE, PW_BIND_NUMA } PwBind;

/* A position in the placement file, 1-based as editors show it. */
typedef struct PwMark {
    int line, col;
} PwMark;

/* "cpu", "cuda" in PwDevice's order, NULL-ended: a role's `device:` and the supervised modes'
 * model.device */
extern const char *const pw_device_names[];

typedef struct PwPlacement {
    char path[512];
    PwRoleMap map;
    PwBind bind;
    PwMark bind_mark;                  /* the `bind:` value, or the top of the file if defaulted */
    PwMark device_mark[PW_ROLE_COUNT]; /* each role's `device:` value (or its name if defaulted) */
    PwMark ranks_mark[PW_ROLE_COUNT];  /* each role's `ranks:` value */
} PwPlacement;

/* Parse and check `path` for a job of `world_size` ranks. Every rank may call this on the same
 * file and reaches the same verdict, so no communication is needed to agree on it. On error
 * err names file:line:col, the key and what was expected; *p is left empty. */
int pw_placement_load(const char *path, int world_size, PwPlacement *p, PwErr *err);
void pw_placement_free(PwPlacement *p);

const char *pw_bind_name(PwBind b);

/* What one world rank needs from the placement: cuda if any of its roles computes on cuda, the
 * largest `threads` its roles ask for (0 = unset), and its roles as "actor+reference". */
PwDevice pw_placement_rank_device(const PwPlacement *p, int rank);
int pw_placement_rank_threads(const PwPlacement *p, int rank);
void pw_placement_rank_roles(const PwPlacement *p, int rank, char *buf, size_t n);

/* Reward ensemble members that `rank` serves, as "rm_a,rm_b" ("-" for none). */
void pw_placement_rank_models(const PwPlacement *p, int rank, char *buf, size_t n);

/* Checks that depend on the node a rank runs on. Each fills err in the same form as the
 * loader (file:line:col, key, expectation) so the user sees one kind of message. why_none says
 * why ngpus is 0 (pw_device_why_none's words, or the topology file's). */
int pw_placement_check_gpu(const PwPlacement *p, int rank, int ngpus, const char *why_none,
                           const char *host, PwErr *err);
int pw_placement_check_cores(const PwPlacement *p, int local_size, int ncores, const char *host,
                             PwErr *err);

#endif
