/* pw_role.h: the five roles and the role map (which MPI ranks hold which role).
 * The placement file (pw_placement.h) fills a PwRoleMap; communicators and message routing
 * (pw_comm.h) read only the fields below, so the two can evolve separately. */
#ifndef PW_ROLE_H
#define PW_ROLE_H

#include "pw_tensor.h" /* PwDevice */

typedef enum PwRole {
    PW_ROLE_ACTOR = 0,
    PW_ROLE_REFERENCE,
    PW_ROLE_CRITIC,
    PW_ROLE_REWARD,
    PW_ROLE_GENERATOR,
    PW_ROLE_COUNT
} PwRole;


#define PW_MAX_RANKS 4096

typedef struct PwRoleRanks {
    int nranks;      /* 0 when the role is absent from the job */
    int *ranks;      /* world ranks, ascending, no duplicates; rank i of the role = ranks[i] */
    PwDevice device; /* where the role computes */
    int threads;     /* BLAS/OpenMP threads per rank; 0 = as many as the cores the rank owns */
} PwRoleRanks;

/* One member of the reward ensemble and the world ranks that serve it (several ranks = data
 * parallel copies of that member). Every reward rank serves at least one member. */
typedef struct PwRewardModel {
    char *name;      /* a name or a path, as written in the placement file */
    int nranks;
    int *ranks;      /* world ranks, ascending, each one a rank of the reward role */
} PwRewardModel;

typedef struct PwRoleMap {
    int world_size;
    PwRoleRanks role[PW_ROLE_COUNT];
    int n_reward_models;           /* 0: the placement names none; the run config decides */
    PwRewardModel *reward_models;
} PwRoleMap;

static inline const char *pw_role_name(PwRole r)
{
    static const char *const names[PW_ROLE_COUNT] = {"actor", "reference", "critic", "reward",
                                                     "generator"};
    return (r >= 0 && r < PW_ROLE_COUNT) ? names[r] : "?";
}

/* Reference and generator are optional: without a reference the KL penalty must be 0, without
 * a generator the actor generates itself. */
static inline int pw_role_present(const PwRoleMap *m, PwRole r)
{
    return m->role[r].nranks > 0;
}

/* Index of world rank `rank` inside role r, or -1 if the rank does not hold the role. */
static inline int pw_role_index(const PwRoleMap *m, PwRole r, int rank)
{
    for (int i = 0; i < m->role[r].nranks; i++)
        if (m->role[r].ranks[i] == rank) return i;
    return -1;
}

#endif
