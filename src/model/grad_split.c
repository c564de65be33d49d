/* grad_split.c: the gradients split over a role's ranks (optim.zero_stage 2, ZeRO stage 2;
 * pw_model.h, pw_model_grads_split). A model keeps the summed gradient of its optimiser share
 * alone. Its backward writes into two buffers instead of the whole gradient: one layer's slice of
 * every tensor made layer by layer (PW_READY_LAYER), used again by each layer, and the other
 * tensors whole (embeddings, final norm, heads: written at both ends of the backward). When a
 * buffer is final the ranks sum it block by block (the caller's reduce), each rank adds its
 * block into its share, and the buffer is zeroed for its next use. */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

enum { SEG_ALIGN = 64 }; /* floats: each tensor's place in a buffer starts on 256 bytes */

struct PwGradShare {
    PwGradSplit fn;
    int nranks, rank;
    int64_t *shares;        /* (nranks + 1) the role's blocks of the parameters */
    int64_t *starts;        /* (nranks + 1) one reduction's blocks of its buffer */
    float *memory;          /* share | rest | layer in one allocation; NULL before the first
                             * zero_grad and while a payload of weights_out holds its place */
    float *share, *rest, *layer;
    size_t nshare, nrest, nlayer; /* floats of each, the first two rounded up to SEG_ALIGN */
    size_t seg_off[PW_MODEL_MAX_TENSORS]; /* tensor i's place in its buffer */
};

static size_t align(size_t n) { return (n + SEG_ALIGN - 1) / SEG_ALIGN * SEG_ALIGN; }

static int layered(const PwModel *m, int i)
{
    return m->impl->tensor_ready[i] == PW_READY_LAYER && m->arch.n_layer > 0;
}

/* Tensor i's floats of the parameters in segment l (a layer, or l < 0: the other tensors):
 * [*first, *first + *len); *len 0 when the tensor is not in that segment. */
static void seg_range(const PwModel *m, int i, int l, size_t *first, size_t *len)
{
    *first = *len = 0;
    if (layered(m, i) != (l >= 0) || !m->tensor_size[i]) return;
    if (l < 0) {
        *first = m->tensor_off[i];
        *len = m->tensor_size[i];
        return;
    }
    *len = m->tensor_size[i] / (size_t)m->arch.n_layer;
    *first = m->tensor_off[i] + (size_t)l * *len;
}

/* Each tensor's place in its buffer (off), and the buffers' sizes: what a model shaped as m
 * needs, allocated or planned. */
static void seg_layout(const PwModel *m, size_t *off, size_t *nrest, size_t *nlayer)
{
    *nrest = *nlayer = 0;
    for (int i = 0; i < m->ntensors; i++) {
        size_t first, len;
        int l = layered(m, i) ? 0 : -1;
        seg_range(m, i, l, &first, &len);
        size_t *n = l >= 0 ? nlayer : nrest;
        off[i] = *n;
        if (len) *n = align(*n + len);
    }
}

size_t pw_grad_split_floats(const PwModel *m, size_t lo, size_t hi)
{
    size_t off[PW_MODEL_MAX_TENSORS], nrest, nlayer;
    seg_layout(m, off, &nrest, &nlayer);
    return align(hi - lo) + nrest + nlayer;
}

/* Where flat float x of the parameters falls in segment l's buffer: its place there when a
 * tensor of the segment holds it, else the place of the next float the segment holds (the
 * buffer's end after the last), so that the ranks' blocks of the parameters become blocks of
 * the buffer covering it (the alignment's gaps go with a block and add zeros). */
static size_t seg_pos(const PwModel *m, int l, size_t x)
{
    const struct PwGradShare *g = m->gsplit;
    for (int i = 0; i < m->ntensors; i++) {
        size_t first, len;
        seg_range(m, i, l, &first, &len);
        if (len && x < first + len) return g->seg_off[i] + (x > first ? x - first : 0);
    }
    return l >= 0 ? g->nlayer : g->nrest;
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
    seg_layout(m, g->seg_off, &g->nrest, &g->nlayer);
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
    g->memory = g->share = g->rest = g->layer = NULL;
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
    size_t n = g->nshare + g->nrest + g->nlayer;
    if (!g->memory) {
        /* a payload of pw_model_weights_out held their place since the last update */
        o->free(o, m->grads);
        m->grads = NULL;
        if (!(g->memory = o->alloc(o, (n ? n : 1) * sizeof(float))))
            return pw_model_no_room(m, "the gradients' share and the buffers a backward sums",
                                    n * sizeof(float), err);
        g->share = g->memory;
        g->rest = g->share + g->nshare;
        g->layer = g->rest + g->nrest;
    }
    o->zero(o, g->memory, n * sizeof(float));
    return 0;
}

void pw_grad_split_clear(PwModel *m)
{
    struct PwGradShare *g = m->gsplit;
    if (g->memory) m->ops->zero(m->ops, g->rest, (g->nrest + g->nlayer) * sizeof(float));
}

/* Segment l's buffer summed over the ranks, this rank's block added into its share, and the
 * buffer zeroed for its next use. */
static void reduce_seg(PwModel *m, int l)
{
    struct PwGradShare *g = m->gsplit;
    const PwOps *o = m->ops;
    float *buf = l >= 0 ? g->layer : g->rest;
    for (int k = 0; k <= g->nranks; k++)
        g->starts[k] = (int64_t)seg_pos(m, l, (size_t)g->shares[k]);
    o->sync(o); /* the backward's writes, before another library reads the buffer */
    g->fn.reduce(g->fn.ctx, buf, g->starts);
    const size_t lo = m->opt_lo, hi = m->opt_hi;
    for (int i = 0; i < m->ntensors; i++) {
        size_t first, len;
        seg_range(m, i, l, &first, &len);
        size_t a = first > lo ? first : lo, b = first + len < hi ? first + len : hi;
        if (!len || a >= b) continue;
        float *dst = g->share + (a - lo);
        o->residual_forward(o, dst, dst, buf + g->seg_off[i] + (a - first), b - a);
    }
    o->zero(o, buf, (l >= 0 ? g->nlayer : g->nrest) * sizeof(float));
}

void pw_grad_split_layer(PwModel *m, int l) { reduce_seg(m, l); }

void pw_grad_split_rest(PwModel *m) { reduce_seg(m, -1); }

int pw_model_backward_idle(PwModel *m, PwErr *err)
{
    if (!m->gsplit) return pw_errf(err, "the model's gradients are not split");
    if (m->grads_spent) return pw_errf(err, PW_GRADS_SPENT, "a backward");
    if (!m->gsplit->memory && pw_model_zero_grad(m, err)) return -1;
    /* the order of every backward: layers L-1 down to 0, then the rest (grad_ready.c) */
    for (int l = m->arch.n_layer - 1; l >= 0; l--) reduce_seg(m, l);
    reduce_seg(m, -1);
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
        size_t first, len;
        int lay = layered(m, i);
        seg_range(m, i, lay && l >= 0 ? l : -1, &first, &len);
        if (!m->tensor_size[i]) ptrs[i] = NULL;
        else if (!g) /* the whole gradient: slice l of a layered tensor, or all of it */
            ptrs[i] = m->grads + (lay && l >= 0 ? first : m->tensor_off[i]);
        else if (lay)
            ptrs[i] = l >= 0 ? g->layer + g->seg_off[i] : NULL;
        else
            ptrs[i] = g->rest + g->seg_off[i];
    }
}

double pw_grad_split_sumsq(PwModel *m)
{
    const struct PwGradShare *g = m->gsplit;
    double mine = g->memory ? m->ops->sumsq(m->ops, g->share, m->opt_hi - m->opt_lo) : 0.0;
    return g->fn.sum(g->fn.ctx, mine);
}
