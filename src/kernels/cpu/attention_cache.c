/* attention_cache.c: attention of new tokens over a KV cache on the CPU (generation): each token
 * stores its k and v in its row's cache slots, then attends causally over everything cached;
 * grouped-query (caches of NKV heads, each read by NH / NKV query heads) and multi-head. The
 * cache holds float32, or bfloat16 (rounded to nearest even as a token is stored, widened as
 * it is read: the float32 kernel over a cache of the rounded values, bit for bit). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_bf16.h"
#include "pw_kernels.h"

/* One cache: float32 (f) or bfloat16 (h), the other NULL. */
typedef struct Cache {
    float *f;
    uint16_t *h;
} Cache;

/* The query heads of key/value head kv over segment s (its tokens' k and v already stored),
 * reading that head's keys from K and values from Vc, slots 0 .. the segment's last. */
static void attend(float *out, const float *K, const float *Vc, float *scores, const float *qkv,
                   int s, int kv, int off, int n, int slot0, int maxT, int NH, int NKV, int hs)
{
    const int W = (NH + 2 * NKV) * hs, C = NH * hs, G = NH / NKV;
    const float scale = 1.0f / sqrtf((float)hs);
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

static void cache_forward(float *out, Cache kc, Cache vc, float *scores, const float *qkv,
                          const int *seg_row, const int *seg_off, const int *seg_slot0, int nseg,
                          int maxT, int NH, int NKV, int hs)
{
    const int W = (NH + 2 * NKV) * hs;
    int failed = 0;

    /* one (segment, key/value head) per iteration, not (segment, query head): the group's
     * query heads read the slots this iteration writes, so no other thread may write them */
#pragma omp parallel for schedule(dynamic) reduction(| : failed)
    for (int sk = 0; sk < nseg * NKV; sk++) {
        int s = sk / NKV, kv = sk % NKV, b = seg_row[s];
        int off = seg_off[s], n = seg_off[s + 1] - off, slot0 = seg_slot0[s];
        size_t head = ((size_t)b * NKV + kv) * maxT * hs, used = (size_t)(slot0 + n) * hs;
        for (int j = 0; j < n; j++) {
            const float *k = qkv + (size_t)(off + j) * W + (size_t)(NH + kv) * hs;
            const float *v = qkv + (size_t)(off + j) * W + (size_t)(NH + NKV + kv) * hs;
            size_t at = head + (size_t)(slot0 + j) * hs;
            if (kc.f) {
                memcpy(kc.f + at, k, hs * sizeof(float));
                memcpy(vc.f + at, v, hs * sizeof(float));
            } else {
                for (int i = 0; i < hs; i++) {
                    kc.h[at + i] = pw_bf16_from_f32(k[i]);
                    vc.h[at + i] = pw_bf16_from_f32(v[i]);
                }
            }
        }
        if (kc.f) {
            attend(out, kc.f + head, vc.f + head, scores, qkv, s, kv, off, n, slot0, maxT, NH,
                   NKV, hs);
            continue;
        }
        /* bfloat16: the slots this segment reads, widened once for its query heads */
        float *K = malloc(2 * used * sizeof(float));
        if (!K) {
            failed = 1;
            continue;
        }
        for (size_t i = 0; i < used; i++) {
            K[i] = pw_bf16_to_f32(kc.h[head + i]);
            K[used + i] = pw_bf16_to_f32(vc.h[head + i]);
        }
        attend(out, K, K + used, scores, qkv, s, kv, off, n, slot0, maxT, NH, NKV, hs);
        free(K);
    }
    /* the kernels return nothing: running out of host memory for a few rows of a cache is as
     * fatal here as in the batch attention's scratch */
    if (failed) {
        fprintf(stderr, "attention over a bfloat16 KV cache: out of memory for %d slots of %d\n",
                maxT, hs);
        abort();
    }
}

void pw_attention_cache_gqa_forward(float *out, float *kcache, float *vcache, float *scores,
                                    const float *qkv, const int *seg_row, const int *seg_off,
                                    const int *seg_slot0, int nseg, int N, int maxT, int NH,
                                    int NKV, int hs)
{
    (void)N; /* the segments say which tokens there are */
    cache_forward(out, (Cache){kcache, NULL}, (Cache){vcache, NULL}, scores, qkv, seg_row,
                  seg_off, seg_slot0, nseg, maxT, NH, NKV, hs);
}

void pw_attention_cache_gqa_forward_bf16(float *out, uint16_t *kcache, uint16_t *vcache,
                                         float *scores, const float *qkv, const int *seg_row,
                                         const int *seg_off, const int *seg_slot0, int nseg,
                                         int N, int maxT, int NH, int NKV, int hs)
{
    (void)N;
    cache_forward(out, (Cache){NULL, kcache}, (Cache){NULL, vcache}, scores, qkv, seg_row,
                  seg_off, seg_slot0, nseg, maxT, NH, NKV, hs);
}

/* the multi-head case: a cache head per query head, qkv rows [q | k | v] of C = NH hs each */
void pw_attention_cache_forward(float *out, float *kcache, float *vcache, float *scores,
                                const float *qkv, const int *seg_row, const int *seg_off,
                                const int *seg_slot0, int nseg, int N, int maxT, int C, int NH)
{
    pw_attention_cache_gqa_forward(out, kcache, vcache, scores, qkv, seg_row, seg_off, seg_slot0,
                                   nseg, N, maxT, NH, NH, C / NH);
}
