/* test_cuda_attention_cache.c: the CUDA attention over a KV cache and the row gather against
 * their CPU twins: the cache each leaves (bit for bit: it is a copy) and the attention output. */
#include "cutest.h"
#include "kernels/cache_case.h"

int main(void)
{
    cu_require_gpu("test_cuda_attention_cache");
    unsigned long long rng = 31;
    CacheCase cc;
    cache_case_make(&cc, &rng);
    const int C = CC_C, NH = CC_NH, T = CC_MAXT, N = cc.N;
    const size_t cache = (size_t)CC_MAXB * T * C, cb = cache * sizeof(float);

    float *K = cu_copy(cc.k0, cache), *V = cu_copy(cc.v0, cache);
    float *out = cu_host((size_t)N * C * sizeof(float));
    float *scores = cu_host((size_t)CC_MAXB * NH * T * sizeof(float));
    pw_attention_cache_forward(out, K, V, scores, cc.qkv, cc.seg_row, cc.seg_off, cc.seg_slot0,
                               cc.nseg, N, T, C, NH);

    float *d_K = cu_upload(cc.k0, cb), *d_V = cu_upload(cc.v0, cb);
    float *d_qkv = cu_upload(cc.qkv, (size_t)N * 3 * C * sizeof(float));
    int *d_row = cu_upload(cc.seg_row, sizeof cc.seg_row);
    int *d_off = cu_upload(cc.seg_off, sizeof cc.seg_off);
    int *d_slot = cu_upload(cc.seg_slot0, sizeof cc.seg_slot0);
    float *d_out = cu_dev((size_t)N * C * sizeof(float));
    cu_poison(d_out, (size_t)N * C * sizeof(float));
    pw_attention_cache_forward_cuda(d_out, d_K, d_V, NULL, d_qkv, d_row, d_off, d_slot, cc.nseg, N,
                                    T, C, NH, 0);
    cu_compare("k cache after the pass", d_K, K, cache, 0.0);
    cu_compare("v cache after the pass", d_V, V, cache, 0.0);
    cu_compare("attention output", d_out, out, (size_t)N * C, CU_TOL_F32);

    /* the gather: rows of the attention output, repeated and out of order */
    const int rows[5] = {11, 0, 4, 4, 9};
    float *g = cu_host(5 * (size_t)C * sizeof(float));
    pw_gather_rows(g, out, rows, 5, C);
    float *d_src = cu_upload(out, (size_t)N * C * sizeof(float));
    int *d_rows = cu_upload(rows, sizeof rows);
    float *d_g = cu_dev(5 * (size_t)C * sizeof(float));
    cu_poison(d_g, 5 * (size_t)C * sizeof(float));
    pw_gather_rows_cuda(d_g, d_src, d_rows, 5, C, 0);
    cu_compare("gather", d_g, g, 5 * (size_t)C, 0.0);

    cu_release();
    cache_case_free(&cc);
    return pw_test_done("test_cuda_attention_cache");
}
