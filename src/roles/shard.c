/* shard.c: the AdamW moments split over a role's ranks (shard.h): the blocks, the weights'
 * all-gather after an update, and for a checkpoint the float32 weights gathered and the moments
 * written as they are gathered. */
#include <stdio.h>
#include <stdlib.h>

#include "pw_collective.h"
#include "shard.h"

enum { SHARD_ALIGN = 64 }; /* floats */

/* Where block k of the nranks blocks over n floats starts (k = nranks: n): each block but the
 * last ones an equal split rounded up to SHARD_ALIGN */
static size_t block_start(int nranks, size_t n, int k)
{
    size_t per = (n + (size_t)nranks - 1) / (size_t)nranks;
    per = (per + SHARD_ALIGN - 1) / SHARD_ALIGN * SHARD_ALIGN;
    size_t s = (size_t)k * per;
    return s < n ? s : n;
}

/* starts[k] of the nranks blocks over n floats (nranks + 1 of them, starts[nranks] = n) */
static void shard_starts(int nranks, size_t n, int64_t *starts)
{
    for (int k = 0; k <= nranks; k++) starts[k] = (int64_t)block_start(nranks, n, k);
}

int pw_shard_plan(int zero_stage, int nranks, int k, const PwArch *arch, const PwModelOpts *o,
                  PwModelBytes *b, PwErr *err)
{
    if (pw_model_plan(arch, o, b, err)) return -1;
    if (zero_stage < 1 || nranks < 2) return 0;
    size_t n = b->grads / sizeof(float), lo = block_start(nranks, n, k);
    size_t hi = block_start(nranks, n, k + 1);
    return zero_stage >= 2 ? pw_model_plan_split(arch, o, lo, hi, b, err)
                           : pw_model_plan_share(arch, o, lo, hi, b, err);
}

/* optim.zero_stage 2: what the model's split gradients ask of the role (PwGradSplit) */
typedef struct GradCtx {
    PwWorld *w;
    PwRole role;
    PwDevice device;
    int device_id;
} GradCtx;

static void grad_reduce(void *ctx, float *buf, const int64_t *starts)
{
    GradCtx *g = ctx;
    int n = g->w->map.role[g->role].nranks;
    int64_t shape[1] = {starts[n]};
    PwTensor t = pw_tensor_on(buf, PW_DTYPE_F32, 1, shape, g->device, g->device_id);
    PwErr err;
    if (pw_reduce_scatter_blocks(g->w, g->role, &t, starts, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s: the gradients' reduce-scatter: %s",
                      pw_role_name(g->role), err.msg);
}

static double grad_sum(void *ctx, double v)
{
    GradCtx *g = ctx;
    int64_t shape[1] = {1};
    PwTensor t = pw_tensor_host(&v, PW_DTYPE_F64, 1, shape);
    PwErr err;
    if (pw_allreduce(g->w, g->role, &t, PW_REDUCE_SUM, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s: the gradient's norm: %s", pw_role_name(g->role),
                      err.msg);
    return v;
}

int64_t *pw_shard_begin(PwWorld *w, PwRole role, PwModel *m, int zero_stage, const char *who)
{
    int n = w->map.role[role].nranks, me = w->role_rank[role];
    if (zero_stage >= 1 && n < 2) /* said once, so that nobody counts on memory it does not save */
        fprintf(stderr, "ppo_world: note: optim.zero_stage %d: %s has one rank, so it keeps its "
                "AdamW moments%s float32 weights whole (more ranks split them)\n", zero_stage,
                who, zero_stage >= 2 ? ", gradients and" : " and");
    if (zero_stage < 1 || n < 2) return NULL;
    int64_t *starts = malloc((size_t)(n + 1) * sizeof *starts);
    if (!starts) pw_comm_fatal(__FILE__, __LINE__, "out of memory");
    shard_starts(n, pw_model_num_params(m), starts);
    PwErr err;
    if (pw_model_optimizer_shard(m, (size_t)starts[me], (size_t)starts[me + 1], &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s: optim.zero_stage: %s", pw_role_name(role),
                      err.msg);
    if (zero_stage >= 2) { /* the model frees ctx with itself */
        GradCtx *g = malloc(sizeof *g);
        if (!g) pw_comm_fatal(__FILE__, __LINE__, "out of memory");
        *g = (GradCtx){w, role, pw_model_device(m), pw_model_device_id(m)};
        PwGradSplit fn = {grad_reduce, grad_sum, free, g};
        if (pw_model_grads_split(m, starts, n, me, &fn, &err))
            pw_comm_fatal(__FILE__, __LINE__, "%s: optim.zero_stage 2: %s", pw_role_name(role),
                          err.msg);
    }
    return starts;
}

/* starts mapped to the float32 of the tensors a model with split master weights keeps whole
 * (pw_model_kept) */
static int64_t *kept_starts(int n, const PwModel *m, const int64_t *starts)
{
    int64_t *s = malloc((size_t)(n + 1) * sizeof *s);
    if (!s) pw_comm_fatal(__FILE__, __LINE__, "out of memory");
    for (int k = 0; k <= n; k++)
        s[k] = starts[k] - (int64_t)pw_model_master_before(m, (size_t)starts[k]);
    return s;
}

void pw_shard_gather_weights(PwWorld *w, PwRole role, PwModel *m, const int64_t *starts)
{
    if (!starts) return;
    PwErr err;
    if (!pw_model_master_split(m)) {
        PwTensor p = pw_model_params(m); /* marks the bfloat16 copy stale: the next use makes it */
        if (pw_allgather_blocks(w, role, &p, starts, &err))
            pw_comm_fatal(__FILE__, __LINE__, "%s: the weights' all-gather: %s",
                          pw_role_name(role), err.msg);
        return;
    }
    /* split master weights: the bfloat16 copy of every tensor, which the forward reads, and the
     * float32 of the tensors kept whole, each in the ranks' blocks */
    int64_t *ks = kept_starts(w->map.role[role].nranks, m, starts);
    PwTensor b16 = pw_model_mirror(m), f32 = pw_model_kept(m);
    if (pw_allgather_blocks(w, role, &b16, starts, &err) ||
        pw_allgather_blocks(w, role, &f32, ks, &err))
        pw_comm_fatal(__FILE__, __LINE__, "%s: the weights' all-gather: %s", pw_role_name(role),
                      err.msg);
    free(ks);
}

float *pw_shard_gather_master(PwWorld *w, PwRole role, PwModel *m, const int64_t *starts)
{
    if (!starts || !pw_model_master_split(m)) return NULL;
    const int n = w->map.role[role].nranks, me = w->role_rank[role];
    const size_t P = pw_model_num_params(m), lo = (size_t)starts[me];
    size_t glo = pw_model_master_before(m, lo);
    size_t mine = pw_model_master_before(m, (size_t)starts[me + 1]) - glo;
    /* rank 0 gathers straight into the flat layout pw_model_save_master writes from: one
     * gather a split tensor, whose blocks are the ranks' blocks cut to it, so that no second
     * copy of the weights is made (4 bytes a parameter on one host) */
    float *hm = malloc((mine ? mine : 1) * sizeof *hm);
    float *whole = me == 0 ? calloc(P ? P : 1, sizeof *whole) : NULL;
    int64_t *ts = malloc((size_t)(n + 1) * sizeof *ts);
    if (!hm || !ts || (me == 0 && !whole))
        pw_comm_fatal(__FILE__, __LINE__, "checkpoint: out of host memory for the %s's float32 "
                      "weights", pw_role_name(role));
    PwErr err;
    if (pw_model_master_get(m, hm, &err))
        pw_comm_fatal(__FILE__, __LINE__, "checkpoint: the %s's float32 weights: %s",
                      pw_role_name(role), err.msg);
    for (int i = 0; i < pw_model_num_tensors(m); i++) {
        size_t off, cnt;
        pw_model_tensor_info(m, i, &off, &cnt);
        if (!cnt || pw_model_master_before(m, off + cnt) - pw_model_master_before(m, off) != cnt)
            continue; /* empty, or kept whole: the model writes it */
        for (int k = 0; k <= n; k++) {
            size_t s = (size_t)starts[k];
            ts[k] = (int64_t)((s < off ? off : s > off + cnt ? off + cnt : s) - off);
        }
        /* this rank's part of the tensor, where its share holds it (none: any pointer) */
        const float *part = ts[me + 1] > ts[me]
                                ? hm + (pw_model_master_before(m, off + (size_t)ts[me]) - glo)
                                : hm;
        if (pw_gather_blocks(w, role, part, me == 0 ? whole + off : NULL, PW_DTYPE_F32, ts, 0,
                             &err))
            pw_comm_fatal(__FILE__, __LINE__, "checkpoint: the %s's float32 weights: %s",
                          pw_role_name(role), err.msg);
    }
    free(ts);
    free(hm);
    return whole;
}

/* pw_shard_write_moments' source: each piece of the whole moments gathered from the ranks whose
 * blocks it crosses, on every rank of the role alike */
typedef struct MomentCtx {
    PwWorld *w;
    PwRole role;
    PwModel *m;
    const int64_t *starts;
    int64_t *ts;  /* (nranks + 1) the blocks cut to the piece */
    float *mine;  /* this rank's part of a piece */
} MomentCtx;

static void moment_piece(void *ctx, int which, size_t off, size_t n, float *dst)
{
    MomentCtx *c = ctx;
    const int nr = c->w->map.role[c->role].nranks, me = c->w->role_rank[c->role];
    for (int k = 0; k <= nr; k++) {
        size_t s = (size_t)c->starts[k];
        c->ts[k] = (int64_t)((s < off ? off : s > off + n ? off + n : s) - off);
    }
    PwErr err;
    size_t mine = (size_t)(c->ts[me + 1] - c->ts[me]);
    if ((mine && pw_model_optimizer_get_part(c->m, which, off + (size_t)c->ts[me], mine,
                                             c->mine, &err)) ||
        pw_gather_blocks(c->w, c->role, c->mine, me == 0 ? dst : NULL, PW_DTYPE_F32, c->ts, 0,
                         &err))
        pw_comm_fatal(__FILE__, __LINE__, "checkpoint: the %s's AdamW moments: %s",
                      pw_role_name(c->role), err.msg);
}

void pw_shard_write_moments(PwWorld *w, PwRole role, PwModel *m, const int64_t *starts,
                            const char *path)
{
    /* every rank took the same updates, so all of them have moments or none has */
    if (!starts || !pw_model_has_optimizer(m)) return;
    const int nr = w->map.role[role].nranks;
    size_t piece = pw_model_stream_floats ? pw_model_stream_floats : 1;
    MomentCtx c = {w, role, m, starts, malloc((size_t)(nr + 1) * sizeof *c.ts),
                   malloc(piece * sizeof *c.mine)};
    if (!c.ts || !c.mine)
        pw_comm_fatal(__FILE__, __LINE__, "checkpoint: out of host memory for the %s's AdamW "
                      "moments", pw_role_name(role));
    PwErr err;
    if (pw_model_optimizer_write_from(m, w->role_rank[role] == 0 ? path : NULL, moment_piece, &c,
                                      &err))
        pw_comm_fatal(__FILE__, __LINE__, "checkpoint: %s", err.msg);
    free(c.ts);
    free(c.mine);
}
