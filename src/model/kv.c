/* kv.c: the family-neutral half of incremental decoding (pw_model.h): which tokens of which rows
 * one pass of the layers carries, their upload, and each row's logits: left on the device for
 * the generator's sampler after a decode pass, brought to the host when asked for. */
#include "model_internal.h"

#include <stdlib.h>
#include <string.h>

/* A prefill pass packs the real tokens of whole rows; this many full-width rows bound the
 * packed tokens of one pass, so the per-pass buffers stay small next to the cache. */
#define PW_KV_PREFILL_ROWS 4

/* key/value heads: GPT-2's arch leaves n_kv_head 0 (one per query head) */
static int kv_heads(const PwArch *a) { return a->n_kv_head > 0 ? a->n_kv_head : a->n_head; }

/* bytes of one cached key or value element */
static size_t slot_bytes(const PwModel *m) { return m->kv_dtype == PW_KV_BF16 ? 2 : 4; }

/* What pw_kv_create decides before it allocates, on c (zeroed): the capacity, the tokens a pass
 * may hold (a prefill's rows at once, or one token a row), the pass's ints, the slots. */
static void kv_shape(PwKVCache *c, PwModel *m, int maxB, int maxT)
{
    const PwArch *a = &m->arch;
    size_t prefill = (size_t)maxT * (maxB < PW_KV_PREFILL_ROWS ? maxB : PW_KV_PREFILL_ROWS);
    c->m = m;
    c->maxB = maxB;
    c->maxT = maxT;
    c->maxN = (int)(prefill > (size_t)maxB ? prefill : (size_t)maxB);
    /* tok, pos (maxN); seg_row, seg_off (+1), seg_slot0, seg_last (maxB) */
    c->npass = 2 * (size_t)c->maxN + 4 * (size_t)maxB + 1;
    c->layer_elems = (size_t)maxB * kv_heads(a) * maxT * pw_arch_head_size(a);
    c->v_off = (pw_kv_bytes(c) / 2 + 255) / 256 * 256;
}

/* the CPU attention's scratch (maxB, NH, maxT) */
static size_t scores_bytes(const PwKVCache *c)
{
    return (size_t)c->maxB * c->m->arch.n_head * c->maxT * sizeof(float);
}

/* What pw_kv_create refuses: a model without its LM head, a capacity that is not positive or
 * longer than the model's positions. */
static int kv_check(const PwModel *m, int maxB, int maxT, PwErr *err)
{
    if (!(m->heads & PW_HEAD_LM)) return pw_errf(err, "decoding needs the LM head");
    if (maxB <= 0 || maxT <= 0)
        return pw_errf(err, "generator capacity must be positive, got B=%d T=%d", maxB, maxT);
    if (maxT > m->arch.n_positions)
        return pw_errf(err, "generator length %d (prompt + new tokens) exceeds the model's "
                       "n_positions %d", maxT, m->arch.n_positions);
    return 0;
}

int pw_kv_plan_bytes(PwModel *shape, PwDevice dev, int maxB, int maxT, size_t *bytes,
                     PwErr *err)
{
    if (kv_check(shape, maxB, maxT, err)) return -1;
    PwKVCache c = {0};
    kv_shape(&c, shape, maxB, maxT);
    *bytes = c.v_off + pw_kv_bytes(&c) / 2 + (dev == PW_DEVICE_CPU ? scores_bytes(&c) : 0) +
             c.npass * sizeof(int) + shape->impl->kv_bytes(&c);
    return 0;
}

/* The keys and values of every layer in one allocation of the model's device, v 256 bytes
 * aligned after k; the CPU's attention scratch beside them. */
static int alloc_keys_values(PwKVCache *c, PwErr *err)
{
    const PwModel *m = c->m;
    size_t bytes = pw_kv_bytes(c) / 2;
    if (!(c->kv = m->ops->alloc(m->ops, c->v_off + bytes)))
        return pw_model_no_room(m, "a KV cache's keys and values", c->v_off + bytes, err);
    if (m->ops->device != PW_DEVICE_CPU) return 0;
    size_t sbytes = scores_bytes(c);
    if (!(c->scores = m->ops->alloc(m->ops, sbytes)))
        return pw_model_no_room(m, "a KV cache's attention scratch", sbytes, err);
    return 0;
}

PwKVDtype pw_kv_dtype(const PwKVCache *c) { return c->m->kv_dtype; }

size_t pw_kv_bytes(const PwKVCache *c)
{
    return 2 * (size_t)c->m->arch.n_layer * c->layer_elems * slot_bytes(c->m);
}

void pw_kv_attend(const PwKVCache *c, int l, float *out, uint16_t *out16, const float *qkv)
{
    const PwOps *o = c->m->ops;
    const PwArch *a = &c->m->arch;
    const int NH = a->n_head, NKV = kv_heads(a), hs = pw_arch_head_size(a);
    const size_t at = (size_t)l * c->layer_elems;
    if (c->m->kv_dtype == PW_KV_BF16) {
        uint16_t *k = c->kv, *v = (uint16_t *)((char *)c->kv + c->v_off);
        o->attention_cache_gqa_forward_bf16(o, out16 ? NULL : out, out16, k + at, v + at,
                                            c->scores, qkv, c->d_seg_row, c->d_seg_off,
                                            c->d_seg_slot0, c->nseg, c->ntok, c->maxT, NH, NKV,
                                            hs);
    } else {
        float *k = c->kv, *v = (float *)((char *)c->kv + c->v_off);
        o->attention_cache_gqa_forward(o, out, k + at, v + at, c->scores, qkv, c->d_seg_row,
                                       c->d_seg_off, c->d_seg_slot0, c->nseg, c->ntok, c->maxT,
                                       NH, NKV, hs);
        if (out16) o->to_bf16(o, out16, out, (size_t)c->ntok * NH * hs);
    }
}

PwKVCache *pw_kv_create(PwModel *m, int maxB, int maxT, PwErr *err)
{
    if (kv_check(m, maxB, maxT, err)) return NULL;
    PwKVCache *c = calloc(1, sizeof *c);
    if (!c) return pw_errf(err, "out of host memory for a KV cache"), NULL;
    const size_t V = m->arch.vocab_size;
    kv_shape(c, m, maxB, maxT);
    size_t nint = c->npass;
    c->len = calloc(maxB, sizeof(int));
    c->logits = calloc((size_t)maxB * V, sizeof(float));
    c->h_head = calloc((size_t)maxB * m->Vp, sizeof(float));
    c->h_pass = calloc(nint, sizeof(int));
    c->d_pass = m->ops->alloc(m->ops, nint * sizeof(int));
    if (!c->len || !c->logits || !c->h_head || !c->h_pass || !c->d_pass) {
        pw_errf(err, "out of memory for a KV cache of B=%d T=%d", maxB, maxT);
        pw_kv_free(c);
        return NULL;
    }
    int *hp[6] = {c->h_pass, 0, 0, 0, 0, 0}, *dp[6] = {c->d_pass, 0, 0, 0, 0, 0};
    const size_t n[6] = {(size_t)c->maxN, (size_t)c->maxN, (size_t)maxB, (size_t)maxB + 1,
                         (size_t)maxB, (size_t)maxB};
    for (int i = 1; i < 6; i++) {
        hp[i] = hp[i - 1] + n[i - 1];
        dp[i] = dp[i - 1] + n[i - 1];
    }
    c->h_tok = hp[0], c->h_pos = hp[1], c->h_seg_row = hp[2], c->h_seg_off = hp[3];
    c->h_seg_slot0 = hp[4], c->h_seg_last = hp[5];
    c->d_tok = dp[0], c->d_pos = dp[1], c->d_seg_row = dp[2], c->d_seg_off = dp[3];
    c->d_seg_slot0 = dp[4], c->d_seg_last = dp[5];
    PwErr e2;
    if (alloc_keys_values(c, &e2) || m->impl->kv_attach(c, &e2)) {
        pw_errf(err, "KV cache of B=%d T=%d: %s", maxB, maxT, e2.msg);
        pw_kv_free(c);
        return NULL;
    }
    return c;
}

void pw_kv_free(PwKVCache *c)
{
    if (!c) return;
    c->m->impl->kv_detach(c);
    c->m->ops->free(c->m->ops, c->kv);
    c->m->ops->free(c->m->ops, c->scores);
    c->m->ops->free(c->m->ops, c->d_pass);
    free(c->len);
    free(c->logits);
    free(c->h_head);
    free(c->h_pass);
    free(c);
}

int pw_kv_pass_tokens(const PwKVCache *c) { return c->maxN; }
int pw_kv_len(const PwKVCache *c, int b) { return c->len[b]; }
/* The last pass's logits to the host rows of its segments. */
static void head_to_host(PwKVCache *c)
{
    const PwOps *o = c->m->ops;
    const size_t V = c->m->arch.vocab_size, Vp = c->m->Vp;
    o->copy(o, c->h_head, c->d_head, (size_t)c->nseg * Vp * sizeof(float), PW_COPY_D2H);
    for (int s = 0; s < c->nseg; s++)
        memcpy(c->logits + (size_t)c->h_seg_row[s] * V, c->h_head + (size_t)s * Vp,
               V * sizeof(float));
    c->host_stale = 0;
}

const float *pw_kv_logits(const PwKVCache *c, int b)
{
    /* logically const: the host rows are a copy of the device's, made on first demand */
    if (c->host_stale) head_to_host((PwKVCache *)c);
    return c->logits + (size_t)b * c->m->arch.vocab_size;
}

/* The segments in h_* to the device: their slots and last tokens, then one upload of the whole
 * pass (its slices are one block): each copy waits for the device, and a decode step of a GPU
 * model makes one such round trip instead of three. */
static void upload_pass(PwKVCache *c)
{
    const PwOps *o = c->m->ops;
    c->ntok = c->h_seg_off[c->nseg];
    for (int s = 0; s < c->nseg; s++) {
        c->h_seg_slot0[s] = c->len[c->h_seg_row[s]];
        c->h_seg_last[s] = c->h_seg_off[s + 1] - 1;
    }
    o->copy(o, c->d_pass, c->h_pass, c->npass * sizeof(int), PW_COPY_H2D);
}

/* One pass over the segments on the device: run the family's layers, give each segment's row
 * its logits (rows outside the pass keep theirs: an earlier prefill pass wrote them, or the row
 * has finished) and advance the rows' lengths. A prefill pass brings the logits to the host at
 * once (a prefill takes several passes, and the device keeps only the last); a decode pass of a
 * device_only cache leaves them on the device, for the generator's sampler. */
static void pass_done(PwKVCache *c, const float *head, int prefill)
{
    c->d_head = head; /* (nseg, Vp): the padding columns dropped on copy */
    c->host_stale = 1;
    if (prefill || !c->device_only) head_to_host(c);
    for (int s = 0; s < c->nseg; s++)
        c->len[c->h_seg_row[s]] += c->h_seg_off[s + 1] - c->h_seg_off[s];
}

/* A pass from the host: the bfloat16 weights made first if stale (the generator's decode steps,
 * which may be one captured graph, run after a prefill pass made them). */
static void exec_pass(PwKVCache *c, int prefill)
{
    pw_model_mirror_refresh(c->m);
    pass_done(c, c->m->impl->kv_pass(c), prefill);
}

static int check_prompt(const PwKVCache *c, const int *prompt, const int *mask, int B, int P,
                        PwErr *err)
{
    const int V = c->m->arch.vocab_size;
    if (B <= 0 || B > c->maxB)
        return pw_errf(err, "generation batch B=%d is outside the generator's capacity [1, %d]",
                       B, c->maxB);
    if (P <= 0 || P > c->maxT)
        return pw_errf(err, "prompt width P=%d is outside the generator's capacity [1, %d] "
                       "tokens", P, c->maxT);
    for (int b = 0; b < B; b++) {
        int seen = 0;
        for (int t = 0; t < P; t++) {
            int real = mask ? mask[b * P + t] != 0 : 1;
            if (!real && seen)
                return pw_errf(err, "prompt row %d is not left-padded: padding at column %d "
                               "after a real token", b, t);
            if (real && (prompt[b * P + t] < 0 || prompt[b * P + t] >= V))
                return pw_errf(err, "prompt token %d at (b=%d, t=%d) is outside the vocabulary "
                               "[0, %d)", prompt[b * P + t], b, t, V);
            seen += real;
        }
        if (!seen) return pw_errf(err, "prompt row %d has no real token", b);
    }
    return 0;
}

int pw_kv_prefill(PwKVCache *c, const int *prompt, const int *mask, int B, int P, PwErr *err)
{
    if (check_prompt(c, prompt, mask, B, P, err)) return -1;
    c->host_stale = 0; /* a device-only pass's logits are given up (pw_kv_logits: last pass) */
    for (int b = 0; b < B; b++) c->len[b] = 0;
    /* passes of whole rows, as many as fit in maxN packed tokens (one always does: P <= maxT) */
    int b = 0;
    while (b < B) {
        int n = 0;
        c->nseg = 0;
        for (; b < B; b++) {
            int first = 0;
            while (mask && !mask[b * P + first]) first++;
            if (n + P - first > c->maxN) break;
            c->h_seg_row[c->nseg] = b;
            c->h_seg_off[c->nseg++] = n;
            for (int t = first; t < P; t++, n++) {
                c->h_tok[n] = prompt[b * P + t];
                c->h_pos[n] = t - first;
            }
        }
        c->h_seg_off[c->nseg] = n;
        upload_pass(c);
        exec_pass(c, 1);
    }
    return 0;
}

int pw_kv_decode_plan(PwKVCache *c, const int *tokens, const int *active, int B, PwErr *err)
{
    const int V = c->m->arch.vocab_size;
    if (B <= 0 || B > c->maxB)
        return pw_errf(err, "decode batch B=%d is outside the generator's capacity [1, %d]", B,
                       c->maxB);
    c->nseg = 0;
    for (int b = 0; b < B; b++) {
        if (active && !active[b]) continue;
        if (tokens[b] < 0 || tokens[b] >= V)
            return pw_errf(err, "decode token %d of row %d is outside the vocabulary [0, %d)",
                           tokens[b], b, V);
        if (c->len[b] >= c->maxT)
            return pw_errf(err, "row %d already holds %d tokens, the generator's capacity", b,
                           c->len[b]);
        /* a row's next position is the number of real tokens it holds: its cache length */
        c->h_tok[c->nseg] = tokens[b];
        c->h_pos[c->nseg] = c->len[b];
        c->h_seg_row[c->nseg] = b;
        c->h_seg_off[c->nseg] = c->nseg;
        c->nseg++;
    }
    c->h_seg_off[c->nseg] = c->nseg;
    upload_pass(c);
    return 0;
}

int pw_kv_decode_check(const PwKVCache *c, PwErr *err)
{
    for (int s = 0; s < c->nseg; s++)
        if (c->len[c->h_seg_row[s]] >= c->maxT)
            return pw_errf(err, "row %d already holds %d tokens, the generator's capacity",
                           c->h_seg_row[s], c->len[c->h_seg_row[s]]);
    return 0;
}

const float *pw_kv_decode_device(PwKVCache *c) { return c->m->impl->kv_pass(c); }

void pw_kv_decode_done(PwKVCache *c, const float *head) { pass_done(c, head, 0); }

int pw_kv_decode(PwKVCache *c, const int *tokens, const int *active, int B, PwErr *err)
{
    c->host_stale = 0;
    if (pw_kv_decode_plan(c, tokens, active, B, err) || pw_kv_decode_check(c, err)) return -1;
    if (c->nseg) exec_pass(c, 0);
    return 0;
}
