/* attention.c: causal self-attention with a key padding mask on the CPU, forward and backward,
 * grouped-query (NH / NKV query heads per key and value head) and multi-head (NKV = NH); the
 * products are OpenBLAS sgemms that read q, k and v in place in qkv. What forward keeps for
 * backward is one log-sum-exp per query row, not the (B, NH, T, T) probabilities: both build
 * the scores of a group of heads at a time in a bounded scratch, and backward recomputes them
 * (one more q k^T product) instead of reading them back. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_bf16.h"
#include "pw_kernels.h"
#include "rounded.h"
#include "vecmath.h"

/* Query rows per sgemm. Causality means block [r0, r1) only needs keys before r1, so cutting
 * the rows in blocks skips most of the upper triangle while each sgemm stays large enough to
 * run near full speed. */
#define ATT_BLOCK 64

/* A left-padded row starts at its first real token; nothing before it is ever attended to. */
static int first_real(const int *mask, int b, int T)
{
    if (!mask) return 0;
    int t = 0;
    while (t < T && !mask[b * T + t]) t++;
    return t;
}

static int is_real(const int *mask, int b, int t, int T) { return !mask || mask[b * T + t]; }

/* Turn the scores of query t in row[lo..t] into probabilities over the real keys, in place,
 * zero the rest of the row up to r1 (the upper triangle of its block, padding, and all of a
 * padding query) and return log sum exp of the scores (0 for a padding query). With round_p
 * (the bfloat16 twin) each exp(s - max) is rounded to bfloat16 before it is normalised, as the
 * GPU's tensor-core kernel rounds it for its P v product; the sum is of the unrounded values,
 * as there. */
static float softmax_row(float *row, const int *mrow, int lo, int t, int r1, int real,
                         int round_p)
{
    if (!real) {
        for (int s = lo; s < r1; s++) row[s] = 0.0f;
        return 0.0f;
    }
    /* padding keys become -inf first, so the loops below carry no condition and vectorise */
    if (mrow) {
#pragma omp simd
        for (int s = lo; s <= t; s++) row[s] = mrow[s] ? row[s] : -INFINITY;
    }
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int s = lo; s <= t; s++) m = row[s] > m ? row[s] : m;
    float z = 0.0f;
#pragma omp simd reduction(+ : z)
    for (int s = lo; s <= t; s++) {
        row[s] = pw_vexpf(row[s] - m);
        z += row[s];
    }
    if (round_p)
        for (int s = lo; s <= t; s++) row[s] = pw_bf16_round(row[s]);
    float inv = 1.0f / z; /* z >= 1: the query itself is real and holds the max or more */
#pragma omp simd
    for (int s = lo; s <= t; s++) row[s] *= inv;
    for (int s = t + 1; s < r1; s++) row[s] = 0.0f;
    return m + logf(z);
}

/* Backward's recomputation: the probabilities of query t from its scores in row[lo..t] and the
 * forward's log-sum-exp, exp(s - lse) over the real keys, 0 elsewhere up to r1. */
static void probs_row(float *row, const int *mrow, int lo, int t, int r1, int real, float lse)
{
    if (!real) {
        for (int s = lo; s < r1; s++) row[s] = 0.0f;
        return;
    }
#pragma omp simd
    for (int s = lo; s <= t; s++) row[s] = (!mrow || mrow[s]) ? pw_vexpf(row[s] - lse) : 0.0f;
    for (int s = t + 1; s < r1; s++) row[s] = 0.0f;
}

/* The end of the diagonal block of query t: the block sgemms read rows lo..r1 */
static int block_end(int lo, int t, int T)
{
    int r1 = lo + ((t - lo) / ATT_BLOCK + 1) * ATT_BLOCK;
    return r1 < T ? r1 : T;
}

/* With P = softmax(S), dS = P * (dP - rowsum(P * dP)); applied in place to dp[lo..r1) of one
 * query row, scaled, and zero past the diagonal so that the block sgemms may read it whole.
 * D: rowsum(P * dP) given (the bfloat16 twin's rowsum(dout * out)); NULL: computed here. */
static void softmax_backward_row(float *dp, const float *p, int lo, int t, int r1, int real,
                                 float scale, const float *D)
{
    if (!real) {
        for (int s = lo; s < r1; s++) dp[s] = 0.0f;
        return;
    }
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int s = lo; s <= t; s++) dot += p[s] * dp[s];
    if (D) dot = *D;
#pragma omp simd
    for (int s = lo; s <= t; s++) dp[s] = scale * p[s] * (dp[s] - dot);
    for (int s = t + 1; s < r1; s++) dp[s] = 0.0f;
}

/* The scratch holds the scores (and, in backward, dP) of this many bytes' worth of heads at a
 * time (at least one head): all of GPT-2 124M's 48 heads at T = 256, while long sequences stay
 * bounded. */
#define ATT_SCRATCH_BYTES (16u << 20)

/* Heads per group for scratch buffers of `per_head` T x T matrices each, and the scratch. */
static float *att_scratch(int T, int BH, int per_head, int *group, const char *who)
{
    size_t head = sizeof(float) * (size_t)T * T * per_head;
    int g = head >= ATT_SCRATCH_BYTES ? 1 : (int)(ATT_SCRATCH_BYTES / head);
    *group = g < BH ? g : BH;
    float *scratch = malloc(head * (size_t)*group);
    if (!scratch) {
        fprintf(stderr, "%s: out of memory for %d x %d x %dx%d floats\n", who, *group, per_head,
                T, T);
        abort();
    }
    return scratch;
}

/* S[r0:r1, lo:r1] = scale q k^T for the blocks on or below the diagonal of head bh, into its
 * T x T matrix of the scratch */
static void scores(float *S, const float *qkv, const int *mask, int bh, int T, int NH, int NKV,
                   int hs, float scale);

/* Where one query head's q and its group's k and v start in a row of qkv (the strides of all
 * three are the whole row, W floats) */
typedef struct GqaHead {
    size_t q, k, v;
} GqaHead;

static GqaHead gqa_head(int b, int h, int T, int NH, int NKV, int hs)
{
    size_t W = (size_t)(NH + 2 * NKV) * hs, base = (size_t)b * T * W;
    int kv = h / (NH / NKV);
    return (GqaHead){base + (size_t)h * hs, base + (size_t)(NH + kv) * hs,
                     base + (size_t)(NH + NKV + kv) * hs};
}

static void scores(float *S, const float *qkv, const int *mask, int bh, int T, int NH, int NKV,
                   int hs, float scale)
{
    int W = (NH + 2 * NKV) * hs, b = bh / NH, lo = first_real(mask, b, T);
    GqaHead at = gqa_head(b, bh % NH, T, NH, NKV, hs);
    for (int r0 = lo; r0 < T; r0 += ATT_BLOCK) {
        int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, r1 - lo, hs, scale,
                    qkv + at.q + (size_t)r0 * W, W, qkv + at.k + (size_t)lo * W, W, 0.0f,
                    S + (size_t)r0 * T + lo, T);
    }
}

static void gqa_forward(float *out, float *lse, const float *qkv, const int *mask, int B, int T,
                        int NH, int NKV, int hs, int round_p)
{
    int W = (NH + 2 * NKV) * hs, C = NH * hs, BH = B * NH, group;
    float scale = 1.0f / sqrtf((float)hs);
    float *scratch = att_scratch(T, BH, 1, &group, "pw_attention_gqa_forward");
    /* rows before a sequence's first real token are padding: their output is zero */
    for (int b = 0; b < B; b++)
        for (int t = 0, lo = first_real(mask, b, T); t < lo; t++)
            for (int c = 0; c < C; c++) out[((size_t)b * T + t) * C + c] = 0.0f;
    /* per group of heads, as three phases (sgemms, one parallel loop, sgemms): switching between
     * the OpenBLAS and OpenMP thread pools once per head costs more than the arithmetic */
    for (int g0 = 0; g0 < BH; g0 += group) {
        int g1 = g0 + group < BH ? g0 + group : BH;
        for (int bh = g0; bh < g1; bh++)
            scores(scratch + (size_t)(bh - g0) * T * T, qkv, mask, bh, T, NH, NKV, hs, scale);

#pragma omp parallel for schedule(static)
        for (long i = (long)g0 * T; i < (long)g1 * T; i++) {
            int t = (int)(i % T), b = (int)(i / ((long)NH * T)), lo = first_real(mask, b, T);
            if (t < lo) {
                lse[i] = 0.0f;
                continue;
            }
            lse[i] = softmax_row(scratch + (size_t)(i - (long)g0 * T) * T,
                                 mask ? mask + (size_t)b * T : NULL, lo, t, block_end(lo, t, T),
                                 is_real(mask, b, t, T), round_p);
        }

        /* out[b,r0:r1,h] = P[r0:r1,lo:r1] v[lo:r1] */
        for (int bh = g0; bh < g1; bh++) {
            int b = bh / NH, lo = first_real(mask, b, T);
            GqaHead at = gqa_head(b, bh % NH, T, NH, NKV, hs);
            const float *a = scratch + (size_t)(bh - g0) * T * T;
            for (int r0 = lo; r0 < T; r0 += ATT_BLOCK) {
                int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, hs, r1 - lo,
                            1.0f, a + (size_t)r0 * T + lo, T, qkv + at.v + (size_t)lo * W, W,
                            0.0f, out + ((size_t)b * T + r0) * C + (bh % NH) * hs, C);
            }
        }
    }
    free(scratch);
}

/* D (B,NH,T): NULL for the float32 backward; the bfloat16 twin's rowsum(dout * out), which
 * also rounds P and dS to bfloat16 before the products that read them */
static void gqa_backward(float *dqkv, const float *dout, const float *qkv, const float *lse,
                         const int *mask, int B, int T, int NH, int NKV, int hs, const float *D)
{
    int W = (NH + 2 * NKV) * hs, C = NH * hs, BH = B * NH, group;
    float scale = 1.0f / sqrtf((float)hs);
    /* P, recomputed from the scores and the forward's log-sum-exp, and dP then dS, for a group
     * of heads: two T x T matrices a head */
    float *scratch = att_scratch(T, BH, 2, &group, "pw_attention_gqa_backward");
    float *pbuf = scratch, *dpbuf = scratch + (size_t)group * T * T;
    for (int g0 = 0; g0 < BH; g0 += group) {
        int g1 = g0 + group < BH ? g0 + group : BH;

        /* S as forward computed it; dP[r0:r1, lo:r1] = dout[r0:r1] v[lo:r1]^T */
        for (int bh = g0; bh < g1; bh++) {
            int b = bh / NH, lo = first_real(mask, b, T);
            GqaHead at = gqa_head(b, bh % NH, T, NH, NKV, hs);
            const float *dO = dout + (size_t)b * T * C + (bh % NH) * hs;
            float *dp = dpbuf + (size_t)(bh - g0) * T * T;
            scores(pbuf + (size_t)(bh - g0) * T * T, qkv, mask, bh, T, NH, NKV, hs, scale);
            for (int r0 = lo; r0 < T; r0 += ATT_BLOCK) {
                int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, r1 - lo, hs,
                            1.0f, dO + (size_t)r0 * C, C, qkv + at.v + (size_t)lo * W, W,
                            0.0f, dp + (size_t)r0 * T + lo, T);
            }
        }

#pragma omp parallel for schedule(static)
        for (long i = (long)g0 * T; i < (long)g1 * T; i++) {
            int t = (int)(i % T), b = (int)(i / ((long)NH * T)), lo = first_real(mask, b, T);
            if (t < lo) continue;
            int r1 = block_end(lo, t, T), real = is_real(mask, b, t, T);
            size_t row = (size_t)(i - (long)g0 * T) * T;
            probs_row(pbuf + row, mask ? mask + (size_t)b * T : NULL, lo, t, r1, real, lse[i]);
            softmax_backward_row(dpbuf + row, pbuf + row, lo, t, r1, real, scale,
                                 D ? D + i : NULL);
            for (int s = lo; D && s <= t; s++) {
                pbuf[row + s] = pw_bf16_round(pbuf[row + s]);
                dpbuf[row + s] = pw_bf16_round(dpbuf[row + s]);
            }
        }

        /* the heads of a group add into the same dk and dv: this loop stays sequential */
        for (int bh = g0; bh < g1; bh++) {
            int b = bh / NH, lo = first_real(mask, b, T);
            GqaHead at = gqa_head(b, bh % NH, T, NH, NKV, hs);
            const float *q = qkv + at.q, *k = qkv + at.k;
            float *dq = dqkv + at.q, *dk = dqkv + at.k, *dv = dqkv + at.v;
            const float *a = pbuf + (size_t)(bh - g0) * T * T;
            const float *dp = dpbuf + (size_t)(bh - g0) * T * T;
            const float *dO = dout + (size_t)b * T * C + (bh % NH) * hs;
            for (int r0 = lo; r0 < T; r0 += ATT_BLOCK) {
                int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T;
                const float *dS = dp + (size_t)r0 * T + lo, *P = a + (size_t)r0 * T + lo;
                /* dq[r0:r1] += dS k[lo:r1] */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, hs, r1 - lo,
                            1.0f, dS, T, k + (size_t)lo * W, W, 1.0f, dq + (size_t)r0 * W, W);
                /* dk[lo:r1] += dS^T q[r0:r1] */
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r1 - lo, hs, r1 - r0,
                            1.0f, dS, T, q + (size_t)r0 * W, W, 1.0f, dk + (size_t)lo * W, W);
                /* dv[lo:r1] += P^T dout[r0:r1] */
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r1 - lo, hs, r1 - r0,
                            1.0f, P, T, dO + (size_t)r0 * C, C, 1.0f, dv + (size_t)lo * W, W);
            }
        }
    }
    free(scratch);
}

void pw_attention_gqa_forward(float *out, float *lse, const float *qkv, const int *mask, int B,
                              int T, int NH, int NKV, int hs)
{
    gqa_forward(out, lse, qkv, mask, B, T, NH, NKV, hs, 0);
}

void pw_attention_gqa_backward(float *dqkv, const float *dout, const float *qkv, const float *lse,
                               const int *mask, int B, int T, int NH, int NKV, int hs)
{
    gqa_backward(dqkv, dout, qkv, lse, mask, B, T, NH, NKV, hs, NULL);
}

/* ---- the bfloat16 twin of the GPU's tensor-core attention (pw_kernels.h): what it rounds, in
 * the order the GPU rounds it, on a rounded copy of the operands */
void pw_attention_gqa_forward_bf16(float *out, float *lse, const uint16_t *qkv, const int *mask,
                                   int B, int T, int NH, int NKV, int hs)
{
    size_t n = (size_t)B * T * (NH + 2 * NKV) * hs;
    float *r = pw_widened_rows(qkv, 1, n, n, "pw_attention_gqa_forward_bf16");
    gqa_forward(out, lse, r, mask, B, T, NH, NKV, hs, 1);
    free(r);
}

void pw_attention_gqa_backward_bf16(float *dqkv, const float *dout, const uint16_t *qkv,
                                    const uint16_t *out16, const float *lse, const int *mask,
                                    int B, int T, int NH, int NKV, int hs)
{
    size_t C = (size_t)NH * hs, n = (size_t)B * T * (NH + 2 * NKV) * hs;
    float *rq = pw_widened_rows(qkv, 1, n, n, "pw_attention_gqa_backward_bf16");
    float *rd = pw_rounded_copy(dout, (size_t)B * T * C, "pw_attention_gqa_backward_bf16");
    float *D = malloc(sizeof(float) * ((size_t)B * NH * T + 1));
    if (!D) {
        fprintf(stderr, "pw_attention_gqa_backward_bf16: out of memory\n");
        abort();
    }
    /* D = rowsum(dout * out) per query head, from the float32 dout and the rounded out (0 where
     * the query is padding: never read there) */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const uint16_t *o = out16 + ((size_t)b * T + t) * C + (size_t)h * hs;
                const float *g = dout + ((size_t)b * T + t) * C + (size_t)h * hs;
                float d = 0.0f;
                if (is_real(mask, b, t, T))
                    for (int c = 0; c < hs; c++) d += g[c] * pw_bf16_to_f32(o[c]);
                D[((size_t)b * NH + h) * T + t] = d;
            }
    memset(dqkv, 0, sizeof(float) * n); /* the GPU's kernels set it */
    gqa_backward(dqkv, rd, rq, lse, mask, B, T, NH, NKV, hs, D);
    free(D);
    free(rd);
    free(rq);
}

/* GPT-2's attention is the grouped case with a key and value head per query head: qkv (B,T,3C)
 * is [q heads | k heads | v heads] with hs = C / NH, so the same sgemms run on the same data */
void pw_attention_forward(float *out, float *lse, const float *qkv, const int *mask,
                          int B, int T, int C, int NH)
{
    pw_attention_gqa_forward(out, lse, qkv, mask, B, T, NH, NH, C / NH);
}

void pw_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *lse,
                           const int *mask, int B, int T, int C, int NH)
{
    pw_attention_gqa_backward(dqkv, dout, qkv, lse, mask, B, T, NH, NH, C / NH);
}
