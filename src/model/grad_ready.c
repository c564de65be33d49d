/* grad_ready.c: telling a backward's caller which gradients are final, layer by layer, so that a
 * role can all-reduce them while the backward goes on (pw_model.h, PwGradReady). The family says
 * when (pw_model_ready_top, pw_model_ready_layer); this file turns that into ranges of the one
 * gradient tensor, and makes sure that every float is reported exactly once per backward. */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

static int slices(const PwModel *m) { return m->arch.n_layer > 0 ? m->arch.n_layer : 1; }

int pw_model_ready_begin(PwModel *m, PwGradReady fn, void *ctx, PwErr *err)
{
    m->ready = NULL;
    if (!fn) return 0;
    size_t n = (size_t)m->ntensors * (size_t)slices(m);
    if (!m->ready_done && !(m->ready_done = malloc(n)))
        return pw_errf(err, "out of memory for the gradients' ready flags (%zu bytes)", n);
    memset(m->ready_done, 0, n);
    m->ready = fn;
    m->ready_ctx = ctx;
    return 0;
}

/* Adds [off, off + count) to r (n ranges so far), joining it to the last range when they touch;
 * empty ranges (a head the model lacks) are left out. */
static int add(PwGradRange *r, int n, size_t off, size_t count)
{
    if (!count) return n;
    if (n && r[n - 1].off + r[n - 1].count == off) {
        r[n - 1].count += count;
        return n;
    }
    r[n].off = off;
    r[n].count = count;
    return n + 1;
}

/* Reports the tensors of class `cls` (for PW_READY_LAYER: slice `layer` of each; for
 * cls < 0: every slice not reported yet) that were not reported before. */
static void report(PwModel *m, int cls, int layer)
{
    if (!m->ready) return;
    const int S = slices(m);
    PwGradRange r[PW_MODEL_MAX_TENSORS * 2];
    int n = 0;
    for (int i = 0; i < m->ntensors; i++) {
        int c = m->impl->tensor_ready[i];
        int layered = c == PW_READY_LAYER && m->arch.n_layer > 0;
        size_t per = layered ? m->tensor_size[i] / (size_t)S : m->tensor_size[i];
        for (int s = 0; s < (layered ? S : 1); s++) {
            unsigned char *done = &m->ready_done[(size_t)i * S + s];
            if (*done) continue;
            if (cls >= 0 && (c != cls || (layered && s != layer))) continue;
            *done = 1;
            /* at most one range per tensor in a class call; the final sweep (cls < 0) may have
             * several slices of a tensor, flushed when the buffer is nearly full */
            if (n >= PW_MODEL_MAX_TENSORS * 2 - 1) {
                m->ready(m->ready_ctx, r, n, m->ops->stream);
                n = 0;
            }
            n = add(r, n, m->tensor_off[i] + (size_t)s * per, per);
        }
    }
    if (n) m->ready(m->ready_ctx, r, n, m->ops->stream);
}

void pw_model_ready_top(PwModel *m)
{
    report(m, PW_READY_TOP, 0);
    if (m->gsplit) pw_grad_split_top(m);
}

/* Split gradients (grad_split.c) are summed at the same points: the top's, each layer's, and the
 * bottom's at the end. */
void pw_model_ready_layer(PwModel *m, int l)
{
    report(m, PW_READY_LAYER, l);
    if (m->gsplit) pw_grad_split_layer(m, l);
}

void pw_model_ready_end(PwModel *m)
{
    report(m, PW_READY_BOTTOM, 0);
    report(m, -1, 0); /* anything a family did not report: correct, only later */
    m->ready = NULL;
    if (m->gsplit) pw_grad_split_bottom(m);
}

/* The order every family's backward follows: top, layers L-1 down to 0, the rest. */
int pw_model_report_grads(PwModel *m, PwGradReady fn, void *ctx, PwErr *err)
{
    if (m->gsplit)
        return pw_errf(err, "a model whose gradients are split reports none: "
                       "pw_model_backward_idle keeps its ranks in step");
    if (!m->grads && pw_model_zero_grad(m, err)) return -1;
    if (pw_model_ready_begin(m, fn, ctx, err)) return -1;
    pw_model_ready_top(m);
    for (int l = m->arch.n_layer - 1; l >= 0; l--) pw_model_ready_layer(m, l);
    pw_model_ready_end(m);
    return 0;
}
