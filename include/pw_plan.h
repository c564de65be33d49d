/* pw_plan.h: `ppo_world plan`: predict the steps/s of a placement (sync and async) from a profile
 * run's per-sample phase costs, and rank the placements of N ranks (the model: docs/planner.md). */
#ifndef PW_PLAN_H
#define PW_PLAN_H

#include <stdio.h>

#include "pw_common.h"
#include "pw_role.h"

/* The most ranks the planner simulates (its search stays far below). */
#define PW_PLAN_MAX_RANKS 64

/* The phases a role spends work in, in the order every rank walks them (docs/roles.md). */
typedef enum PwPlanPhase {
    PW_PLAN_GENERATE = 0,
    PW_PLAN_EVALUATE,
    PW_PLAN_ADVANTAGES,
    PW_PLAN_TRAIN,
    PW_PLAN_WEIGHTS,
    PW_PLAN_PHASES
} PwPlanPhase;

extern const char *const pw_plan_phase_names[PW_PLAN_PHASES];

/* What a profile run measured, per sample of one core: the seconds a role's rank spends in each
 * phase divided by the rows of its block, plus fixed seconds per step (weights, reports). */
typedef struct PwPlanProfile {
    double per_sample[PW_ROLE_COUNT][PW_PLAN_PHASES]; /* s per row (generate of the producer) */
    double fixed[PW_ROLE_COUNT];                      /* s per step per rank (the weights phase) */
    long N;                 /* rows per step (ppo.num_rollout_samples) */
    long seq;               /* tokens per row: max_prompt_len + max_new_tokens */
    long resp;              /* response tokens per row (max_new_tokens) */
    long opt_steps;         /* optimizer steps per PPO step: epochs x minibatches */
    double params;          /* parameters of the actor (and of the critic) */
    int has_reference;      /* the profile measured a reference */
    int steps_used;         /* metrics lines averaged */
} PwPlanProfile;

/* The machine: cores shared by the ranks of one host, the link between ranks. */
typedef struct PwPlanHw {
    int cores;
    double bandwidth;  /* bytes/s of a message between two ranks */
    double latency;    /* s per message */
    double wait_load;  /* cores' worth a waiting rank still takes when ranks outnumber cores */
} PwPlanHw;

typedef struct PwPlanResult {
    double step_s[2];            /* [0] sync, [1] async: predicted seconds per step */
    double busy_s[PW_PLAN_MAX_RANKS]; /* sync: CPU seconds of work per step per rank */
    int nranks;
} PwPlanResult;

/* Predict one placement (map: its roles; world_size ranks). 0, or -1 with err set when the map
 * cannot run (no actor, critic or reward; a reference the profile never measured). */
int pw_plan_predict(const PwPlanProfile *prof, const PwRoleMap *map, const PwPlanHw *hw,
                    PwPlanResult *out, PwErr *err);

/* The simulated steps of one mode (async 0 or 1) as a Chrome trace (the runs' trace format: pid =
 * rank, one track per rank named by its roles, a complete event per phase with args.step; ts and
 * dur in microseconds of the model's clock). 0, or -1 with err set. */
int pw_plan_trace(const PwPlanProfile *prof, const PwRoleMap *map, const PwPlanHw *hw, int async,
                  FILE *f, PwErr *err);

/* The roles of `rank` as "actor+reference" (the tables' and the traces' name of a rank). */
void pw_plan_rank_roles(const PwRoleMap *m, int rank, char *buf, size_t n);

/* `ppo_world plan ...` (argv[0] is "plan"): 0, 1 after an error in the inputs, 2 on bad usage. */
int pw_plan_main(int argc, char **argv);

#endif
