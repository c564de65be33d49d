/* test_ops_llama.c: the Llama-family entries of the CPU kernel table are the pw_kernels.h
 * functions themselves: each entry, called on the same data, gives the same bits. */
#include "kref.h"
#include "pw_bf16.h"
#include "pw_kernels.h"
#include "pw_ops.h"

#define SAME(a, b, n, what) CHECK(memcmp((a), (b), (n) * sizeof *(a)) == 0, "%s differs", what)

int main(void)
{
    const PwOps *o = pw_ops_cpu();
    unsigned long long rng = 41;
    enum { B = 2, T = 7, NH = 4, NKV = 2, HS = 6, W = (NH + 2 * NKV) * HS, C = NH * HS };
    const size_t nqkv = (size_t)B * T * W, nout = (size_t)B * T * C, natt = (size_t)B * NH * T * T;
    const int N = B * T, mask[B * T] = {0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    float *x = kref_randn(nqkv, 1.0, &rng), *w = kref_randn(W, 1.0, &rng);
    float *dout = kref_randn(nqkv, 1.0, &rng), *a = kref_alloc(nqkv * 4), *b = kref_alloc(nqkv * 4);
    float *ra = kref_alloc(N * 4), *rb = kref_alloc(N * 4), *inv = kref_alloc(HS / 2 * 4);
    float *atta = kref_alloc(natt * 4), *attb = kref_alloc(natt * 4);

    o->rmsnorm_forward(o, a, ra, x, w, N, W, 1e-5f);
    pw_rmsnorm_forward(b, rb, x, w, N, W, 1e-5f);
    SAME(a, b, nqkv, "rmsnorm_forward");
    SAME(ra, rb, (size_t)N, "rmsnorm_forward rstd");
    memset(a, 0, nqkv * 4), memset(b, 0, nqkv * 4);
    o->rmsnorm_backward(o, a, NULL, NULL, dout, x, w, ra, N, W);
    pw_rmsnorm_backward(b, NULL, dout, x, w, rb, N, W);
    SAME(a, b, nqkv, "rmsnorm_backward");

    pw_rope_inv_freq(inv, HS, 10000.0, NULL);
    memcpy(a, x, nqkv * 4), memcpy(b, x, nqkv * 4);
    o->rope_forward(o, a, NULL, NULL, inv, N, NH + NKV, HS, W);
    pw_rope_forward(b, NULL, inv, N, NH + NKV, HS, W);
    SAME(a, b, nqkv, "rope_forward");
    /* rounded rows (x16): x only read, the in-place result rounded, bit for bit */
    uint16_t *x16 = kref_alloc(nqkv * 2), *w16 = kref_alloc(nqkv * 2);
    memcpy(a, x, nqkv * 4);
    o->rope_forward(o, a, x16, NULL, inv, N, NH + NKV, HS, W);
    SAME(a, x, nqkv, "rope_forward with x16: x written");
    for (size_t i = 0; i < nqkv; i++) w16[i] = pw_bf16_from_f32(b[i]);
    SAME(x16, w16, nqkv, "rope_forward's bf16 rows");
    memcpy(a, b, nqkv * 4);
    o->rope_backward(o, a, NULL, NULL, inv, N, NH + NKV, HS, W);
    pw_rope_backward(b, NULL, inv, N, NH + NKV, HS, W);
    SAME(a, b, nqkv, "rope_backward");

    o->swiglu_forward(o, a, x, N, W / 2);
    pw_swiglu_forward(b, x, N, W / 2);
    SAME(a, b, (size_t)N * W / 2, "swiglu_forward");
    memset(a, 0, nqkv * 4), memset(b, 0, nqkv * 4);
    o->swiglu_backward(o, a, x, dout, N, W / 2);
    pw_swiglu_backward(b, x, dout, N, W / 2);
    SAME(a, b, nqkv, "swiglu_backward");

    o->attention_gqa_forward(o, a, atta, x, mask, B, T, NH, NKV, HS);
    pw_attention_gqa_forward(b, attb, x, mask, B, T, NH, NKV, HS);
    SAME(a, b, nout, "attention_gqa_forward");
    SAME(atta, attb, natt, "attention_gqa_forward att");
    memset(a, 0, nqkv * 4), memset(b, 0, nqkv * 4);
    o->attention_gqa_backward(o, a, dout, x, atta, mask, B, T, NH, NKV, HS);
    pw_attention_gqa_backward(b, dout, x, attb, mask, B, T, NH, NKV, HS);
    SAME(a, b, nqkv, "attention_gqa_backward");

    /* one segment of 3 tokens into row 1 of a cache of 2 rows, 5 slots */
    int row[1] = {1}, off[2] = {0, 3}, slot0[1] = {0};
    size_t cache = 2 * NKV * 5 * HS;
    float *ka = kref_alloc(cache * 4), *va = kref_alloc(cache * 4), *kb = kref_alloc(cache * 4);
    float *vb = kref_alloc(cache * 4), *sc = kref_alloc(NH * 5 * 4);
    o->attention_cache_gqa_forward(o, a, ka, va, sc, x, row, off, slot0, 1, 3, 5, NH, NKV, HS);
    pw_attention_cache_gqa_forward(b, kb, vb, sc, x, row, off, slot0, 1, 3, 5, NH, NKV, HS);
    SAME(a, b, (size_t)3 * C, "attention_cache_gqa_forward");
    SAME(ka, kb, cache, "attention_cache_gqa_forward kcache");
    SAME(va, vb, cache, "attention_cache_gqa_forward vcache");
    uint16_t *kha = kref_alloc(cache * 2), *vha = kref_alloc(cache * 2);
    uint16_t *khb = kref_alloc(cache * 2), *vhb = kref_alloc(cache * 2);
    o->attention_cache_gqa_forward_bf16(o, a, NULL, kha, vha, sc, x, row, off, slot0, 1, 3, 5, NH,
                                        NKV, HS);
    pw_attention_cache_gqa_forward_bf16(b, khb, vhb, sc, x, row, off, slot0, 1, 3, 5, NH, NKV, HS);
    SAME(a, b, (size_t)3 * C, "attention_cache_gqa_forward_bf16");
    SAME(kha, khb, cache, "attention_cache_gqa_forward_bf16 kcache");
    SAME(vha, vhb, cache, "attention_cache_gqa_forward_bf16 vcache");
    /* the output rounded (out16): the same pass again over a fresh copy of the caches, its
     * output the float32 one rounded, bit for bit */
    uint16_t *o16 = kref_alloc((size_t)3 * C * 2), *r16 = kref_alloc((size_t)3 * C * 2);
    memset(kha, 0, cache * 2), memset(vha, 0, cache * 2);
    o->attention_cache_gqa_forward_bf16(o, NULL, o16, kha, vha, sc, x, row, off, slot0, 1, 3, 5,
                                        NH, NKV, HS);
    for (int i = 0; i < 3 * C; i++) r16[i] = pw_bf16_from_f32(b[i]);
    SAME(o16, r16, (size_t)3 * C, "attention_cache_gqa_forward_bf16 out16");
    SAME(kha, khb, cache, "attention_cache_gqa_forward_bf16 out16 kcache");
    free(kha), free(vha), free(khb), free(vhb), free(o16), free(r16);

    free(x), free(w), free(dout), free(a), free(b), free(ra), free(rb), free(inv), free(atta);
    free(attb), free(ka), free(va), free(kb), free(vb), free(sc), free(x16), free(w16);
    return pw_test_done("test_ops_llama");
}
