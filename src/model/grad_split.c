/* grad_split.c: the gradients split over a role's ranks (optim.zero_stage 2, ZeRO stage 2;
 * pw_model.h, pw_model_grads_split). A model keeps the summed gradient of its optimiser share
 * alone. Its backward writes each group of tensors that becomes final at one point into a buffer
 * instead of the whole gradient: the heads and the final norm (PW_READY_TOP, final after the
 * heads' backward), each layer's slice of the tensors made layer by layer (PW_READY_LAYER), and
 * the embeddings (PW_READY_BOTTOM, final at the end). As soon as a group is final the ranks sum
 * its buffer block by block (the caller's reduce), each rank adds its block into its share, and
 * the buffer is zeroed for the next group: the groups take turns in one buffer, the largest
 * group's size. An embedding that is the LM head too (tied) takes the head's gradient at the
 * start of the backward and the embedding's at the end, so it has a buffer of its own. */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

enum { SEG_ALIGN = 64 }; /* floats: each tensor's place in a buffer starts on 256 bytes */

struct PwGradShare {
    PwGradSplit fn;
    int nranks, rank;
    int64_t *shares;        /* (nranks + 1) the role's blocks of the parameters */
    int64_t *starts;        /* (nranks + 1) one reduction's blocks of its buffer */
    float *memory;          /* share | turns | bottom in one allocation; NULL before the first
                             * zero_grad and while a payload of weights_out holds its place */
    float *share;           /* the share's summed gradient */
    float *turns;           /* the buffer the groups take turns in */
    float *bottom;          /* the embeddings' own (a tied LM head), else turns */
    size_t nshare, nturns, nbottom; /* floats of each part (nbottom 0: in turns) */
    size_t seg_len[3];      /* floats of the top group, of a layer's, of the bottom group */
    size_t seg_off[PW_MODEL_MAX_TENSORS]; /* tensor i's place in its group's buffer */
};

static size_t align(size_t n) { return (n + SEG_ALIGN - 1) / SEG_ALIGN * SEG_ALIGN; }

/* The groups: TOP (-1), layers 0 .. L-1, BOTTOM (L) */
static int group_of(const PwModel *m, int i)
{
    int c = m->impl->tensor_ready[i], L = m->arch.n_layer;
    return c == PW_READY_BOTTOM ? L : c == PW_READY_LAYER && L > 0 ? 0 : -1;
}
static int kind(const PwModel *m, int g) { return g < 0 ? 0 : g < m->arch.n_layer ? 1 : 2; }

/* Tensor i's floats of the parameters in group g: [*first, *first + *len); *len 0 when the
 * tensor is not in that group. */
static void seg_range(const PwModel *m, int i, int g, size_t *first, size_t *len)
{
    *first = *len = 0;
    int gi = group_of(m, i), L = m->arch.n_layer;
    if (!m->tensor_size[i] || kind(m, gi) != kind(m, g)) return;
    if (kind(m, g) != 1) {
        *first = m->tensor_off[i];
        *len = m->tensor_size[i];
        return;
    }
    *len = m->tensor_size[i] / (size_t)L;
    *first = m->tensor_off[i] + (size_t)g * *len;
}

/* Whether the LM head's gradient goes into a BOTTOM tensor (the embedding of a tied head),
 * written at the start of the backward and at its end */
static int bottom_early(const PwModel *m)
{
    return (m->heads & PW_HEAD_LM) && group_of(m, m->impl->lm_tensor(m)) == m->arch.n_layer;
}

/* Each tensor's place in its group's buffer, the groups' sizes, and the buffers' */
static void seg_layout(const PwModel *m, size_t *off, size_t *len, size_t *nturns,
                       size_t *nbottom)
{
    len[0] = len[1] = len[2] = 0;
    for (int i = 0; i < m->ntensors; i++) {
        size_t first, n;
        int g = group_of(m, i);
        seg_range(m, i, g, &first, &n);
        size_t *k = &len[kind(m, g)];
        off[i] = *k;
        if (n) *k = align(*k + n);
    }
    int own = bottom_early(m);
    *nturns = len[0] > len[1] ? len[0] : len[1];
    if (!own && len[2] > *nturns) *nturns = len[2];
    *nbottom = own ? len[2] : 0;
}

size_t pw_grad_split_floats(const PwModel *m, size_t lo, size_t hi)
{
    size_t off[PW_MODEL_MAX_TENSORS], len[3], nturns, nbottom;
    seg_layout(m, off, len, &nturns, &nbottom);
    return align(hi - lo) + nturns + nbottom;
}

static float *seg_buf(const struct PwGradShare *g, const PwModel *m, int grp)
{
    return kind(m, grp) == 2 ? g->bottom : g->turns;
}

/* Where flat float x of the parameters falls in group grp's buffer: its place there when a
 * tensor of the group holds it, else the place of the next float the group holds (the group's
 * end after the last), so that the ranks' blocks of the parameters become blocks of the buffer
 * covering the group (the alignment's gaps go with a block and add zeros). */
static size_t seg_pos(const PwModel *m, int grp, size_t x)
{
    const struct PwGradShare *g = m->gsplit;
    for (int i = 0; i < m->ntensors; i++) {
        size_t first, len;
        seg_range(m, i, grp, &first, &len);
        if (len && x < first + len) return g->seg_off[i] + (x > first ? x - first : 0);
    }
    return g->seg_len[kind(m, grp)];
}

int pw_model_grads_split(PwModel *m, const int64_t *shares, int nranks, int rank,
                         const PwGradSplit *s, PwErr *err)
{
    if (m->frozen || m->follows)
        return pw_errf(err, "only a trained model has gradients to split");
    if (m->gsplit) return pw_errf(err, "the gradients are split once");
    if (m->grads)
        return pw_errf(err, "the gradients are split before they exist (before the first "
                       "zero_grad or backward)");
    if (!s || !s->reduce || !s->sum)
        return pw_errf(err, "split gradients need a reduction and a sum over the ranks");
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return pw_errf(err, "rank %d of %d ranks", rank, nranks);
    for (int k = 0; k < nranks; k++)
        if (shares[k] < 0 || shares[k + 1] < shares[k])
            return pw_errf(err, "the gradients' block %d [%lld, %lld) is not a range", k,
                           (long long)shares[k], (long long)shares[k + 1]);
    if (shares[0] != 0 || (size_t)shares[nranks] != m->num_params)
        return pw_errf(err, "the gradients' blocks cover [%lld, %lld), not the model's %zu "
                       "parameters", (long long)shares[0], (long long)shares[nranks],
                       m->num_params);
    if ((size_t)shares[rank] != m->opt_lo || (size_t)shares[rank + 1] != m->opt_hi)
        return pw_errf(err, "block %d of the gradients [%lld, %lld) is not the optimiser's "
                       "share [%zu, %zu) (pw_model_optimizer_shard first)", rank,
                       (long long)shares[rank], (long long)shares[rank + 1], m->opt_lo,
                       m->opt_hi);
    struct PwGradShare *g = calloc(1, sizeof *g);
    int64_t *sh = malloc(2 * (size_t)(nranks + 1) * sizeof *sh);
    if (!g || !sh) {
        free(g);
        free(sh);
        return pw_errf(err, "out of host memory");
    }
    memcpy(sh, shares, (size_t)(nranks + 1) * sizeof *sh);
    g->fn = *s;
    g->nranks = nranks;
    g->rank = rank;
    g->shares = sh;
    g->starts = sh + nranks + 1;
    seg_layout(m, g->seg_off, g->seg_len, &g->nturns, &g->nbottom);
    g->nshare = align(m->opt_hi - m->opt_lo);
    m->gsplit = g;
    return 0;
}

int pw_model_grads_are_split(const PwModel *m) { return m->gsplit != NULL; }

float *pw_grad_split_share(const PwModel *m) { return m->gsplit->memory ? m->gsplit->share : NULL; }

void pw_grad_split_release(PwModel *m)
{
    struct PwGradShare *g = m->gsplit;
    m->ops->free(m->ops, g->memory);
    g->memory = g->share = g->turns = g->bottom = NULL;
}

void pw_grad_split_free(PwModel *m)
{
    struct PwGradShare *g = m->gsplit;
    if (!g) return;
    pw_grad_split_release(m);
    if (g->fn.release) g->fn.release(g->fn.ctx);
    free(g->shares);
    free(g);
    m->gsplit = NULL;
}

int pw_grad_split_zero(PwModel *m, PwErr *err)
{
    struct PwGradShare *g = m->gsplit;
    const PwOps *o = m->ops;
    size_t n = g->nshare + g->nturns + g->nbottom;
    if (!g->memory) {
        /* a payload of pw_model_weights_out held their place since the last update */
        o->free(o, m->grads);
        m->grads = NULL;
        if (!(g->memory = o->alloc(o, (n ? n : 1) * sizeof(float))))
            return pw_model_no_room(m, "the gradients' share and the buffers a backward sums",
                                    n * sizeof(float), err);
        g->share = g->memory;
        g->turns = g->share + g->nshare;
        g->bottom = g->nbottom ? g->turns + g->nturns : g->turns;
    }
    o->zero(o, g->memory, n * sizeof(float));
    return 0;
}

void pw_grad_split_clear(PwModel *m)
{
    struct PwGradShare *g = m->gsplit;
    if (g->memory) m->ops->zero(m->ops, g->turns, (g->nturns + g->nbottom) * sizeof(float));
}

/* Group grp's buffer summed over the ranks, this rank's block added into its share, and the
 * group's part of the buffer zeroed for the next group (the rest of it is zero already). */
static void reduce_seg(PwModel *m, int grp)
{
    struct PwGradShare *g = m->gsplit;
    const PwOps *o = m->ops;
    float *buf = seg_buf(g, m, grp);
    for (int k = 0; k <= g->nranks; k++)
        g->starts[k] = (int64_t)seg_pos(m, grp, (size_t)g->shares[k]);
    o->sync(o); /* the backward's writes, before another library reads the buffer */
    g->fn.reduce(g->fn.ctx, buf, g->starts);
    const size_t lo = m->opt_lo, hi = m->opt_hi;
    for (int i = 0; i < m->ntensors; i++) {
        size_t first, len;
        seg_range(m, i, grp, &first, &len);
        size_t a = first > lo ? first : lo, b = first + len < hi ? first + len : hi;
        if (!len || a >= b) continue;
        float *dst = g->share + (a - lo);
        o->residual_forward(o, dst, dst, buf + g->seg_off[i] + (a - first), b - a);
    }
    o->zero(o, buf, g->seg_len[kind(m, grp)] * sizeof(float));
}

void pw_grad_split_top(PwModel *m) { reduce_seg(m, -1); }

void pw_grad_split_layer(PwModel *m, int l) { reduce_seg(m, l); }

void pw_grad_split_bottom(PwModel *m) { reduce_seg(m, m->arch.n_layer); }

int pw_model_backward_idle(PwModel *m, PwErr *err)
{
    if (!m->gsplit) return pw_errf(err, "the model's gradients are not split");
    if (m->grads_spent) return pw_errf(err, PW_GRADS_SPENT, "a backward");
    if (!m->gsplit->memory && pw_model_zero_grad(m, err)) return -1;
    /* the order of every backward: the top, layers L-1 down to 0, the bottom (grad_ready.c) */
    for (int grp = -1; grp <= m->arch.n_layer; grp++)
        reduce_seg(m, grp < 0 || grp == m->arch.n_layer ? grp : m->arch.n_layer - 1 - grp);
    return 0;
}

int pw_model_grads_get(PwModel *m, float *h, PwErr *err)
{
    if (!m->gsplit) return pw_errf(err, "the model's gradients are not split");
    if (!m->gsplit->memory || m->grads_spent)
        return pw_errf(err, "the gradients' share holds no backward's gradients");
    m->ops->copy(m->ops, h, m->gsplit->share, (m->opt_hi - m->opt_lo) * sizeof(float),
                 PW_COPY_D2H);
    return 0;
}

void pw_model_grad_view(const PwModel *m, int l, float **ptrs)
{
    const struct PwGradShare *g = m->gsplit;
    for (int i = 0; i < m->ntensors; i++) {
        int grp = group_of(m, i), lay = kind(m, grp) == 1;
        size_t first = m->tensor_off[i], len;
        if (lay && l >= 0) seg_range(m, i, l, &first, &len);
        if (!m->tensor_size[i]) ptrs[i] = NULL;
        else if (!g) /* the whole gradient: slice l of a layered tensor, or all of it */
            ptrs[i] = m->grads + first;
        else if (lay && l < 0) /* its slices exist one layer at a time */
            ptrs[i] = NULL;
        else /* the top's and a layer's share turns; the bottom's too but for a tied head */
            ptrs[i] = seg_buf(g, m, grp) + g->seg_off[i];
    }
}

double pw_grad_split_sumsq(PwModel *m)
{
    const struct PwGradShare *g = m->gsplit;
    double mine = g->memory ? m->ops->sumsq(m->ops, g->share, m->opt_hi - m->opt_lo) : 0.0;
    return g->fn.sum(g->fn.ctx, mine);
}
