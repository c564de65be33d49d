/* test_cuda_attention_gqa.c: the CUDA grouped-query attention against the CPU twin on the same
 * random data, the fused kernels and the GEMM path (groups of 1 to 4 query heads, heads of 5 to
 * 160 floats, left padding with a padding-only row, T up to 1024, poisoned outputs,
 * accumulating backward), and over a KV cache of float32 and of
 * bfloat16 (the slots bit for bit: both round to nearest even), through the cache attention's
 * split kernel and its tile kernel. */
#include "cutest.h"
#include "kernels/cache_case.h"
#include "pw_bf16.h"

static void run(int B, int T, int NH, int NKV, int hs, const int *pads, int npads, int use_mask,
                unsigned long long *rng)
{
    printf("B=%d T=%d NH=%d NKV=%d hs=%d mask=%d\n", B, T, NH, NKV, hs, use_mask);
    size_t BT = (size_t)B * T, nqkv = BT * (NH + 2 * NKV) * hs, nout = BT * NH * hs;
    size_t natt = (size_t)B * NH * T /* lse */;
    int *mask = use_mask ? cu_left_mask(B, T, pads, npads) : NULL;
    float *qkv = cu_randn(nqkv, 1.0, rng), *dout = cu_randn(nout, 1.0, rng);
    float *dqkv0 = cu_randn(nqkv, 1.0, rng);
    float *out = cu_host(sizeof(float) * nout), *att = cu_host(sizeof(float) * natt);
    pw_attention_gqa_forward(out, att, qkv, mask, B, T, NH, NKV, hs);
    float *dqkv = cu_copy(dqkv0, nqkv);
    pw_attention_gqa_backward(dqkv, dout, qkv, att, mask, B, T, NH, NKV, hs);

    int *d_mask = mask ? cu_upload(mask, sizeof(int) * BT) : NULL;
    float *d_qkv = cu_upload(qkv, sizeof(float) * nqkv);
    float *d_dout = cu_upload(dout, sizeof(float) * nout);
    float *d_out = cu_dev(sizeof(float) * nout), *d_att = cu_dev(sizeof(float) * natt);
    cu_poison(d_out, sizeof(float) * nout);
    cu_poison(d_att, sizeof(float) * natt);
    pw_attention_gqa_forward_cuda(d_out, d_att, d_qkv, d_mask, B, T, NH, NKV, hs, 0);
    cu_compare("forward out", d_out, out, nout, CU_TOL_F32);
    cu_compare("forward lse", d_att, att, natt, CU_TOL_F32);

    float *d_attc = cu_upload(att, sizeof(float) * natt);
    float *d_dqkv = cu_upload(dqkv0, sizeof(float) * nqkv);
    pw_attention_gqa_backward_cuda(d_dqkv, d_dout, d_qkv, d_attc, d_mask, B, T, NH, NKV, hs, 0);
    cu_compare("backward dqkv (+=)", d_dqkv, dqkv, nqkv, CU_TOL_F32);
    cu_release();
}

/* a cache case's pass on the device: its qkv and segments, and a poisoned output */
typedef struct DevPass {
    float *qkv, *out;
    int *row, *off, *slot;
} DevPass;

static DevPass upload_pass(const CacheCase *cc)
{
    const size_t W = (size_t)(cc->NH + 2 * cc->NKV) * cc->hs, C = (size_t)cc->NH * cc->hs;
    DevPass d;
    d.qkv = cu_upload(cc->qkv, cc->N * W * sizeof(float));
    d.row = cu_upload(cc->seg_row, sizeof cc->seg_row);
    d.off = cu_upload(cc->seg_off, sizeof cc->seg_off);
    d.slot = cu_upload(cc->seg_slot0, sizeof cc->seg_slot0);
    d.out = cu_dev(cc->N * C * sizeof(float));
    cu_poison(d.out, cc->N * C * sizeof(float));
    return d;
}

static void run_cache(int NH, int NKV, int hs, int lng, unsigned long long *rng)
{
    printf("KV cache NH=%d NKV=%d hs=%d\n", NH, NKV, hs);
    CacheCase cc;
    cache_case_make_any(&cc, rng, NH, NKV, hs, lng);
    const int T = cc.maxT, N = cc.N, C = NH * hs;
    const size_t cache = (size_t)cc.maxB * NKV * T * hs, cb = cache * sizeof(float);
    float *K = cu_copy(cc.k0, cache), *V = cu_copy(cc.v0, cache);
    float *out = cu_host((size_t)N * C * sizeof(float));
    float *scores = cu_host((size_t)cc.nseg * NH * T * sizeof(float));
    pw_attention_cache_gqa_forward(out, K, V, scores, cc.qkv, cc.seg_row, cc.seg_off,
                                   cc.seg_slot0, cc.nseg, N, T, NH, NKV, hs);
    float *d_K = cu_upload(cc.k0, cb), *d_V = cu_upload(cc.v0, cb);
    DevPass d = upload_pass(&cc);
    pw_attention_cache_gqa_forward_cuda(d.out, d_K, d_V, NULL, d.qkv, d.row, d.off, d.slot,
                                        cc.nseg, N, T, NH, NKV, hs, 0);
    cu_compare("k cache after the pass", d_K, K, cache, 0.0);
    cu_compare("v cache after the pass", d_V, V, cache, 0.0);
    cu_compare("attention output", d.out, out, (size_t)N * C, CU_TOL_F32);
    cu_release();
    cache_case_free(&cc);
}

/* the bfloat16 cache: the CPU's bf16 kernel is the reference, its old slots the same bits */
static void run_cache_bf16(int NH, int NKV, int hs, int lng, unsigned long long *rng)
{
    printf("bfloat16 KV cache NH=%d NKV=%d hs=%d\n", NH, NKV, hs);
    CacheCase cc;
    cache_case_make_any(&cc, rng, NH, NKV, hs, lng);
    const int T = cc.maxT, N = cc.N, C = NH * hs;
    const size_t cache = (size_t)cc.maxB * NKV * T * hs, cb = cache * sizeof(uint16_t);
    uint16_t *K = cu_host(cb), *V = cu_host(cb), *gK = cu_host(cb), *gV = cu_host(cb);
    for (size_t i = 0; i < cache; i++) {
        K[i] = pw_bf16_from_f32(cc.k0[i]);
        V[i] = pw_bf16_from_f32(cc.v0[i]);
    }
    uint16_t *d_K = cu_upload(K, cb), *d_V = cu_upload(V, cb);
    float *out = cu_host((size_t)N * C * sizeof(float));
    float *scores = cu_host((size_t)cc.nseg * NH * T * sizeof(float));
    pw_attention_cache_gqa_forward_bf16(out, K, V, scores, cc.qkv, cc.seg_row, cc.seg_off,
                                        cc.seg_slot0, cc.nseg, N, T, NH, NKV, hs);
    DevPass d = upload_pass(&cc);
    pw_attention_cache_gqa_forward_bf16_cuda(d.out, d_K, d_V, NULL, d.qkv, d.row, d.off, d.slot,
                                             cc.nseg, N, T, NH, NKV, hs, 0);
    cu_download(gK, d_K, cb);
    cu_download(gV, d_V, cb);
    size_t bad = 0;
    for (size_t i = 0; i < cache; i++) bad += gK[i] != K[i] || gV[i] != V[i];
    CHECK(bad == 0, "bfloat16 cache NH=%d NKV=%d: %zu slots differ from the CPU's", NH, NKV, bad);
    cu_compare("attention output over the bfloat16 cache", d.out, out, (size_t)N * C, CU_TOL_F32);
    /* a bf16 model's decode: the output rounded instead (the pass stores the same slots again),
     * bit for bit the float32 output's rounding */
    uint16_t *d_o16 = cu_dev((size_t)N * C * sizeof(uint16_t));
    pw_attention_cache_gqa_forward_bf16_out_cuda(d_o16, d_K, d_V, d.qkv, d.row, d.off, d.slot,
                                                 cc.nseg, N, T, NH, NKV, hs, 0);
    cu_compare_bf16("attention output rounded (out16)", d_o16, d.out, (size_t)N * C);
    cu_release();
    cache_case_free(&cc);
}

int main(void)
{
    cu_require_gpu("test_cuda_attention_gqa");
    unsigned long long rng = 24;
    int pads[] = {0, 5, 33, 64, 1};
    int all_pad[] = {3, 64}; /* row 1 is padding only */
    int long_pads[] = {0, 700};
    /* the fused kernels (the default), then the GEMM path */
    for (int flash = 1; flash >= 0; flash--) {
        pw_cuda_set_flash(flash);
        printf("%s path\n", flash ? "fused" : "GEMM");
        run(2, 16, 6, 2, 5, pads, 5, 0, &rng);
        run(5, 64, 6, 2, 16, pads, 5, 1, &rng);
        run(2, 64, 4, 1, 32, all_pad, 2, 1, &rng);
        run(3, 150, 3, 3, 16, pads, 5, 1, &rng); /* NKV = NH */
        run(2, 1024, 4, 2, 32, long_pads, 2, 1, &rng);
        run(2, 300, 4, 2, 64, long_pads, 2, 1, &rng);  /* Qwen2 / SmolLM heads */
        run(2, 300, 4, 1, 128, long_pads, 2, 1, &rng); /* Llama 3 heads: 32-key dkv blocks */
    }
    pw_cuda_set_flash(1);
    run(1, 100, 2, 1, 160, pads, 1, 0, &rng); /* above 128: the GEMM path whatever the switch */
    /* the cache attention's group kernel (where 2 to 8 query heads share a key/value head and
     * the split kernel could take them; the default there), the split kernel (the default where
     * the head allows it and the group kernel does not), then the tile kernel for every head */
    for (int kind = 2; kind >= 0; kind--) {
        int split = kind >= 1;
        pw_cuda_set_cache_group(kind == 2);
        pw_cuda_set_cache_split(split);
        printf("KV cache: %s kernel\n", kind == 2 ? "group" : split ? "split" : "tile");
        run_cache(6, 2, 5, 0, &rng);
        run_cache(9, 3, 64, 0, &rng);
        run_cache(4, 4, 8, 0, &rng);
        run_cache(4, 2, 64, 1, &rng); /* 300 keys: the online softmax over three tiles */
        run_cache(2, 1, 128, 1, &rng); /* Llama's heads: 32 lanes a key (split) */
        run_cache_bf16(6, 2, 5, 0, &rng);  /* hs not a multiple of 8: element by element */
        run_cache_bf16(9, 3, 64, 0, &rng); /* 16-byte reads of the keys */
        run_cache_bf16(4, 4, 8, 0, &rng);
        run_cache_bf16(4, 2, 64, 1, &rng);
        run_cache_bf16(2, 1, 128, 1, &rng); /* 16 lanes a key (split) */
        run_cache_bf16(14, 2, 64, 1, &rng); /* Qwen2.5-0.5B's heads: 7 a group */
    }
    pw_cuda_set_cache_split(1);
    pw_cuda_set_cache_group(1);
    pw_cuda_release();
    return pw_test_done("test_cuda_attention_gqa");
}
