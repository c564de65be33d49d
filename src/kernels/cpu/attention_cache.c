/* attention_cache.c: attention of new tokens over a KV cache on the CPU (generation): each token
 * stores its k and v in its row's cache slots, then attends causally over everything cached. */
#include <math.h>
#include <string.h>

#include "pw_kernels.h"

void pw_attention_cache_forward(float *out, float *kcache, float *vcache, float *scores,
                                const float *qkv, const int *seg_row, const int *seg_off,
                                const int *seg_slot0, int nseg, int N, int maxT, int C, int NH)
{
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    (void)N; /* the segments say which tokens there are */

    /* one (segment, head) per iteration: the segment's own keys are written before any of its
     * queries reads them, and no other iteration touches that row and head of the cache */
#pragma omp parallel for schedule(dynamic)
    for (int sh = 0; sh < nseg * NH; sh++) {
        int s = sh / NH, h = sh % NH, b = seg_row[s];
        int off = seg_off[s], n = seg_off[s + 1] - off, slot0 = seg_slot0[s];
        float *K = kcache + ((size_t)b * NH + h) * maxT * hs;
        float *Vc = vcache + ((size_t)b * NH + h) * maxT * hs;
        float *sc = scores + (size_t)sh * maxT;
        for (int j = 0; j < n; j++) {
            const float *row = qkv + (size_t)(off + j) * 3 * C + h * hs;
            memcpy(K + (size_t)(slot0 + j) * hs, row + C, hs * sizeof(float));
            memcpy(Vc + (size_t)(slot0 + j) * hs, row + 2 * C, hs * sizeof(float));
        }
        for (int j = 0; j < n; j++) {
            const float *q = qkv + (size_t)(off + j) * 3 * C + h * hs;
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
