/* attention_cache.c: attention of new tokens over a KV cache on the CPU (generation): each token
 * stores its k and v in its row's cache slots, then attends causally over everything cached;
 * grouped-query (caches of NKV heads, each read by NH / NKV query heads) and multi-head. */
#include <math.h>
#include <string.h>

#include "pw_kernels.h"

void pw_attention_cache_gqa_forward(float *out, float *kcache, float *vcache, float *scores,
                                    const float *qkv, const int *seg_row, const int *seg_off,
                                    const int *seg_slot0, int nseg, int N, int maxT, int NH,
                                    int NKV, int hs)
{
    const int W = (NH + 2 * NKV) * hs, C = NH * hs, G = NH / NKV;
    const float scale = 1.0f / sqrtf((float)hs);
    (void)N; /* the segments say which tokens there are */

    /* one (segment, key/value head) per iteration, not (segment, query head): the group's
     * query heads read the slots this iteration writes, so no other thread may write them */
#pragma omp parallel for schedule(dynamic)
    for (int sk = 0; sk < nseg * NKV; sk++) {
        int s = sk / NKV, kv = sk % NKV, b = seg_row[s];
        int off = seg_off[s], n = seg_off[s + 1] - off, slot0 = seg_slot0[s];
        float *K = kcache + ((size_t)b * NKV + kv) * maxT * hs;
        float *Vc = vcache + ((size_t)b * NKV + kv) * maxT * hs;
        for (int j = 0; j < n; j++) {
            const float *row = qkv + (size_t)(off + j) * W;
            memcpy(K + (size_t)(slot0 + j) * hs, row + (size_t)(NH + kv) * hs, hs * sizeof(float));
            memcpy(Vc + (size_t)(slot0 + j) * hs, row + (size_t)(NH + NKV + kv) * hs,
                   hs * sizeof(float));
        }
        for (int h = kv * G; h < (kv + 1) * G; h++) {
            float *sc = scores + ((size_t)s * NH + h) * maxT;
            for (int j = 0; j < n; j++) {
                const float *q = qkv + (size_t)(off + j) * W + h * hs;
                int keys = slot0 + j + 1; /* causal: up to and including this token */
                float mx = -INFINITY;
                for (int t = 0; t < keys; t++) {
                    const float *k = K + (size_t)t * hs;
                    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                    for (int i = 0; i < hs; i++) dot += q[i] * k[i];
                    sc[t] = dot * scale;
                    mx = sc[t] > mx ? sc[t] : mx;
                }
                float z = 0.0f;
                for (int t = 0; t < keys; t++) {
                    sc[t] = expf(sc[t] - mx);
                    z += sc[t];
                }
                float *o = out + (size_t)(off + j) * C + h * hs;
                for (int i = 0; i < hs; i++) o[i] = 0.0f;
                for (int t = 0; t < keys; t++) {
                    const float *v = Vc + (size_t)t * hs;
                    float w = sc[t] / z;
#pragma omp simd
                    for (int i = 0; i < hs; i++) o[i] += w * v[i];
                }
            }
        }
    }
}

/* the multi-head case: a cache head per query head, qkv rows [q | k | v] of C = NH hs each */
void pw_attention_cache_forward(float *out, float *kcache, float *vcache, float *scores,
                                const float *qkv, const int *seg_row, const int *seg_off,
                                const int *seg_slot0, int nseg, int N, int maxT, int C, int NH)
{
    pw_attention_cache_gqa_forward(out, kcache, vcache, scores, qkv, seg_row, seg_off, seg_slot0,
                                   nseg, N, maxT, NH, NH, C / NH);
}
