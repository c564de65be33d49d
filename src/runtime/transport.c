/* transport.c: the transfers of one PPO step (src/roles/ppo_step.c and optim.c) and the transport
 * each one takes between the ranks of a placement: the same-rank mailbox, MPI with or without
 * host staging (message.c), NCCL or MPI all-reduces (collective.c). Pure: it reads the placement
 * and the GPUs the ranks were given, so --dry-run can print it without starting a job. */
#include "pw_transport.h"

#include <stdlib.h>
#include <string.h>

#include "pw_collective.h"
#include "pw_message.h"

static const char *const transport_names[PW_TRANSPORT_COUNT] = {
    "none", "memory", "memory-staged", "mpi", "mpi-staged", "mpi-cuda", "nccl", "device-copy"};

const char *pw_transport_name(PwTransport t)
{
    return (t >= 0 && t < PW_TRANSPORT_COUNT) ? transport_names[t] : "?";
}

PwTransportOpts pw_transport_opts(int cuda_aware)
{
    return (PwTransportOpts){pw_collective_nccl_for(PW_DEVICE_CUDA), cuda_aware};
}

/* A message from world rank s to world rank d; dev: the tensor is on a GPU on either side.
 * message.c: the same rank goes through the mailbox (a host copy, with cudaMemcpy on a GPU
 * side); other ranks through MPI, GPU tensors staged in pinned host buffers unless MPI takes
 * device pointers. */
static PwTransport message_transport(const PwTransportOpts *o, int s, int d, int dev)
{
    if (s == d) return dev ? PW_TRANSPORT_MEMORY_STAGED : PW_TRANSPORT_MEMORY;
    if (!dev) return PW_TRANSPORT_MPI;
    return o->cuda_aware == 1 ? PW_TRANSPORT_MPI_CUDA : PW_TRANSPORT_MPI_STAGED;
}

/* The gradient all-reduce of a trained role (optim.c: only with more than one rank; the
 * gradients live on the role's device). collective.c: NCCL for a GPU role when built with it,
 * else MPI, through a host copy unless MPI takes device pointers. */
static PwTransport allreduce_transport(const PwPlacement *p, const PwTransportOpts *o, PwRole r)
{
    const PwRoleRanks *rr = &p->map.role[r];
    if (rr->nranks <= 1) return PW_TRANSPORT_NONE;
    if (rr->device != PW_DEVICE_CUDA) return PW_TRANSPORT_MPI;
    if (o->nccl) return PW_TRANSPORT_NCCL;
    return o->cuda_aware == 1 ? PW_TRANSPORT_MPI_CUDA : PW_TRANSPORT_MPI_STAGED;
}

/* The roles that train, and so all-reduce their gradients (ppo_step.c, optim.c). */
static const PwRole trained[] = {PW_ROLE_ACTOR, PW_ROLE_CRITIC};

/* ---------------------------------------------------------------------------------------------
 * Collecting the rank pairs of one transfer, then one entry per transport. */

typedef struct Pair {
    int transport, s, d;
} Pair;

typedef struct Out {
    PwTransfer *out;
    int max, n;
    Pair *pairs;
    int npairs, cap;
} Out;

static void add_pair(Out *c, PwTransport t, int s, int d)
{
    if (c->npairs == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        Pair *np = realloc(c->pairs, (size_t)cap * sizeof *np);
        if (!np) return; /* the table loses pairs, never the program */
        c->pairs = np;
        c->cap = cap;
    }
    c->pairs[c->npairs++] = (Pair){(int)t, s, d};
}

static int cmp_pair(const void *a, const void *b)
{
    const Pair *x = a, *y = b;
    if (x->transport != y->transport) return x->transport - y->transport;
    if (x->s != y->s) return x->s - y->s;
    return x->d - y->d;
}

/* The pairs from world ranks prod[] to cons[] that batch routing connects (message.c,
 * pw_route_sends), for a batch both counts divide. */
static void add_routes(Out *c, const PwTransportOpts *o, const int *prod, int np, const int *cons,
                       int nc, int dev)
{
    if (np <= 0 || nc <= 0) return;
    int64_t N = (int64_t)np * nc;
    PwRoute *r = malloc((size_t)nc * sizeof *r);
    if (!r) return;
    for (int i = 0; i < np; i++) {
        int n = pw_route_sends(N, np, i, nc, r, nc);
        for (int k = 0; k < n && k < nc; k++)
            add_pair(c, message_transport(o, prod[i], cons[r[k].peer], dev), prod[i],
                     cons[r[k].peer]);
    }
    free(r);
}

/* Appends `item` to a comma list of at most LIST_MAX items; the next one says how many were left
 * ("+N", `left` counting the item in hand), and later ones are dropped. */
#define LIST_MAX 16

static void list_append(char *buf, size_t len, int *shown, int left, const char *item)
{
    size_t n = strlen(buf);
    if (*shown == LIST_MAX) {
        snprintf(buf + n, len - n, ",+%d", left);
        (*shown)++;
        return;
    }
    if (*shown > LIST_MAX) return;
    snprintf(buf + n, len - n, "%s%s", *shown ? "," : "", item);
    (*shown)++;
}

/* One entry per transport among the collected pairs (sorted, each pair once), in the order of
 * PwTransport. */
static void flush(Out *c, const char *phase, const char *data, PwRole from, PwRole to)
{
    if (c->npairs == 0) return; /* nothing collected (pairs may be NULL: qsort may not see it) */
    qsort(c->pairs, (size_t)c->npairs, sizeof *c->pairs, cmp_pair);
    int u = 0;
    for (int i = 0; i < c->npairs; i++)
        if (u == 0 || cmp_pair(&c->pairs[i], &c->pairs[u - 1])) c->pairs[u++] = c->pairs[i];
    for (int i = 0; i < u;) {
        int j = i;
        while (j < u && c->pairs[j].transport == c->pairs[i].transport) j++;
        if (c->n < c->max) {
            PwTransfer *t = &c->out[c->n];
            memset(t, 0, sizeof *t);
            t->phase = phase;
            snprintf(t->data, sizeof t->data, "%s", data);
            t->from = from;
            t->to = to;
            t->transport = (PwTransport)c->pairs[i].transport;
            int shown = 0;
            for (int k = i; k < j; k++) {
                char item[32];
                snprintf(item, sizeof item, "%d->%d", c->pairs[k].s, c->pairs[k].d);
                list_append(t->ranks, sizeof t->ranks, &shown, j - k, item);
            }
        }
        c->n++;
        i = j;
    }
    c->npairs = 0;
}

static void add_allreduce(Out *c, const PwPlacement *p, const PwTransportOpts *o, PwRole r)
{
    const PwRoleRanks *rr = &p->map.role[r];
    if (rr->nranks <= 0) return;
    if (c->n < c->max) {
        PwTransfer *t = &c->out[c->n];
        memset(t, 0, sizeof *t);
        t->phase = "train";
        snprintf(t->data, sizeof t->data, "gradients");
        t->from = t->to = r;
        t->allreduce = 1;
        t->transport = allreduce_transport(p, o, r);
        int shown = 0;
        for (int i = 0; i < rr->nranks; i++) {
            char item[16];
            snprintf(item, sizeof item, "%d", rr->ranks[i]);
            list_append(t->ranks, sizeof t->ranks, &shown, rr->nranks - i, item);
        }
        for (char *q = t->ranks; *q; q++)
            if (*q == ',') *q = '+';
    }
    c->n++;
}

int pw_transfers(const PwPlacement *p, const PwTransportOpts *o, PwTransfer *out, int max)
{
    const PwRoleMap *m = &p->map;
    Out c = {out, max, 0, NULL, 0, 0};
    const PwRoleRanks *act = &m->role[PW_ROLE_ACTOR], *ref = &m->role[PW_ROLE_REFERENCE],
                      *cri = &m->role[PW_ROLE_CRITIC], *rew = &m->role[PW_ROLE_REWARD],
                      *gen = &m->role[PW_ROLE_GENERATOR];
    /* generate: the generator, or the actor without one, hands the rollouts on (host rows) */
    PwRole pr = gen->nranks ? PW_ROLE_GENERATOR : PW_ROLE_ACTOR;
    const PwRoleRanks *prod = &m->role[pr];
    char rollout[64];
    snprintf(rollout, sizeof rollout, "%s,%s,%s", pw_msg_kind_name(PW_MSG_TOKENS),
             pw_msg_kind_name(PW_MSG_LOGP_GEN), pw_msg_kind_name(PW_MSG_VERSIONS));
    const char *tokens = pw_msg_kind_name(PW_MSG_TOKENS);
    if (pr != PW_ROLE_ACTOR) {
        add_routes(&c, o, prod->ranks, prod->nranks, act->ranks, act->nranks, 0);
        flush(&c, "generate", rollout, pr, PW_ROLE_ACTOR);
    }
    add_routes(&c, o, prod->ranks, prod->nranks, ref->ranks, ref->nranks, 0);
    flush(&c, "generate", tokens, pr, PW_ROLE_REFERENCE);
    add_routes(&c, o, prod->ranks, prod->nranks, cri->ranks, cri->nranks, 0);
    flush(&c, "generate", tokens, pr, PW_ROLE_CRITIC);
    /* each reward member's ranks get the rows (without members in the placement, every reward
     * rank serves every member) */
    for (int k = 0; k < m->n_reward_models; k++)
        add_routes(&c, o, prod->ranks, prod->nranks, m->reward_models[k].ranks,
                   m->reward_models[k].nranks, 0);
    if (!m->n_reward_models)
        add_routes(&c, o, prod->ranks, prod->nranks, rew->ranks, rew->nranks, 0);
    flush(&c, "generate", tokens, pr, PW_ROLE_REWARD);

    /* evaluate: log-probs, values and scores back to the actor (host rows) */
    add_routes(&c, o, ref->ranks, ref->nranks, act->ranks, act->nranks, 0);
    flush(&c, "evaluate", pw_msg_kind_name(PW_MSG_LOGP_REF), PW_ROLE_REFERENCE, PW_ROLE_ACTOR);
    add_routes(&c, o, cri->ranks, cri->nranks, act->ranks, act->nranks, 0);
    flush(&c, "evaluate", pw_msg_kind_name(PW_MSG_VALUES), PW_ROLE_CRITIC, PW_ROLE_ACTOR);
    for (int k = 0; k < m->n_reward_models; k++)
        add_routes(&c, o, m->reward_models[k].ranks, m->reward_models[k].nranks, act->ranks,
                   act->nranks, 0);
    if (!m->n_reward_models)
        add_routes(&c, o, rew->ranks, rew->nranks, act->ranks, act->nranks, 0);
    flush(&c, "evaluate", pw_msg_kind_name(PW_MSG_SCORES), PW_ROLE_REWARD, PW_ROLE_ACTOR);

    /* advantages: the returns the critic trains on */
    add_routes(&c, o, act->ranks, act->nranks, cri->ranks, cri->nranks, 0);
    flush(&c, "advantages", pw_msg_kind_name(PW_MSG_RETURNS), PW_ROLE_ACTOR, PW_ROLE_CRITIC);

    for (size_t i = 0; i < PW_ARRAY_LEN(trained); i++) add_allreduce(&c, p, o, trained[i]);

    /* weights: the actor's parameters, one buffer on the actor's device, from actor rank 0 to
     * every generator rank as one broadcast (fanout.c), into the generator's parameters on its
     * device; a generator on actor rank 0's own rank is written directly (one copy) */
    if (gen->nranks && act->nranks) {
        int dev = act->device == PW_DEVICE_CUDA || gen->device == PW_DEVICE_CUDA;
        for (int g = 0; g < gen->nranks; g++) {
            int s = act->ranks[0], d = gen->ranks[g];
            PwTransport t = s != d ? message_transport(o, s, d, dev)
                            : dev  ? PW_TRANSPORT_DEVICE_COPY
                                   : PW_TRANSPORT_MEMORY;
            add_pair(&c, t, s, d);
        }
        int first = c.n;
        flush(&c, "weights", pw_msg_kind_name(PW_MSG_WEIGHTS), PW_ROLE_ACTOR, PW_ROLE_GENERATOR);
        for (int i = first; i < c.n && i < max; i++)
            out[i].broadcast = out[i].transport != PW_TRANSPORT_MEMORY &&
                               out[i].transport != PW_TRANSPORT_DEVICE_COPY;
    }

    /* report: every rank of every role tells actor rank 0 its times (host rows) */
    for (int r = 0; r < PW_ROLE_COUNT && act->nranks; r++) {
        for (int i = 0; i < m->role[r].nranks; i++)
            add_pair(&c, message_transport(o, m->role[r].ranks[i], act->ranks[0], 0),
                     m->role[r].ranks[i], act->ranks[0]);
        flush(&c, "report", pw_msg_kind_name(PW_MSG_REPORT), (PwRole)r, PW_ROLE_ACTOR);
    }
    free(c.pairs);
    return c.n;
}

/* ---------------------------------------------------------------------------------------------
 * The table */

enum { C_PHASE, C_DATA, C_FROM, C_TO, C_TRANSPORT, C_RANKS, NC };

/* `to` holds the receiving side's cell of a broadcast. */
static void cells(const PwTransfer *t, const char *c[NC], char to[48])
{
    c[C_PHASE] = t->phase;
    c[C_DATA] = t->data;
    c[C_FROM] = pw_role_name(t->from);
    snprintf(to, 48, "%s (broadcast)", pw_role_name(t->to));
    c[C_TO] = t->allreduce ? "(all-reduce)" : t->broadcast ? to : pw_role_name(t->to);
    c[C_TRANSPORT] = pw_transport_name(t->transport);
    c[C_RANKS] = t->ranks;
}

static void row(FILE *f, const int *w, const char *const c[NC])
{
    for (int k = 0; k + 1 < NC; k++) fprintf(f, "%-*s  ", w[k], c[k]);
    fprintf(f, "%s\n", c[NC - 1]);
}

void pw_transport_report(FILE *f, const PwPlacement *p, const PwTransportOpts *o)
{
    int n = pw_transfers(p, o, NULL, 0);
    PwTransfer *t = calloc((size_t)(n ? n : 1), sizeof *t);
    if (!t) {
        fprintf(f, "transports: out of memory for %d rows\n", n);
        return;
    }
    pw_transfers(p, o, t, n);
    static const char *const head[NC] = {"phase", "data", "from", "to", "transport", "ranks"};
    int w[NC];
    const char *c[NC];
    char to[48];
    for (int k = 0; k < NC; k++) w[k] = (int)strlen(head[k]);
    for (int i = 0; i < n; i++) {
        cells(&t[i], c, to);
        for (int k = 0; k < NC; k++)
            if ((int)strlen(c[k]) > w[k]) w[k] = (int)strlen(c[k]);
    }
    fprintf(f, "transports: NCCL %s; MPI takes GPU pointers: %s\n",
            o->nccl ? "built" : "not built",
            o->cuda_aware == 1   ? "yes (mpi-cuda)"
            : o->cuda_aware == 0 ? "no (GPU tensors between ranks: mpi-staged)"
                                 : "not known without mpirun (GPU tensors between ranks shown "
                                   "mpi-staged; a CUDA-aware MPI makes them mpi-cuda)");
    row(f, w, head);
    for (int i = 0; i < n; i++) {
        cells(&t[i], c, to);
        row(f, w, c);
    }
    if (!pw_role_present(&p->map, PW_ROLE_GENERATOR))
        fprintf(f, "weights: none (no generator: the actor generates with its own weights)\n");
    fflush(f);
    free(t);
}

/* ---------------------------------------------------------------------------------------------
 * The check */

int pw_transport_check(const PwPlacement *p, const PwTransportOpts *o, const PwRankGpu *gpus,
                       PwErr *err)
{
    for (size_t k = 0; k < PW_ARRAY_LEN(trained); k++) {
        PwRole r = trained[k];
        if (allreduce_transport(p, o, r) != PW_TRANSPORT_NCCL) continue;
        const PwRoleRanks *rr = &p->map.role[r];
        for (int i = 0; i < rr->nranks; i++)
            for (int j = i + 1; j < rr->nranks; j++) {
                const PwRankGpu *a = &gpus[rr->ranks[i]], *b = &gpus[rr->ranks[j]];
                int known = a->pci[0] && b->pci[0];
                if (a->gpu < 0 || b->gpu < 0 || strcmp(a->host, b->host) ||
                    (known ? strcmp(a->pci, b->pci) != 0 : a->gpu != b->gpu))
                    continue;
                return pw_errf(err,
                               "%s:%d:%d: key 'roles.%s.ranks': ranks %d and %d of role %s share "
                               "GPU cuda:%d%s%s on host %s; NCCL refuses two ranks of one "
                               "communicator on one GPU; expected one rank per GPU for a role "
                               "with more than one rank (or give the role one rank)",
                               p->path, p->ranks_mark[r].line, p->ranks_mark[r].col,
                               pw_role_name(r), rr->ranks[i], rr->ranks[j], pw_role_name(r),
                               a->gpu, known ? "@" : "", known ? a->pci : "", a->host);
            }
    }
    return 0;
}
