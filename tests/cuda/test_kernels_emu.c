/* test_kernels_emu.c: the GPU's row kernels of the Llama family and of the log-probs (the
 * sources nvcc compiles: logprobs_kernels.cuh, rmsnorm_kernels.cuh, rope_kernels.cuh,
 * swiglu_kernels.cuh) built here as C and run under the host emulation of emu.h, with the launch
 * geometry of their .cu files, against the CPU kernels on the same random data, within 1e-5:
 * log-probs and entropies of rows ld apart (NaN in the padding columns, a skipped row, a -inf
 * logit), their backward written in place over the logits (and its bf16 form, bit for bit the
 * float32 one scaled and rounded, written over the rows it reads), the statistics the forward
 * keeps and the backward given them (bit for bit the one that makes them again), rows read 16
 * bytes at a time and one float at a time (ld not a multiple of 4), cross-entropy; RMSNorm
 * forward and
 * backward (dweight: the kernel's terms, summed here by rows as the column sum does); Qwen3's
 * q/k norm over the heads of rows in place (head_norm_kernels.cuh: the values untouched, the
 * kept heads and statistics, the backward and both weights' terms, each weight's gradient NULL
 * in turn); rotary
 * embeddings of grouped-query rows, forward and backward; SwiGLU with an overflowing gate (and
 * its bf16 forms 8 columns a thread, bit for bit the one-at-a-time kernels'); the
 * attention GEMM path's softmax row kernels (attention_gemm_kernels.cuh); the batched copy
 * (copy_kernels.cuh: pieces of 16-, 4- and 1-byte words, zero fills, empty pieces, more pieces
 * than a launch takes, a piece of several tiles), byte for byte.
 * Needs no GPU. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sincos, as CUDA has it */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_test.h"

#include "attention_gemm_kernels.cuh"
#include "copy_kernels.cuh"
#include "head_norm_kernels.cuh"
#include "logprobs_kernels.cuh"
#include "rmsnorm_kernels.cuh"
#include "rope_kernels.cuh"
#include "swiglu_kernels.cuh"

#include "pw_kernels.h"
#include "pw_test.h"

#define TOL 1e-5


/* ---- Qwen3's q/k norm */
typedef struct HeadArgs {
    float *x, *raw, *rstd, *terms;
    const float *wq, *wk;
    int N, NH, NKV, hs, stride;
    float eps;
} HeadArgs;

static void head_fwd(void *p)
{
    HeadArgs *a = p;
    head_rmsnorm_forward_kernel(a->x, a->raw, a->rstd, a->wq, a->wk, a->N, a->NH, a->NKV, a->hs,
                                a->stride, a->eps);
}

static void head_terms(void *p)
{
    HeadArgs *a = p;
    head_rmsnorm_dw_terms_kernel(a->terms, a->x, a->raw, a->rstd, a->N, a->NH, a->NKV, a->hs,
                                 a->stride);
}

static void head_dinp(void *p)
{
    HeadArgs *a = p;
    head_rmsnorm_dinp_kernel(a->x, a->raw, a->rstd, a->wq, a->wk, a->N, a->NH, a->NKV, a->hs,
                             a->stride);
}

/* N rows of `stride` floats whose first NH + NKV heads of hs are normed (the rest, v heads and
 * any gap, must come out bit for bit as they went in), forward with and without the kept heads,
 * then the backward in place with the weights' terms summed here by rows as colsum.cu does */
static void run_head_norm(int N, int NH, int NKV, int hs, int stride, unsigned long long *rng)
{
    printf("head norm N=%d heads %d+%d hs=%d stride=%d\n", N, NH, NKV, hs, stride);
    const int H = NH + NKV;
    size_t n = (size_t)N * stride, nh = (size_t)N * H;
    float *x0 = emu_randn(n, 1.5, rng), *wq = emu_randn(hs, 1.0, rng);
    float *wk = emu_randn(hs, 1.0, rng), *dy = emu_randn(n, 1.0, rng);
    float *x = emu_copy(x0, n), *ex = emu_copy(x0, n), *ex2 = emu_copy(x0, n);
    float *raw = malloc(sizeof(float) * nh * hs), *eraw = malloc(sizeof(float) * nh * hs);
    float *rs = malloc(sizeof(float) * nh), *ers = malloc(sizeof(float) * nh);
    pw_head_rmsnorm_forward(x, raw, rs, wq, wk, N, NH, NKV, hs, stride, 1e-6f);
    HeadArgs a = {ex, eraw, ers, NULL, wq, wk, N, NH, NKV, hs, stride, 1e-6f};
    unsigned blocks = pw_row_blocks(nh);
    emu_launch(d1(blocks), d1(PW_ROW_THREADS), head_fwd, &a);
    emu_check("head norm x", ex, x, n, TOL);
    emu_check("head norm rstd", ers, rs, nh, TOL);
    CHECK(!memcmp(eraw, raw, sizeof(float) * nh * hs), "head norm: the kept heads differ");
    int untouched = 1;
    for (int r = 0; r < N; r++)
        for (int c = H * hs; c < stride; c++)
            untouched &= !memcmp(&ex[(size_t)r * stride + c], &x0[(size_t)r * stride + c], 4);
    CHECK(untouched, "head norm: a value past the normed heads changed");
    /* a pass no backward follows: nothing kept, the same heads */
    a = (HeadArgs){ex2, NULL, NULL, NULL, wq, wk, N, NH, NKV, hs, stride, 1e-6f};
    emu_launch(d1(blocks), d1(PW_ROW_THREADS), head_fwd, &a);
    CHECK(!memcmp(ex2, ex, sizeof(float) * n), "head norm without raw/rstd: other values");
    /* backward: dy's heads in place, the weights' gradients added to; sel says which are wanted
     * (3 both, 0 none), and as head_norm.cu, no terms at all when neither is */
    float *dw0 = emu_randn(2 * (size_t)hs, 1.0, rng), *terms = malloc(sizeof(float) * nh * hs);
    for (int sel = 3; sel >= 0; sel--) {
        printf("  backward, dwq %s, dwk %s\n", sel & 1 ? "wanted" : "NULL",
               sel & 2 ? "wanted" : "NULL");
        float *dx = emu_copy(dy, n), *edx = emu_copy(dy, n);
        float *dw = emu_copy(dw0, 2 * (size_t)hs), *edw = emu_copy(dw0, 2 * (size_t)hs);
        pw_head_rmsnorm_backward(dx, sel & 1 ? dw : NULL, sel & 2 ? dw + hs : NULL, raw, rs, wq, wk,
                                 N, NH, NKV, hs, stride);
        a = (HeadArgs){edx, eraw, ers, terms, wq, wk, N, NH, NKV, hs, stride, 0.0f};
        if (sel) emu_launch(ew_grid(nh * hs), d1(PW_EW_THREADS), head_terms, &a);
        emu_launch(d1(blocks), d1(PW_ROW_THREADS), head_dinp, &a);
        for (size_t r = 0; sel && r < nh; r++) { /* query rows first, then key rows */
            int key = r >= (size_t)N * NH;
            if (sel & (1 << key))
                for (int c = 0; c < hs; c++) edw[key * hs + c] += terms[r * hs + c];
        }
        emu_check("head norm dx", edx, dx, n, TOL);
        emu_check("head norm dwq (+=)", edw, dw, hs, TOL);
        emu_check("head norm dwk (+=)", edw + hs, dw + hs, hs, TOL);
        untouched = 1;
        for (int r = 0; r < N; r++)
            for (int c = H * hs; c < stride; c++)
                untouched &= !memcmp(&edx[(size_t)r * stride + c], &dy[(size_t)r * stride + c], 4);
        CHECK(untouched, "head norm backward: a gradient past the normed heads changed");
        free(dx), free(edx), free(dw), free(edw);
    }
    free(x0), free(wq), free(wk), free(dy), free(x), free(ex), free(ex2), free(raw), free(eraw);
    free(rs), free(ers), free(dw0), free(terms);
}

/* ---- log-probs */
typedef struct LpArgs {
    float *logp, *entropy, *loss, *dlogits;
    const float *logits, *dlogp, *dentropy;
    const int *targets;
    float gsign;
    int V, ld;
    uint16_t *dlogits16;
    float mul;
    float *st;        /* the forward's kept statistics, or NULL */
    const float *kst; /* the statistics the backward reads, or NULL: it makes them */
} LpArgs;

static void lp_fwd(void *p)
{
    LpArgs *a = p;
    logprobs_forward_kernel(a->logp, a->entropy, a->loss, a->st, a->logits, a->targets, a->V,
                            a->ld);
}

static void lp_bwd(void *p)
{
    LpArgs *a = p;
    logprobs_backward_kernel(a->dlogits, a->logits, a->kst, a->targets, a->dlogp, a->dentropy,
                             a->gsign, a->V, a->ld);
}

static void lp_bwd_bf16(void *p)
{
    LpArgs *a = p;
    logprobs_backward_bf16_kernel(a->dlogits16, a->logits, a->kst, a->targets, a->dlogp,
                                  a->dentropy, a->V, a->ld, a->mul);
}

/* the bf16 backward over the rows it reads (row i at 2 i ld halves) against the emulated
 * float32 kernel's gradient edx times mul, rounded: bit for bit (rows of NaN skipped: the -inf
 * token's, where both are NaN) */
static void check_lp_bf16(const LpArgs *f32, const float *edx, int N, float mul)
{
    int ld = f32->ld;
    float *buf = emu_copy(f32->logits, (size_t)N * ld);
    LpArgs a = *f32;
    a.logits = buf;
    a.dlogits16 = (uint16_t *)buf;
    a.mul = mul;
    emu_launch(d1((unsigned)N), d1(LP_THREADS), lp_bwd_bf16, &a);
    size_t bad = 0;
    for (int i = 0; i < N; i++) {
        if (isnan(edx[(size_t)i * ld])) continue;
        for (int v = 0; v < ld; v++)
            bad += a.dlogits16[(size_t)i * 2 * ld + v] !=
                   pw_bf16_from_f32(edx[(size_t)i * ld + v] * mul);
    }
    printf("  %-30s %zu differ\n",
           a.kst ? "logprobs backward bf16 (kept)" : "logprobs backward bf16", bad);
    CHECK(bad == 0, "logprobs backward bf16: %zu values are not the float32 ones scaled, rounded",
          bad);
    free(buf);
}

static void run_logprobs(int N, int V, int ld, unsigned long long *rng)
{
    printf("logprobs N=%d V=%d ld=%d\n", N, V, ld);
    float *x = emu_randn((size_t)N * ld, 3.0, rng);
    int *tg = malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++) {
        tg[i] = (int)(pw_test_rng_next(rng) % (unsigned)V);
        for (int v = V; v < ld; v++) x[(size_t)i * ld + v] = NAN;
    }
    if (N >= 3) {
        tg[1] = -1;                                      /* a skipped row */
        x[(size_t)2 * ld + (tg[2] + 1) % V] = -INFINITY; /* a ruled-out token */
    }
    float *lp = malloc(sizeof(float) * 4 * N), *H = lp + N, *elp = lp + 2 * N, *eH = lp + 3 * N;
    float *st = malloc(sizeof(float) * 2 * PW_LP_STATS * N), *est = st + PW_LP_STATS * N;
    pw_logprobs_forward(lp, H, st, x, tg, N, V, ld);
    LpArgs a = {elp, eH, NULL, NULL, x, NULL, NULL, tg, 1.0f, V, ld, NULL, 1.0f, NULL, NULL};
    emu_launch(d1((unsigned)N), d1(LP_THREADS), lp_fwd, &a);
    emu_check("logp", elp, lp, N, TOL);
    /* the same forward keeping its statistics: the same log-probs, the CPU's statistics */
    float *klp = malloc(sizeof(float) * N);
    a.logp = klp, a.st = est;
    emu_launch(d1((unsigned)N), d1(LP_THREADS), lp_fwd, &a);
    CHECK(!memcmp(klp, elp, sizeof(float) * N), "logp: keeping the statistics changed it");
    for (int i = 0; i < N; i++) {
        const float *k = est + (size_t)i * PW_LP_STATS, *c = st + (size_t)i * PW_LP_STATS;
        CHECK(k[0] == c[0] && fabsf(k[1] - c[1]) <= TOL * (1.0f + fabsf(c[1])) &&
                  memcmp(&k[2], &eH[i], sizeof(float)) == 0,
              "row %d: kept statistics (%g %g %g), the CPU's (%g %g %g)", i, k[0], k[1], k[2],
              c[0], c[1], c[2]);
    }
    /* the CPU's entropy is NaN on a row with a -inf logit (0 * -inf): not compared there */
    for (int i = 0; i < N; i++)
        if (isnan(H[i])) H[i] = eH[i] = 0.0f;
    emu_check("entropy", eH, H, N, TOL);

    float *g = emu_randn(2 * (size_t)N, 1.0, rng);
    float *dx = emu_copy(x, (size_t)N * ld), *edx = emu_copy(x, (size_t)N * ld);
    pw_logprobs_backward(dx, dx, NULL, tg, g, g + N, N, V, ld);
    a = (LpArgs){NULL, NULL, NULL, edx, edx, g, g + N, tg, 1.0f, V, ld, NULL, 1.0f, NULL, NULL};
    emu_launch(d1((unsigned)N), d1(LP_THREADS), lp_bwd, &a); /* in place, as the model calls it */
    float *kdx = emu_copy(x, (size_t)N * ld);
    a.dlogits = kdx, a.logits = kdx, a.kst = est;
    emu_launch(d1((unsigned)N), d1(LP_THREADS), lp_bwd, &a);
    CHECK(!memcmp(kdx, edx, sizeof(float) * N * ld),
          "logprobs backward: the kept statistics changed dlogits");
    a.logits = x;
    check_lp_bf16(&a, edx, N, 1.0f / 0.7f);
    a.kst = NULL;
    check_lp_bf16(&a, edx, N, 1.0f / 0.7f);
    for (int i = 0; i < N; i++) /* the same -inf row: the CPU's gradient is NaN there */
        if (isnan(dx[(size_t)i * ld])) {
            memset(dx + (size_t)i * ld, 0, sizeof(float) * ld);
            memset(edx + (size_t)i * ld, 0, sizeof(float) * ld);
        }
    emu_check("logprobs backward (in place)", edx, dx, (size_t)N * ld, TOL);

    float *loss = malloc(sizeof(float) * 2 * N), *eloss = loss + N;
    for (int i = 0; i < N; i++) tg[i] = tg[i] < 0 ? 0 : tg[i];
    float *xc = emu_randn((size_t)N * V, 3.0, rng);
    pw_crossentropy_forward(loss, xc, tg, N, V);
    a = (LpArgs){NULL, NULL, eloss, NULL, xc, NULL, NULL, tg, 1.0f, V, V, NULL, 1.0f, NULL, NULL};
    emu_launch(d1((unsigned)N), d1(LP_THREADS), lp_fwd, &a);
    emu_check("cross-entropy", eloss, loss, N, TOL);
    float *dc = malloc(sizeof(float) * 2 * (size_t)N * V), *edc = dc + (size_t)N * V;
    pw_crossentropy_backward(dc, xc, tg, g, N, V);
    a = (LpArgs){NULL, NULL, NULL, edc, xc, g, NULL, tg, -1.0f, V, V, NULL, 1.0f, NULL, NULL};
    emu_launch(d1((unsigned)N), d1(LP_THREADS), lp_bwd, &a);
    emu_check("cross-entropy backward", edc, dc, (size_t)N * V, TOL);
    free(x), free(tg), free(lp), free(g), free(dx), free(edx), free(loss), free(xc), free(dc);
    free(st), free(klp), free(kdx);
}

/* ---- RMSNorm */
typedef struct RmsArgs {
    float *out, *rstd, *dinp, *terms;
    uint16_t *out16; /* a bfloat16 output, or NULL */
    const float *inp, *weight, *dout;
    int N, C;
    float eps;
    float *res;        /* the fused residual's sum, or NULL */
    const float *inp2; /* its second input, or NULL: the plain RMSNorm */
} RmsArgs;

static void rms_fwd(void *p)
{
    RmsArgs *a = p;
    rmsnorm_forward_kernel(a->out, a->out16, a->rstd, a->res, a->inp, a->inp2, a->weight, a->N,
                           a->C, a->eps);
}

static void rms_fwd_vec(void *p)
{
    RmsArgs *a = p;
    rmsnorm_forward_vec_kernel(a->out, a->out16, a->rstd, a->res, a->inp, a->inp2, a->weight,
                               a->N, a->C, a->eps);
}

/* The float4 forward (pw_cuda_set_ln_vec) as rmsnorm.cu launches it: plain, bf16 (its own
 * float32 rounded, bit for bit) and with the residual in place (the sum bit for bit the CPU's),
 * against the CPU within TOL */
static void run_rmsnorm_vec(int N, int C, float eps, unsigned long long *rng)
{
    printf("rmsnorm, float4 kernel, N=%d C=%d\n", N, C);
    size_t n = (size_t)N * C;
    float *x = emu_randn(n, 1.0, rng), *w = emu_randn(C, 1.0, rng);
    float *y = malloc(sizeof(float) * 2 * n), *ey = y + n, *rs = malloc(sizeof(float) * 2 * N);
    float *ers = rs + N;
    uint16_t *y16 = malloc(sizeof(uint16_t) * n);
    EmuDim3 grid = d1(pw_row_vec_blocks(N)), block = d1((unsigned)(pw_row_vec_warps(N) * 32));
    pw_rmsnorm_forward(y, rs, x, w, N, C, eps);
    RmsArgs a = {ey, ers, NULL, NULL, NULL, x, w, NULL, N, C, eps, NULL, NULL};
    emu_launch(grid, block, rms_fwd_vec, &a);
    emu_check("rmsnorm out (float4)", ey, y, n, TOL);
    emu_check("rmsnorm rstd (float4)", ers, rs, N, TOL);
    a.out = NULL, a.out16 = y16;
    emu_launch(grid, block, rms_fwd_vec, &a);
    emu_check_bf16("rmsnorm out (float4, bf16)", y16, ey, n);
    float *x2 = emu_randn(n, 1.0, rng), *x3 = emu_randn(n, 1.0, rng);
    float *r = malloc(sizeof(float) * n), *er2 = emu_copy(x2, n);
    pw_residual_forward(r, x2, x3, n);
    pw_rmsnorm_forward(y, rs, r, w, N, C, eps);
    a = (RmsArgs){ey, ers, NULL, NULL, y16, er2, w, NULL, N, C, eps, er2, x3};
    emu_launch(grid, block, rms_fwd_vec, &a);
    CHECK(!memcmp(er2, r, sizeof(float) * n), "residual + rmsnorm (float4): the sum differs");
    emu_check("residual + rmsnorm out (float4)", ey, y, n, TOL);
    emu_check_bf16("residual + rmsnorm (float4, bf16)", y16, ey, n);
    free(x), free(w), free(y), free(rs), free(y16), free(x2), free(x3), free(r), free(er2);
}

static void rms_dinp(void *p)
{
    RmsArgs *a = p;
    rmsnorm_dinp_kernel(a->dinp, a->out16, a->dout, a->inp, a->weight, a->rstd, a->N, a->C);
}

static void rms_terms(void *p)
{
    RmsArgs *a = p;
    rmsnorm_dw_terms_kernel(a->terms, a->dout, a->inp, a->rstd, a->C, (size_t)a->N * a->C);
}

static void run_rmsnorm(int N, int C, float eps, unsigned long long *rng)
{
    printf("rmsnorm N=%d C=%d eps=%g\n", N, C, (double)eps);
    size_t n = (size_t)N * C;
    float *x = emu_randn(n, 1.0, rng), *w = emu_randn(C, 1.0, rng), *dy = emu_randn(n, 1.0, rng);
    float *y = malloc(sizeof(float) * 2 * n), *ey = y + n;
    float *rs = malloc(sizeof(float) * 2 * N), *ers = rs + N;
    pw_rmsnorm_forward(y, rs, x, w, N, C, eps);
    RmsArgs a = {ey, ers, NULL, NULL, NULL, x, w, dy, N, C, eps, NULL, NULL};
    unsigned blocks = pw_row_blocks(N);
    emu_launch(d1(blocks), d1(PW_ROW_THREADS), rms_fwd, &a);
    emu_check("rmsnorm out", ey, y, n, TOL);
    emu_check("rmsnorm rstd", ers, rs, N, TOL);
    uint16_t *y16 = malloc(sizeof(uint16_t) * n); /* a bf16 model's form: only the rounded */
    a.out = NULL, a.out16 = y16;
    emu_launch(d1(blocks), d1(PW_ROW_THREADS), rms_fwd, &a);
    emu_check_bf16("rmsnorm out (bf16)", y16, ey, n);
    /* the residual fused in: x2 + x3 into x2 itself (in place), then the RMSNorm of the sum:
     * the sum bit for bit the CPU's residual, the rest as above */
    float *x2 = emu_randn(n, 1.0, rng), *x3 = emu_randn(n, 1.0, rng);
    float *r = malloc(sizeof(float) * n), *y2 = malloc(sizeof(float) * n);
    float *rs2 = malloc(sizeof(float) * N);
    pw_residual_forward(r, x2, x3, n);
    pw_rmsnorm_forward(y2, rs2, r, w, N, C, eps);
    for (int bf = 0; bf <= 1; bf++) {
        float *er2 = emu_copy(x2, n);
        a = (RmsArgs){bf ? NULL : ey, ers, NULL, NULL, bf ? y16 : NULL, er2, w, dy, N, C, eps,
                      er2, x3};
        emu_launch(d1(blocks), d1(PW_ROW_THREADS), rms_fwd, &a);
        CHECK(!memcmp(er2, r, sizeof(float) * n), "residual + rmsnorm: the sum differs");
        if (bf) {
            emu_check_bf16("residual + rmsnorm (bf16)", y16, ey, n); /* its own float32 */
        } else {
            emu_check("residual + rmsnorm out", ey, y2, n, TOL);
            emu_check("residual + rmsnorm rstd", ers, rs2, N, TOL);
        }
        free(er2);
    }
    free(y16), free(x2), free(x3), free(r), free(y2), free(rs2);
    float *dx0 = emu_randn(n, 1.0, rng), *dw0 = emu_randn(C, 1.0, rng);
    float *dx = emu_copy(dx0, n), *dw = emu_copy(dw0, C);
    float *edx = emu_copy(dx0, n), *edw = emu_copy(dw0, C);
    pw_rmsnorm_backward(dx, dw, dy, x, w, rs, N, C);
    float *terms = malloc(sizeof(float) * n);
    uint16_t *dx16 = malloc(sizeof(uint16_t) * n); /* the sum rounded too (the next dout) */
    a = (RmsArgs){NULL, rs, edx, terms, dx16, x, w, dy, N, C, eps, NULL, NULL};
    emu_launch(d1(blocks), d1(PW_ROW_THREADS), rms_dinp, &a);
    emu_check_bf16("rmsnorm dinp, rounded", dx16, edx, n);
    free(dx16);
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), rms_terms, &a);
    for (int i = 0; i < N; i++) /* the column sum of colsum.cu, by rows */
        for (int c = 0; c < C; c++) edw[c] += terms[(size_t)i * C + c];
    emu_check("rmsnorm dinp (+=)", edx, dx, n, TOL);
    emu_check("rmsnorm dweight (+=)", edw, dw, C, TOL);
    free(x), free(w), free(dy), free(y), free(rs), free(dx0), free(dw0), free(dx), free(dw);
    free(edx), free(edw), free(terms);
}

/* ---- RoPE and SwiGLU (elementwise) */
typedef struct EwArgs {
    float *x;
    uint16_t *x16;       /* a bfloat16 output, or NULL */
    const uint16_t *a16; /* a bfloat16 input instead of a, or NULL */
    const float *a, *b;
    const int *pos;
    int N, nheads, hs, stride, F;
    float sign;
    uint16_t *keep16; /* SwiGLU's bf16 form on a float32 input: its rounding kept, or NULL */
} EwArgs;

static void rope(void *p)
{
    EwArgs *a = p;
    rope_kernel(a->x, a->x16, a->pos, a->a, a->N, a->nheads, a->hs, a->stride, a->sign);
}

static void run_rope(int N, int nheads, int hs, int stride, unsigned long long *rng)
{
    printf("rope N=%d heads=%d hs=%d stride=%d\n", N, nheads, hs, stride);
    size_t n = (size_t)N * stride;
    float *x = emu_randn(n, 1.0, rng), *inv = malloc(sizeof(float) * hs / 2);
    PwRopeScaling none = {0};
    pw_rope_inv_freq(inv, hs, 500000.0, &none);
    int *pos = malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++) pos[i] = (int)(pw_test_rng_next(rng) % 131000);
    for (int dir = 0; dir < 2; dir++) {
        float *want = emu_copy(x, n), *got = emu_copy(x, n);
        if (dir)
            pw_rope_backward(want, pos, inv, N, nheads, hs, stride);
        else
            pw_rope_forward(want, pos, inv, N, nheads, hs, stride);
        EwArgs a = {got, NULL, NULL, inv, NULL, pos, N, nheads, hs, stride, 0,
                    dir ? -1.0f : 1.0f, NULL};
        emu_launch(ew_grid((size_t)N * nheads * (hs / 2)), d1(PW_EW_THREADS), rope, &a);
        emu_check(dir ? "rope backward" : "rope forward", got, want, n, TOL);
        { /* the bf16 form: x read only, every row (the tail too) rounded, bit for bit */
            uint16_t *g16 = malloc(sizeof(uint16_t) * n);
            float *src = emu_copy(x, n);
            a.x = src, a.x16 = g16;
            emu_launch(ew_grid((size_t)N * nheads * (hs / 2) + (size_t)N * (stride - nheads * hs)),
                       d1(PW_EW_THREADS), rope, &a);
            CHECK(!memcmp(src, x, sizeof(float) * n), "rope %s (bf16): its input was written",
                  dir ? "backward" : "forward");
            emu_check_bf16(dir ? "rope backward (bf16)" : "rope forward (bf16)", g16, got, n);
            free(g16), free(src);
        }
        free(want), free(got);
    }
    free(x), free(inv), free(pos);
}

static void swiglu_fwd(void *p)
{
    EwArgs *a = p;
    /* gu16 is read when the input is bfloat16, written (the rounding kept) when it is float32
     * and keep16 is given; rounded then */
    swiglu_forward_kernel(a->x, a->x16, a->a, a->a ? a->keep16 : (uint16_t *)a->a16,
                          a->a && a->keep16, a->F, (size_t)a->N * a->F);
}

static void swiglu_bwd(void *p)
{
    EwArgs *a = p;
    swiglu_backward_kernel(a->x, a->x16, a->a, a->a16, a->b, a->F, (size_t)a->N * a->F);
}

static void swiglu_fwd_vec(void *p)
{
    EwArgs *a = p;
    swiglu_forward_bf16_vec_kernel(a->x16, a->a16, a->F, (size_t)a->N * a->F);
}

static void swiglu_bwd_vec(void *p)
{
    EwArgs *a = p;
    swiglu_backward_bf16_vec_kernel(a->x16, a->a16, a->b, a->F, (size_t)a->N * a->F);
}

static void run_swiglu(int N, int F, unsigned long long *rng)
{
    printf("swiglu N=%d F=%d\n", N, F);
    size_t n = (size_t)N * F;
    float *gu = emu_randn(2 * n, 2.0, rng), *dy = emu_randn(n, 1.0, rng);
    gu[0] = -120.0f; /* e^-g overflows */
    float *y = malloc(sizeof(float) * 2 * n), *ey = y + n;
    pw_swiglu_forward(y, gu, N, F);
    EwArgs a = {ey, NULL, NULL, gu, NULL, NULL, N, 0, 0, 0, F, 0.0f, NULL};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), swiglu_fwd, &a);
    emu_check("swiglu forward", ey, y, n, TOL);
    uint16_t *y16 = malloc(sizeof(uint16_t) * n); /* a bf16 model's form: only the rounded */
    a.x = NULL, a.x16 = y16;
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), swiglu_fwd, &a);
    emu_check_bf16("swiglu forward (bf16)", y16, ey, n);
    free(y16);
    float *d0 = emu_randn(2 * n, 1.0, rng), *d = emu_copy(d0, 2 * n), *ed = emu_copy(d0, 2 * n);
    pw_swiglu_backward(d, gu, dy, N, F);
    a = (EwArgs){ed, NULL, NULL, gu, dy, NULL, N, 0, 0, 0, F, 0.0f, NULL};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), swiglu_bwd, &a);
    emu_check("swiglu backward (+=)", ed, d, 2 * n, TOL);
    /* a bf16 model's [gate | up]: the input in bfloat16, forward and backward, exactly the
     * float32 path on the widened values */
    float *guw = malloc(sizeof(float) * 2 * n), *ref = malloc(sizeof(float) * n);
    uint16_t *gu16 = emu_bf16_of(gu, 2 * n, guw), *r16 = malloc(sizeof(uint16_t) * n);
    a = (EwArgs){ref, NULL, NULL, guw, NULL, NULL, N, 0, 0, 0, F, 0.0f, NULL};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), swiglu_fwd, &a);
    a = (EwArgs){NULL, r16, gu16, NULL, NULL, NULL, N, 0, 0, 0, F, 0.0f, NULL};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), swiglu_fwd, &a);
    emu_check_bf16("swiglu forward (bf16 in and out)", r16, ref, n);
    /* on the float32 input rounded in the kernel: the same bits, the rounding kept */
    uint16_t *f16 = malloc(sizeof(uint16_t) * n), *keep = malloc(sizeof(uint16_t) * 2 * n);
    a = (EwArgs){NULL, f16, NULL, gu, NULL, NULL, N, 0, 0, 0, F, 0.0f, keep};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), swiglu_fwd, &a);
    CHECK(!memcmp(f16, r16, sizeof(uint16_t) * n) && !memcmp(keep, gu16, sizeof(uint16_t) * 2 * n),
          "swiglu forward on float32 rounded: not the bf16 input's bits, or the rounding not kept");
    printf("  %-30s same bits, rounding kept\n", "swiglu forward (f32 rounded)");
    free(f16), free(keep);
    /* the bf16 form sets its gradient rounded (NaN bits there never read): the float32 path's
     * added to zeros, rounded, bit for bit */
    float *dw = calloc(2 * n, sizeof(float));
    uint16_t *d16 = malloc(sizeof(uint16_t) * 2 * n);
    for (size_t i = 0; i < 2 * n; i++) d16[i] = 0x7fc1;
    a = (EwArgs){dw, NULL, NULL, guw, dy, NULL, N, 0, 0, 0, F, 0.0f, NULL};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), swiglu_bwd, &a);
    a = (EwArgs){NULL, d16, gu16, NULL, dy, NULL, N, 0, 0, 0, F, 0.0f, NULL};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), swiglu_bwd, &a);
    emu_check_bf16("swiglu backward (bf16 in, set)", d16, dw, 2 * n);
    if (F % PW_VEC == 0) { /* the 8-columns-a-thread forms swiglu.cu takes: the same bits */
        uint16_t *v16 = malloc(sizeof(uint16_t) * 2 * n);
        for (size_t i = 0; i < 2 * n; i++) v16[i] = 0x7fc1;
        a = (EwArgs){NULL, v16, gu16, NULL, NULL, NULL, N, 0, 0, 0, F, 0.0f, NULL};
        emu_launch(ew_grid(n / PW_VEC), d1(PW_EW_THREADS), swiglu_fwd_vec, &a);
        CHECK(!memcmp(v16, r16, sizeof(uint16_t) * n), "swiglu forward, 8 a thread: other bits");
        for (size_t i = 0; i < 2 * n; i++) v16[i] = 0x7fc1;
        a = (EwArgs){NULL, v16, gu16, NULL, dy, NULL, N, 0, 0, 0, F, 0.0f, NULL};
        emu_launch(ew_grid(n / PW_VEC), d1(PW_EW_THREADS), swiglu_bwd_vec, &a);
        CHECK(!memcmp(v16, d16, sizeof(uint16_t) * 2 * n),
              "swiglu backward, 8 a thread: other bits");
        printf("  %-30s the same bits\n", "swiglu, 8 columns a thread");
        free(v16);
    }
    free(guw), free(ref), free(gu16), free(r16), free(dw), free(d16);
    free(gu), free(dy), free(y), free(d0), free(d), free(ed);
}

/* ---- the GEMM path's softmax row kernels, over one sequence's NH heads of T x T scores */
typedef struct SmArgs {
    float *att, *lse;
    const float *cl, *p;
    const int *m;
    int NH, T;
    float scale;
} SmArgs;

static void sm_fwd(void *p)
{
    SmArgs *a = p;
    masked_softmax_kernel(a->att, a->lse, a->m, a->NH, a->T);
}
static void sm_recompute(void *p)
{
    SmArgs *a = p;
    softmax_recompute_kernel(a->att, a->cl, a->m, a->NH, a->T);
}
static void sm_bwd(void *p)
{
    SmArgs *a = p;
    softmax_backward_kernel(a->att, a->p, a->m, a->NH, a->T, a->scale);
}

/* Against a double reference: P over the real keys s <= t (0 elsewhere, a padding query's row
 * all 0, its lse 0), P again from lse, and dS = scale P (dP - sum P dP) */
static void run_softmax_rows(int NH, int T, int pad, unsigned long long *rng)
{
    printf("GEMM-path softmax rows NH=%d T=%d pad=%d\n", NH, T, pad);
    size_t n = (size_t)NH * T * T, rows = (size_t)NH * T;
    int *m = malloc(sizeof(int) * T);
    for (int t = 0; t < T; t++) m[t] = t >= pad && t != pad + 3; /* left padding and a hole */
    float *S = emu_randn(n, 2.0, rng), *P = emu_copy(S, n), *lse = malloc(sizeof(float) * rows);
    float *Pw = malloc(sizeof(float) * n), *lw = malloc(sizeof(float) * rows);
    for (size_t r = 0; r < rows; r++) {
        int t = (int)(r % T);
        const float *s = S + r * T;
        double mx = -INFINITY, z = 0.0;
        for (int k = 0; k <= t; k++)
            if (m[t] && m[k] && s[k] > mx) mx = s[k];
        for (int k = 0; k <= t; k++)
            if (m[t] && m[k]) z += exp(s[k] - mx);
        for (int k = 0; k < T; k++)
            Pw[r * T + k] = (m[t] && m[k] && k <= t) ? (float)(exp(s[k] - mx) / z) : 0.0f;
        lw[r] = m[t] ? (float)(mx + log(z)) : 0.0f;
    }
    unsigned blocks = pw_row_blocks(rows);
    SmArgs a = {P, lse, NULL, NULL, m, NH, T, 0.125f};
    emu_launch(d1(blocks), d1(PW_ROW_THREADS), sm_fwd, &a);
    emu_check("masked softmax", P, Pw, n, TOL);
    emu_check("its log-sum-exp", lse, lw, rows, TOL);
    float *R = emu_copy(S, n);
    a = (SmArgs){R, NULL, lw, NULL, m, NH, T, 0.125f};
    emu_launch(d1(blocks), d1(PW_ROW_THREADS), sm_recompute, &a);
    emu_check("recomputed from lse", R, Pw, n, TOL);
    float *dP = emu_randn(n, 1.0, rng), *dSw = malloc(sizeof(float) * n);
    for (size_t r = 0; r < rows; r++) {
        double dot = 0.0;
        for (int k = 0; k < T; k++) dot += (double)Pw[r * T + k] * dP[r * T + k];
        for (int k = 0; k < T; k++)
            dSw[r * T + k] = (float)(0.125 * Pw[r * T + k] * (dP[r * T + k] - dot));
    }
    a = (SmArgs){dP, NULL, NULL, Pw, m, NH, T, 0.125f};
    emu_launch(d1(blocks), d1(PW_ROW_THREADS), sm_bwd, &a);
    emu_check("softmax backward", dP, dSw, n, TOL);
    free(m), free(S), free(P), free(lse), free(Pw), free(lw), free(R), free(dP), free(dSw);
}

/* ---- the batched copy */
static void copy_launch(void *p) { copy_batch_kernel(*(const PwCopyLaunch *)p); }

static void run_copy(unsigned long long *rng)
{
    enum { NP = PW_COPY_SEGS + 9 }; /* 6 of them empty: 35 pieces, two launches */
    size_t bytes[NP], at = 0, offs[NP];
    for (int i = 0; i < NP; i++) {
        /* mostly 16-byte multiples at 16-byte offsets; some 4-byte, some odd, some empty,
         * one of two tiles and a part */
        size_t b = i == 3 ? (size_t)2 * PW_COPY_TILE * 16 + 48
                   : i % 7 == 1 ? 0
                   : i % 5 == 2 ? 4 * (1 + pw_test_rng_next(rng) % 300)
                   : i % 5 == 4 ? 1 + pw_test_rng_next(rng) % 999
                                : 16 * (1 + pw_test_rng_next(rng) % 200);
        offs[i] = at + (i % 5 == 4 ? 1 : 0); /* the odd ones at an odd offset too */
        bytes[i] = b;
        at = (offs[i] + b + 16) / 16 * 16;
    }
    unsigned char *src = malloc(at), *dst = malloc(at), *want = malloc(at);
    for (size_t k = 0; k < at; k++) src[k] = (unsigned char)pw_test_rng_next(rng);
    memset(dst, 0xa5, at);
    memcpy(want, dst, at);
    void *to[NP];
    const void *from[NP];
    for (int i = 0; i < NP; i++) {
        to[i] = dst + offs[i];
        from[i] = i % 6 == 5 ? NULL : src + offs[i]; /* every sixth a zero fill */
        if (from[i]) memcpy(want + offs[i], src + offs[i], bytes[i]);
        else memset(want + offs[i], 0, bytes[i]);
    }
    int next = 0, launches = 0, widths[3] = {0, 0, 0};
    PwCopyLaunch a;
    while (next < NP) {
        unsigned int blocks = pw_copy_plan(&a, to, from, bytes, NP, &next);
        if (!blocks) continue;
        for (int k = 0; k < a.n; k++) widths[a.shift[k] == 4 ? 0 : a.shift[k] == 2 ? 1 : 2]++;
        emu_launch(d1(blocks), d1(PW_COPY_THREADS), copy_launch, &a);
        launches++;
    }
    size_t bad = 0;
    for (size_t k = 0; k < at; k++) bad += dst[k] != want[k];
    printf("batched copy: %d pieces in %d launches (%d of 16-byte words, %d of 4, %d of 1): %zu "
           "bytes differ\n", NP, launches, widths[0], widths[1], widths[2], bad);
    CHECK(bad == 0, "batched copy: %zu bytes differ", bad);
    CHECK(launches == 2 && widths[0] > 0 && widths[1] > 0 && widths[2] > 0,
          "batched copy: %d launches, words %d / %d / %d", launches, widths[0], widths[1],
          widths[2]);
    free(src), free(dst), free(want);
}

int main(void)
{
    unsigned long long rng = 251125;
    run_copy(&rng);
    run_logprobs(6, 1000, 1024, &rng);
    run_logprobs(4, 61, 63, &rng); /* rows of an odd length: read one float at a time */
    run_logprobs(3, 7, 7, &rng); /* fewer logits than threads */
    run_logprobs(2, 50257, 50304, &rng);
    run_rmsnorm(21, 33, 1e-5f, &rng); /* a partial block of rows, C not a warp multiple */
    run_rmsnorm(9, 576, 1e-6f, &rng);
    run_rmsnorm(5, 1300, 1e-6f, &rng); /* over PW_ROW_KEEP * 32: the loops that read again */
    run_rmsnorm_vec(9, 896, 1e-6f, &rng);  /* Qwen2.5-0.5B's rows: 7 float4 a lane */
    run_rmsnorm_vec(21, 36, 1e-5f, &rng);  /* 9 float4 a row */
    run_rmsnorm_vec(4097, 8, 1e-5f, &rng); /* 8 rows a block */
    run_head_norm(13, 6, 2, 12, (6 + 2 * 2) * 12, &rng); /* the q, k heads of GQA rows */
    run_head_norm(1, 16, 8, 128, (16 + 2 * 8) * 128, &rng); /* Qwen3-0.6B's, one token */
    run_head_norm(29, 16, 8, 128, (16 + 2 * 8) * 128, &rng); /* and 29 tokens */
    run_head_norm(37, 4, 1, 64, (4 + 2) * 64 + 7, &rng);    /* a stride with a gap */
    run_rope(7, 6, 64, (6 + 2 * 2) * 64, &rng); /* the q and k heads of GQA rows, v untouched */
    run_rope(5, 3, 8, 3 * 8 + 5, &rng);         /* a stride with a gap */
    run_swiglu(5, 37, &rng);
    run_swiglu(3, 600, &rng);
    run_swiglu(70, 64, &rng); /* 8 columns a thread over 3 blocks: a unit's row from its index */
    run_softmax_rows(3, 70, 5, &rng);
    run_softmax_rows(2, 33, 0, &rng);
    return pw_test_done("kernels_emu");
}
