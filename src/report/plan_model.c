/* plan_model.c: the planner's model: one PPO step as tasks per rank (a rank walks the phases in
 * order, a task starts when the messages it needs have arrived), run on shared cores. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_comm.h"
#include "pw_plan.h"

const char *const pw_plan_phase_names[PW_PLAN_PHASES] = {"generate", "evaluate", "advantages",
                                                         "train", "weights"};

/* Steps simulated: the first ones differ (async samples two batches at step 0), and near the
 * end ranks that run up to a step ahead (scoring the next batch) finish and leave their cores to
 * the others; the step time is the mean over steps PW_SIM_FIRST..PW_SIM_LAST. */
#define PW_SIM_STEPS 14
#define PW_SIM_FIRST 2
#define PW_SIM_LAST (PW_SIM_STEPS - 4)

typedef struct Sim {
    const PwPlanProfile *p;
    const PwRoleMap *m;
    const PwPlanHw *hw;
    int W, async, producer; /* producer: the generator, or the actor without one */
    double work[PW_PLAN_PHASES][PW_PLAN_MAX_RANKS];               /* CPU s of one step */
    double fin[PW_SIM_STEPS][PW_PLAN_PHASES][PW_PLAN_MAX_RANKS]; /* -1: not finished */
    double beg[PW_SIM_STEPS][PW_PLAN_PHASES][PW_PLAN_MAX_RANKS]; /* when the task started */
} Sim;

/* Rows of `rank`'s block in `role` (0 if it does not hold it): the runtime's own split. */
static double rows(const Sim *s, int role, int rank)
{
    int i = pw_role_index(s->m, (PwRole)role, rank);
    return i < 0 ? 0.0 : (double)pw_block(s->p->N, s->m->role[role].nranks, i).count;
}

static double msg_s(const Sim *s, int from, int to, double bytes)
{
    return from == to ? 0.0 : s->hw->latency + bytes / s->hw->bandwidth;
}

/* A ring all-reduce of the gradients per optimizer step: 2(n-1)/n of the bytes through each
 * rank's link and 2(n-1) hops of latency. */
static double allreduce_s(const Sim *s, int n)
{
    if (n < 2) return 0.0;
    double bytes = 4.0 * s->p->params;
    return (double)s->p->opt_steps *
           (2.0 * (n - 1) / n * bytes / s->hw->bandwidth + 2.0 * (n - 1) * s->hw->latency);
}

static void fill_work(Sim *s)
{
    const PwPlanProfile *p = s->p;
    /* the producer's sampling costs what the profile's producer measured, whichever role it was */
    double gen = p->per_sample[PW_ROLE_GENERATOR][PW_PLAN_GENERATE] +
                 p->per_sample[PW_ROLE_ACTOR][PW_PLAN_GENERATE];
    for (int r = 0; r < s->W; r++) {
        s->work[PW_PLAN_GENERATE][r] = gen * rows(s, s->producer, r);
        for (int ph = PW_PLAN_EVALUATE; ph <= PW_PLAN_TRAIN; ph++) {
            double w = 0;
            for (int role = 0; role < PW_ROLE_COUNT; role++)
                if (role != PW_ROLE_GENERATOR) w += p->per_sample[role][ph] * rows(s, role, r);
            s->work[ph][r] = w;
        }
        double fixed = 0;
        for (int role = 0; role < PW_ROLE_COUNT; role++) {
            if (pw_role_index(s->m, (PwRole)role, r) < 0) continue;
            fixed += p->fixed[role];
            if (role == PW_ROLE_ACTOR || role == PW_ROLE_CRITIC)
                s->work[PW_PLAN_TRAIN][r] += allreduce_s(s, s->m->role[role].nranks);
        }
        s->work[PW_PLAN_WEIGHTS][r] = fixed;
    }
}

static int holds(const Sim *s, int role, int r) { return pw_role_index(s->m, (PwRole)role, r) >= 0; }

/* The rank holds a role that scores the batch (actor, reference, critic, reward). */
static int evaluates(const Sim *s, int r)
{
    for (int role = 0; role < PW_ROLE_GENERATOR; role++)
        if (holds(s, role, r)) return 1;
    return 0;
}

/* When task (step, ph) of rank r may start: the latest arrival of what it receives, or -1 while
 * one of its senders has not finished. Tasks run in order on a rank, so only other ranks count. */
static double ready_at(const Sim *s, int step, int ph, int r)
{
    const PwPlanProfile *p = s->p;
    double t = 0;
#define NEED(st, phase, from, bytes)                                                              \
    do {                                                                                          \
        double f_ = s->fin[st][phase][from];                                                      \
        if (f_ < 0) return -1;                                                                    \
        f_ += msg_s(s, from, r, bytes);                                                           \
        if (f_ > t) t = f_;                                                                       \
    } while (0)
    const PwRoleRanks *prod = &s->m->role[s->producer];
    const PwRoleRanks *actor = &s->m->role[PW_ROLE_ACTOR];
    int a0 = actor->ranks[0];
    double wbytes = 4.0 * p->params;
    switch (ph) {
    case PW_PLAN_GENERATE:
        /* sampling waits for the weights the actor posted at the end of the step before (in
         * async mode too: then it samples the next step's batch with them); an actor that
         * samples itself has them already */
        if (!holds(s, s->producer, r) || s->producer == PW_ROLE_ACTOR || step < 1) break;
        NEED(step - 1, PW_PLAN_WEIGHTS, a0, wbytes);
        break;
    case PW_PLAN_EVALUATE: {
        int gstep = s->async && s->producer == PW_ROLE_GENERATOR ? (step ? step - 1 : 0) : step;
        if (!evaluates(s, r)) break;
        for (int i = 0; i < prod->nranks; i++)
            NEED(gstep, PW_PLAN_GENERATE, prod->ranks[i],
                 4.0 * (double)p->seq * (double)pw_block(p->N, prod->nranks, i).count);
        break;
    }
    case PW_PLAN_ADVANTAGES:
        if (!holds(s, PW_ROLE_ACTOR, r)) break;
        for (int q = 0; q < s->W; q++) /* the ranks that score: a generator's rank is not one */
            if (evaluates(s, q))
                NEED(step, PW_PLAN_EVALUATE, q, 4.0 * (double)p->resp * rows(s, PW_ROLE_ACTOR, r));
        break;
    case PW_PLAN_TRAIN:
        if (!holds(s, PW_ROLE_ACTOR, r) && !holds(s, PW_ROLE_CRITIC, r)) break;
        for (int i = 0; i < actor->nranks; i++)
            NEED(step, PW_PLAN_ADVANTAGES, actor->ranks[i],
                 4.0 * (double)p->resp * rows(s, PW_ROLE_CRITIC, r));
        break;
    case PW_PLAN_WEIGHTS:
        if (r != a0) break; /* actor rank 0 gathers every rank's report of the step */
        for (int q = 0; q < s->W; q++) NEED(step, PW_PLAN_TRAIN, q, 256.0);
        break;
    }
#undef NEED
    return t;
}

/* Run PW_SIM_STEPS steps on hw->cores shared cores: each busy rank runs one thread at
 * min(1, cores / load), load = busy ranks + wait_load x waiting ranks. */
static int simulate(Sim *s, PwErr *err)
{
    int W = s->W;
    int step[PW_PLAN_MAX_RANKS] = {0}, ph[PW_PLAN_MAX_RANKS] = {0};
    double rem[PW_PLAN_MAX_RANKS];
    for (int st = 0; st < PW_SIM_STEPS; st++)
        for (int k = 0; k < PW_PLAN_PHASES; k++)
            for (int r = 0; r < W; r++) s->fin[st][k][r] = -1;
    for (int r = 0; r < W; r++) rem[r] = -1; /* -1: the task has not started */
    double t = 0;
    for (long iter = 0;; iter++) {
        if (iter > 100000L * W) return pw_errf(err, "the simulation did not end");
        /* start what is ready, finish what has no work, until nothing changes */
        int busy[PW_PLAN_MAX_RANKS] = {0}, nbusy = 0, nwait = 0, left = 0;
        double next = INFINITY;
        for (int changed = 1; changed;) {
            changed = 0;
            for (int r = 0; r < W; r++) {
                if (step[r] >= PW_SIM_STEPS || rem[r] >= 0) continue;
                double at = ready_at(s, step[r], ph[r], r);
                if (at < 0 || at > t + 1e-15) continue;
                double w = s->work[ph[r]][r];
                if (s->async && step[r] == 0 && ph[r] == PW_PLAN_GENERATE &&
                    s->producer == PW_ROLE_GENERATOR)
                    w *= 2; /* step 0 samples batches 0 and 1 */
                if (s->async && step[r] == PW_SIM_STEPS - 1 && ph[r] == PW_PLAN_GENERATE &&
                    s->producer == PW_ROLE_GENERATOR)
                    w = 0; /* nothing is sampled past the last step */
                s->beg[step[r]][ph[r]][r] = t;
                if (w > 0) {
                    rem[r] = w;
                    continue;
                }
                s->fin[step[r]][ph[r]][r] = t;
                if (++ph[r] == PW_PLAN_PHASES) ph[r] = 0, step[r]++;
                changed = 1;
            }
        }
        for (int r = 0; r < W; r++) {
            if (step[r] >= PW_SIM_STEPS) continue;
            left++;
            if (rem[r] >= 0) {
                busy[r] = 1;
                nbusy++;
                continue;
            }
            nwait++;
            double at = ready_at(s, step[r], ph[r], r);
            if (at > t && at < next) next = at;
        }
        if (!left) break;
        double load = nbusy + s->hw->wait_load * nwait;
        double rate = load > s->hw->cores ? s->hw->cores / load : 1.0;
        for (int r = 0; r < W; r++)
            if (busy[r] && t + rem[r] / rate < next) next = t + rem[r] / rate;
        if (!isfinite(next)) return pw_errf(err, "the placement deadlocks in the model");
        double dt = next - t;
        t = next;
        for (int r = 0; r < W; r++) {
            if (!busy[r]) continue;
            rem[r] -= dt * rate;
            if (rem[r] > 1e-12 * (1 + t)) continue;
            s->fin[step[r]][ph[r]][r] = t;
            rem[r] = -1;
            if (++ph[r] == PW_PLAN_PHASES) ph[r] = 0, step[r]++;
        }
    }
    return 0;
}

/* A simulation of map on hw from prof, checked; NULL with err set. */
static Sim *sim_new(const PwPlanProfile *prof, const PwRoleMap *map, const PwPlanHw *hw,
                    PwErr *err)
{
    if (map->world_size < 1 || map->world_size > PW_PLAN_MAX_RANKS)
        return pw_errf(err, "%d ranks; the planner simulates 1..%d", map->world_size,
                       PW_PLAN_MAX_RANKS), NULL;
    static const PwRole needed[] = {PW_ROLE_ACTOR, PW_ROLE_CRITIC, PW_ROLE_REWARD};
    for (size_t i = 0; i < PW_ARRAY_LEN(needed); i++)
        if (!pw_role_present(map, needed[i]))
            return pw_errf(err, "the placement has no %s (the planner models ppo placements: "
                           "actor, critic and reward)", pw_role_name(needed[i])), NULL;
    if (pw_role_present(map, PW_ROLE_REFERENCE) && !prof->has_reference)
        return pw_errf(err, "the placement has a reference but the profile run measured "
                            "none; profile with a reference"), NULL;
    if (hw->cores < 1 || !(hw->bandwidth > 0) || !(hw->latency >= 0) || !(hw->wait_load >= 0))
        return pw_errf(err, "cores, bandwidth, latency and wait load must be positive"), NULL;
    Sim *s = calloc(1, sizeof *s);
    if (!s) return pw_errf(err, "out of memory"), NULL;
    s->p = prof;
    s->m = map;
    s->hw = hw;
    s->W = map->world_size;
    s->producer = pw_role_present(map, PW_ROLE_GENERATOR) ? PW_ROLE_GENERATOR : PW_ROLE_ACTOR;
    fill_work(s);
    return s;
}

int pw_plan_predict(const PwPlanProfile *prof, const PwRoleMap *map, const PwPlanHw *hw,
                    PwPlanResult *out, PwErr *err)
{
    memset(out, 0, sizeof *out);
    Sim *s = sim_new(prof, map, hw, err);
    if (!s) return -1;
    out->nranks = s->W;
    for (int r = 0; r < s->W; r++)
        for (int k = 0; k < PW_PLAN_PHASES; k++) out->busy_s[r] += s->work[k][r];
    int a0 = map->role[PW_ROLE_ACTOR].ranks[0];
    for (int mode = 0; mode < 2; mode++) {
        s->async = mode;
        if (simulate(s, err)) {
            free(s);
            return -1;
        }
        out->step_s[mode] = (s->fin[PW_SIM_LAST][PW_PLAN_WEIGHTS][a0] -
                             s->fin[PW_SIM_FIRST - 1][PW_PLAN_WEIGHTS][a0]) /
                            (PW_SIM_LAST - PW_SIM_FIRST + 1);
    }
    free(s);
    return 0;
}

void pw_plan_rank_roles(const PwRoleMap *m, int rank, char *buf, size_t n)
{
    buf[0] = 0;
    for (int role = 0; role < PW_ROLE_COUNT; role++)
        if (pw_role_index(m, (PwRole)role, rank) >= 0) {
            size_t len = strlen(buf);
            snprintf(buf + len, n - len, "%s%s", len ? "+" : "", pw_role_name((PwRole)role));
        }
}

int pw_plan_trace(const PwPlanProfile *prof, const PwRoleMap *map, const PwPlanHw *hw, int async,
                  FILE *f, PwErr *err)
{
    Sim *s = sim_new(prof, map, hw, err);
    if (!s) return -1;
    s->async = async;
    if (simulate(s, err)) {
        free(s);
        return -1;
    }
    /* one event a line, so that the file reads (and greps) by line */
    fprintf(f, "{\"traceEvents\": [\n");
    const char *sep = "";
    for (int r = 0; r < s->W; r++) {
        char roles[128];
        pw_plan_rank_roles(map, r, roles, sizeof roles);
        fprintf(f, "%s{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": 0, "
                   "\"args\": {\"name\": \"%s\"}}",
                sep, r, roles);
        sep = ",\n";
    }
    for (int st = PW_SIM_FIRST; st <= PW_SIM_LAST; st++)
        for (int k = 0; k < PW_PLAN_PHASES; k++)
            for (int r = 0; r < s->W; r++) {
                double b = s->beg[st][k][r], e = s->fin[st][k][r];
                if (!(e > b)) continue; /* a phase with no work of this rank */
                fprintf(f, "%s{\"ph\": \"X\", \"cat\": \"phase\", \"name\": \"%s\", "
                           "\"pid\": %d, \"tid\": 0, \"ts\": %.3f, \"dur\": %.3f, "
                           "\"args\": {\"step\": %d}}",
                        sep, pw_plan_phase_names[k], r, b * 1e6, (e - b) * 1e6, st);
            }
    fprintf(f, "\n]}\n");
    free(s);
    return ferror(f) ? pw_errf(err, "cannot write the trace") : 0;
}
