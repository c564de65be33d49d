/* test_gpt2_emu.c: the GPU's kernels of the GPT-2 family, the optimizer, the linear layer's
 * helpers and the generator's bookkeeping (the sources nvcc compiles: encoder, layernorm, gelu,
 * residual, adamw, norm, gather, record, matmul (bias seed, bf16 conversions) and colsum
 * _kernels.cuh) built here as C and run under the host emulation of emu.h, with the launch
 * geometry of their .cu files, against the CPU kernels on the same data: within 1e-5 (the sums
 * of squares 1e-12; positions, the embeddings' backward, gathers, the rows' bookkeeping and the
 * conversions exactly).
 * LayerNorm's backward both ways layernorm.cu takes it, the three kernels and the one pass (with
 * each gradient NULL in turn), the one pass's dinp and dinp16 bit for bit the three kernels'.
 * Needs no GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_test.h"

#include "adamw_kernels.cuh"
#include "colsum_kernels.cuh"
#include "encoder_kernels.cuh"
#include "gather_kernels.cuh"
#include "gelu_kernels.cuh"
#include "layernorm_kernels.cuh"
#include "matmul_kernels.cuh"
#include "norm_kernels.cuh"
#include "record_kernels.cuh"
#include "residual_kernels.cuh"

#include "pw_bf16.h"
#include "pw_kernels.h"
#include "pw_sample.h"
#include "pw_test.h"

#define TOL 1e-5


/* the two grids of a column sum over N rows of C (colsum.cu, layernorm.cu); the chunk count */
static int colsum_grids(int N, int C, EmuDim3 *partial, EmuDim3 *finish)
{
    int rows = pw_colsum_chunk_rows(N), nchunks = (N + rows - 1) / rows;
    unsigned cblocks = (unsigned)((C + PW_COLSUM_THREADS - 1) / PW_COLSUM_THREADS);
    *partial = (EmuDim3){cblocks, (unsigned)nchunks, 1};
    *finish = d1(cblocks);
    return nchunks;
}

/* every kernel's arguments, by name; each body below passes the ones its kernel takes */
typedef struct A {
    float *f0, *f1, *f2, *f3;
    uint16_t *h0;       /* a bfloat16 output, or NULL */
    const uint16_t *ch0; /* a bfloat16 input, or NULL */
    uint16_t *h1;       /* GELU's bf16 form on a float32 input: its rounding kept, or NULL */
    const float *c0, *c1, *c2, *c3, *c4;
    int *i0;
    const int *ci0, *ci1, *ci2;
    double *d0;
    int B, T, C, N, rows;
    size_t n;
} A;

static void k_positions(void *p)
{
    A *a = p;
    positions_kernel(a->i0, a->ci0, a->B, a->T);
}
static void k_enc_fwd(void *p)
{
    A *a = p;
    encoder_forward_kernel(a->f0, a->ci0, a->ci1, a->c0, a->c1, a->B, a->T, a->C);
}
static void k_enc_bwd(void *p)
{
    A *a = p;
    embed_rows_backward_kernel(a->f0, a->c0, a->ci0, a->ci1, a->ci2, a->C);
}

/* the embeddings' backward as encoder.cu launches it: a block a group of rows (by keys) and
 * 128 columns */
static void enc_bwd_groups(float *dw, const float *dy, const int *keys, int nkeys, int BT, int C)
{
    int *h = malloc(sizeof(int) * (3 * (size_t)BT + 1));
    int *scratch = malloc(sizeof(int) * ((size_t)nkeys + 1));
    int ng = pw_row_groups(keys, BT, nkeys, h, h + BT, h + 2 * BT + 1, scratch);
    A a = {.f0 = dw, .c0 = dy, .ci0 = h, .ci1 = h + BT, .ci2 = h + 2 * BT + 1, .C = C};
    emu_launch((EmuDim3){(unsigned)ng, (unsigned)((C + 127) / 128), 1}, d1(128), k_enc_bwd, &a);
    free(h);
    free(scratch);
}

static void run_encoder(int B, int T, int C, int V, unsigned long long *rng)
{
    printf("encoder B=%d T=%d C=%d V=%d\n", B, T, C, V);
    size_t BT = (size_t)B * T, n = BT * C;
    int *mask = malloc(sizeof(int) * BT), *tok = malloc(sizeof(int) * BT);
    for (size_t i = 0; i < BT; i++) {
        mask[i] = (int)(i % T) >= (int)(i / T) * 3; /* left padding of 0, 3, 6 ... */
        tok[i] = (int)(pw_test_rng_next(rng) % (unsigned)V);
    }
    int *pos = malloc(sizeof(int) * BT), *epos = malloc(sizeof(int) * BT);
    pw_positions_from_mask(pos, mask, B, T);
    A a = {.i0 = epos, .ci0 = mask, .B = B, .T = T};
    emu_launch(d1((unsigned)((B + POSITIONS_THREADS - 1) / POSITIONS_THREADS)),
               d1(POSITIONS_THREADS), k_positions, &a);
    CHECK(!memcmp(pos, epos, sizeof(int) * BT), "positions differ from the CPU's");
    float *wte = emu_randn((size_t)V * C, 1.0, rng), *wpe = emu_randn((size_t)T * C, 1.0, rng);
    float *out = malloc(sizeof(float) * 2 * n), *eout = out + n;
    pw_encoder_forward(out, tok, pos, wte, wpe, B, T, C);
    a = (A){.f0 = eout, .ci0 = tok, .ci1 = pos, .c0 = wte, .c1 = wpe, .B = B, .T = T, .C = C};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_enc_fwd, &a);
    emu_check("encoder forward", eout, out, n, TOL);
    float *dy = emu_randn(n, 1.0, rng), *g0 = emu_randn((size_t)V * C, 1.0, rng);
    float *p0 = emu_randn((size_t)T * C, 1.0, rng);
    float *dwte = emu_copy(g0, (size_t)V * C), *dwpe = emu_copy(p0, (size_t)T * C);
    float *edwte = emu_copy(g0, (size_t)V * C), *edwpe = emu_copy(p0, (size_t)T * C);
    pw_encoder_backward(dwte, dwpe, dy, tok, pos, B, T, C);
    enc_bwd_groups(edwte, dy, tok, V, (int)BT, C);
    enc_bwd_groups(edwpe, dy, pos, T, (int)BT, C);
    /* a group's rows in row order, as the CPU's loop: the same bits */
    CHECK(!memcmp(edwte, dwte, sizeof(float) * V * C), "encoder dwte (+=): not the CPU's bits");
    CHECK(!memcmp(edwpe, dwpe, sizeof(float) * T * C), "encoder dwpe (+=): not the CPU's bits");
    printf("  %-44s bit for bit the CPU's\n", "encoder dwte and dwpe (+=, rows by group)");
    free(mask), free(tok), free(pos), free(epos), free(wte), free(wpe), free(out), free(dy);
    free(g0), free(p0), free(dwte), free(dwpe), free(edwte), free(edwpe);
}

static void k_ln_fwd(void *p)
{
    A *a = p;
    /* f3, c3: the fused residual's sum and second input (NULL: the plain LayerNorm) */
    layernorm_forward_kernel(a->f0, a->h0, a->f1, a->f2, a->f3, a->c0, a->c3, a->c1, a->c2, a->N,
                             a->C);
}
static void k_ln_fwd_vec(void *p)
{
    A *a = p;
    layernorm_forward_vec_kernel(a->f0, a->h0, a->f1, a->f2, a->f3, a->c0, a->c3, a->c1, a->c2,
                                 a->N, a->C);
}
static void k_ln_dinp(void *p)
{
    A *a = p;
    layernorm_dinp_kernel(a->f0, a->h0, a->c0, a->c1, a->c2, a->c3, a->c4, a->N, a->C);
}
static void k_ln_partial(void *p)
{
    A *a = p;
    layernorm_dwdb_partial_kernel(a->f0, a->f1, a->c0, a->c1, a->c3, a->c4, a->N, a->C, a->rows);
}
static void k_ln_finish(void *p)
{
    A *a = p;
    layernorm_dwdb_finish_kernel(a->f2, a->f3, a->f0, a->f1, a->rows, a->C);
}
static void k_ln_rows(void *p)
{
    A *a = p;
    layernorm_backward_rows_kernel(a->f2, a->h0, a->f0, a->f1, a->c0, a->c1, a->c2, a->c3, a->c4,
                                   a->N, a->C, a->rows);
}

/* pw_layernorm_backward_cuda as layernorm.cu launches it: the same kernels, grids and
 * constants; with `three` the three kernels whatever the row (the one pass's reference), and
 * with rows > 0 the one pass with that many rows a warp (the shapes here are too few rows for
 * layernorm.cu to choose more than one) */
static void ln_backward(float *dinp, uint16_t *dinp16, float *dweight, float *dbias,
                        const float *dout, const float *inp, const float *w, const float *mean,
                        const float *rstd, int N, int C, int three, int rows)
{
    A a = {.f0 = dinp, .h0 = dinp16, .c0 = dout, .c1 = inp, .c2 = w, .c3 = mean, .c4 = rstd,
           .N = N, .C = C};
    if (!dweight && !dbias) {
        if (dinp) emu_launch(d1(pw_row_blocks(N)), d1(PW_ROW_THREADS), k_ln_dinp, &a);
        return;
    }
    if (pw_lnb_one_pass(C) && !three) {
        int r = rows > 0 ? rows : pw_lnb_rows((size_t)N);
        unsigned blocks = pw_lnb_blocks((size_t)N, r);
        float *part = malloc(sizeof(float) * 2 * (size_t)blocks * C);
        a = (A){.f0 = part, .f1 = part + (size_t)blocks * C, .f2 = dinp, .h0 = dinp16, .c0 = dout,
                .c1 = inp, .c2 = w, .c3 = mean, .c4 = rstd, .N = N, .C = C, .rows = r};
        emu_launch(d1(blocks), d1(PW_ROW_THREADS), k_ln_rows, &a);
        a.f2 = dweight, a.f3 = dbias, a.rows = (int)blocks;
        emu_launch(d1(pw_lnb_finish_blocks(C)), d1(PW_ROW_THREADS), k_ln_finish, &a);
        free(part);
        return;
    }
    if (dinp) emu_launch(d1(pw_row_blocks(N)), d1(PW_ROW_THREADS), k_ln_dinp, &a);
    EmuDim3 part_grid, fin_grid;
    int nchunks = colsum_grids(N, C, &part_grid, &fin_grid);
    float *part = malloc(sizeof(float) * 2 * (size_t)nchunks * C);
    a = (A){.f0 = part, .f1 = part + (size_t)nchunks * C, .f2 = dweight, .f3 = dbias, .c0 = dout,
            .c1 = inp, .c3 = mean, .c4 = rstd, .N = N, .C = C, .rows = pw_colsum_chunk_rows(N)};
    emu_launch(part_grid, d1(PW_COLSUM_THREADS), k_ln_partial, &a);
    a.rows = nchunks;
    emu_launch(d1(pw_lnb_finish_blocks(C)), d1(PW_ROW_THREADS), k_ln_finish, &a);
    free(part);
}

/* the same bytes, printed and checked */
static void check_same(const char *what, const void *got, const void *want, size_t bytes)
{
    int same = !memcmp(got, want, bytes);
    printf("  %-30s %s\n", what, same ? "the same bits" : "DIFFER");
    CHECK(same, "%s: the bits differ", what);
}

/* The float4 forward (pw_cuda_set_ln_vec) as layernorm.cu launches it (2 rows a block below
 * 4096 rows): plain, bf16 (bit for bit its own float32 rounded) and with the residual in place
 * (the sum bit for bit the CPU's), against the CPU within TOL */
static void run_layernorm_vec(int N, int C, unsigned long long *rng)
{
    printf("layernorm, float4 kernel, N=%d C=%d\n", N, C);
    size_t n = (size_t)N * C;
    float *x = emu_randn(n, 1.0, rng), *w = emu_randn(C, 1.0, rng), *bias = emu_randn(C, 1.0, rng);
    float *y = malloc(sizeof(float) * 2 * n), *ey = y + n, *st = malloc(sizeof(float) * 4 * N);
    float *mean = st, *rstd = st + N, *em = st + 2 * N, *er = st + 3 * N;
    uint16_t *y16 = malloc(sizeof(uint16_t) * n);
    EmuDim3 grid = d1(pw_row_vec_blocks(N)), block = d1((unsigned)(pw_row_vec_warps(N) * 32));
    pw_layernorm_forward(y, mean, rstd, x, w, bias, N, C);
    A a = {.f0 = ey, .f1 = em, .f2 = er, .c0 = x, .c1 = w, .c2 = bias, .N = N, .C = C};
    emu_launch(grid, block, k_ln_fwd_vec, &a);
    emu_check("layernorm out (float4)", ey, y, n, TOL);
    emu_check("layernorm mean (float4)", em, mean, N, TOL);
    emu_check("layernorm rstd (float4)", er, rstd, N, TOL);
    a.f0 = NULL, a.h0 = y16;
    emu_launch(grid, block, k_ln_fwd_vec, &a);
    emu_check_bf16("layernorm out (float4, bf16)", y16, ey, n);
    float *x2 = emu_randn(n, 1.0, rng), *x3 = emu_randn(n, 1.0, rng);
    float *r = malloc(sizeof(float) * n), *er2 = emu_copy(x2, n);
    pw_residual_forward(r, x2, x3, n);
    pw_layernorm_forward(y, mean, rstd, r, w, bias, N, C);
    a = (A){.f0 = ey, .h0 = y16, .f1 = em, .f2 = er, .f3 = er2, .c0 = er2, .c3 = x3, .c1 = w,
            .c2 = bias, .N = N, .C = C};
    emu_launch(grid, block, k_ln_fwd_vec, &a);
    CHECK(!memcmp(er2, r, sizeof(float) * n), "residual + layernorm (float4): the sum differs");
    emu_check("residual + layernorm out (float4)", ey, y, n, TOL);
    emu_check_bf16("residual + layernorm (float4, bf16)", y16, ey, n);
    emu_check("residual + layernorm rstd (float4)", er, rstd, N, TOL);
    free(x), free(w), free(bias), free(y), free(st), free(y16), free(x2), free(x3), free(r);
    free(er2);
}

static void run_layernorm(int N, int C, unsigned long long *rng)
{
    printf("layernorm N=%d C=%d\n", N, C);
    size_t n = (size_t)N * C;
    float *x = emu_randn(n, 1.0, rng), *w = emu_randn(C, 1.0, rng), *bias = emu_randn(C, 1.0, rng);
    float *y = malloc(sizeof(float) * 2 * n), *ey = y + n;
    float *st = malloc(sizeof(float) * 4 * N), *mean = st, *rstd = st + N, *em = st + 2 * N,
          *er = st + 3 * N;
    pw_layernorm_forward(y, mean, rstd, x, w, bias, N, C);
    A a = {.f0 = ey, .f1 = em, .f2 = er, .c0 = x, .c1 = w, .c2 = bias, .N = N, .C = C};
    unsigned blocks = pw_row_blocks(N);
    emu_launch(d1(blocks), d1(PW_ROW_THREADS), k_ln_fwd, &a);
    emu_check("layernorm out", ey, y, n, TOL);
    emu_check("layernorm mean", em, mean, N, TOL);
    emu_check("layernorm rstd", er, rstd, N, TOL);
    /* a bf16 model's form: the same kernel writing only the rounded result */
    uint16_t *y16 = malloc(sizeof(uint16_t) * n);
    a.f0 = NULL, a.h0 = y16;
    emu_launch(d1(blocks), d1(PW_ROW_THREADS), k_ln_fwd, &a);
    emu_check_bf16("layernorm out (bf16)", y16, ey, n);
    /* the residual fused in: x2 + x3 into x2 itself (in place, as a decode pass has it), then
     * the LayerNorm of that sum: the sum bit for bit the CPU's residual, the rest as above */
    float *x2 = emu_randn(n, 1.0, rng), *x3 = emu_randn(n, 1.0, rng);
    float *r = malloc(sizeof(float) * n), *y2 = malloc(sizeof(float) * n);
    pw_residual_forward(r, x2, x3, n);
    pw_layernorm_forward(y2, mean, rstd, r, w, bias, N, C);
    for (int bf = 0; bf <= 1; bf++) {
        float *er2 = emu_copy(x2, n);
        a = (A){.f0 = bf ? NULL : ey, .h0 = bf ? y16 : NULL, .f1 = em, .f2 = er, .f3 = er2,
                .c0 = er2, .c3 = x3, .c1 = w, .c2 = bias, .N = N, .C = C};
        emu_launch(d1(blocks), d1(PW_ROW_THREADS), k_ln_fwd, &a);
        CHECK(!memcmp(er2, r, sizeof(float) * n), "residual + layernorm: the sum differs");
        if (bf) {
            emu_check_bf16("residual + layernorm (bf16)", y16, ey, n); /* its own float32 */
        } else {
            emu_check("residual + layernorm out", ey, y2, n, TOL);
            emu_check("residual + layernorm mean", em, mean, N, TOL);
            emu_check("residual + layernorm rstd", er, rstd, N, TOL);
        }
        free(er2);
    }
    pw_layernorm_forward(y, mean, rstd, x, w, bias, N, C); /* the backward's statistics */
    free(y16), free(x2), free(x3), free(r), free(y2);
    /* the backward, the three kernels (rows over PW_ROW_KEEP * 32, and too few rows for the one
     * pass) and, where the row is kept, the one pass with each gradient NULL in turn: each
     * against the CPU, the one pass's dinp and its rounding bit for bit the three kernels' */
    float *dy = emu_randn(n, 1.0, rng), *dx0 = emu_randn(n, 1.0, rng);
    float *dw0 = emu_randn(2 * (size_t)C, 1.0, rng);
    float *dx = emu_copy(dx0, n), *edx = emu_copy(dx0, n);
    float *dwb = emu_copy(dw0, 2 * C), *edwb = emu_copy(dw0, 2 * C);
    pw_layernorm_backward(dx, dwb, dwb + C, dy, x, w, mean, rstd, N, C);
    uint16_t *dx16 = malloc(sizeof(uint16_t) * n); /* the sum rounded too (the next dout) */
    ln_backward(edx, dx16, edwb, edwb + C, dy, x, w, mean, rstd, N, C, 1, 0);
    emu_check_bf16("layernorm dinp, rounded", dx16, edx, n);
    emu_check("layernorm dinp (+=)", edx, dx, n, TOL);
    emu_check("layernorm dweight, dbias (+=)", edwb, dwb, 2 * (size_t)C, TOL);
    /* 0: all, dinp16 too; 1: all; 2: dinp NULL; 3: dweight NULL; 4: dbias NULL; 5: both;
     * 6 and 7: all, 2 and 8 rows a warp (0 to 5: as layernorm.cu chooses) */
    for (int sel = 0; C <= PW_ROW_KEEP * 32 && sel < 8; sel++) {
        printf("  one pass, case %d\n", sel);
        float *odx = emu_copy(dx0, n), *odwb = emu_copy(dw0, 2 * C);
        uint16_t *o16 = sel == 0 ? malloc(sizeof(uint16_t) * n) : NULL;
        float *gw = sel == 3 || sel == 5 ? NULL : odwb;
        float *gb = sel == 4 || sel == 5 ? NULL : odwb + C;
        ln_backward(sel == 2 ? NULL : odx, o16, gw, gb, dy, x, w, mean, rstd, N, C, 0,
                    sel == 6 ? 2 : sel == 7 ? 8 : 0);
        if (sel != 2) {
            emu_check("layernorm dinp (+=)", odx, dx, n, TOL);
            check_same("dinp as the three kernels'", odx, edx, sizeof(float) * n);
        } else {
            check_same("dinp untouched", odx, dx0, sizeof(float) * n);
        }
        if (o16) check_same("dinp16 as the three kernels'", o16, dx16, sizeof(uint16_t) * n);
        if (gw) emu_check("layernorm dweight (+=)", odwb, dwb, C, TOL);
        else check_same("dweight untouched", odwb, dw0, sizeof(float) * C);
        if (gb) emu_check("layernorm dbias (+=)", odwb + C, dwb + C, C, TOL);
        else check_same("dbias untouched", odwb + C, dw0 + C, sizeof(float) * C);
        free(odx), free(odwb), free(o16);
    }
    free(x), free(w), free(bias), free(y), free(st), free(dy), free(dx0), free(dw0), free(dx);
    free(edx), free(dwb), free(edwb), free(dx16);
}

static void k_gelu_fwd(void *p)
{
    A *a = p;
    /* the input's bf16 pointer is read when the input is bfloat16, written (the rounding kept)
     * when it is float32 and h1 is given; rounded then */
    gelu_forward_kernel(a->f0, a->h0, a->c0, a->c0 ? a->h1 : (uint16_t *)a->ch0,
                        a->c0 && a->h1, a->n);
}
static void k_gelu_bwd(void *p)
{
    A *a = p;
    gelu_backward_kernel(a->f0, a->h0, a->c0, a->ch0, a->c1, a->n);
}
static void k_gelu_fwd_vec(void *p)
{
    A *a = p;
    gelu_forward_bf16_vec_kernel(a->h0, a->ch0, a->n);
}
static void k_gelu_bwd_vec(void *p)
{
    A *a = p;
    gelu_backward_bf16_vec_kernel(a->h0, a->ch0, a->c1, a->n);
}
static void k_res_fwd(void *p)
{
    A *a = p;
    residual_forward_kernel(a->f0, a->c0, a->c1, a->n);
}
static void k_res_bwd(void *p)
{
    A *a = p;
    residual_backward_kernel(a->f0, a->f1, a->c0, a->n);
}
static void k_scale(void *p)
{
    A *a = p;
    scale_kernel(a->f0, 0.37f, a->n);
}

/* the elementwise kernels: GELU, the residual sum, the scale */
static void run_elementwise(size_t n, unsigned long long *rng)
{
    printf("elementwise n=%zu\n", n);
    float *x = emu_randn(n, 3.0, rng), *y = emu_randn(n, 1.0, rng), *d0 = emu_randn(n, 1.0, rng);
    x[0] = 20.0f, x[1 % n] = -20.0f;
    float *out = malloc(sizeof(float) * 2 * n), *eout = out + n;
    pw_gelu_forward(out, x, n);
    A a = {.f0 = eout, .c0 = x, .c1 = y, .n = n};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_gelu_fwd, &a);
    emu_check("gelu forward", eout, out, n, TOL);
    uint16_t *o16 = malloc(sizeof(uint16_t) * n);
    a.f0 = NULL, a.h0 = o16;
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_gelu_fwd, &a);
    emu_check_bf16("gelu forward (bf16)", o16, eout, n);
    a.h0 = NULL;
    free(o16);
    float *g = emu_copy(d0, n), *eg = emu_copy(d0, n);
    pw_gelu_backward(g, x, y, n);
    a.f0 = eg;
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_gelu_bwd, &a);
    emu_check("gelu backward (+=)", eg, g, n, TOL);
    /* a bf16 model's pre-activation: the input in bfloat16, forward and backward, exactly the
     * float32 path on the widened values */
    float *xw = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n);
    uint16_t *x16 = emu_bf16_of(x, n, xw), *r16 = malloc(sizeof(uint16_t) * n);
    a = (A){.f0 = ref, .c0 = xw, .n = n};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_gelu_fwd, &a);
    a = (A){.h0 = r16, .ch0 = x16, .n = n};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_gelu_fwd, &a);
    emu_check_bf16("gelu forward (bf16 in and out)", r16, ref, n);
    /* on the float32 input rounded in the kernel: the same bits, the rounding kept */
    uint16_t *f16 = malloc(sizeof(uint16_t) * n), *keep = malloc(sizeof(uint16_t) * n);
    a = (A){.h0 = f16, .c0 = x, .h1 = keep, .n = n};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_gelu_fwd, &a);
    CHECK(!memcmp(f16, r16, sizeof(uint16_t) * n) && !memcmp(keep, x16, sizeof(uint16_t) * n),
          "gelu forward on float32 rounded: not the bf16 input's bits, or the rounding not kept");
    printf("  %-30s same bits, rounding kept\n", "gelu forward (f32 rounded)");
    free(f16), free(keep);
    /* the bf16 form sets its gradient rounded to bfloat16 (NaN bits there are overwritten,
     * never read): the float32 path's added to zeros, rounded, bit for bit */
    float *gw = calloc(n, sizeof(float));
    uint16_t *g16 = malloc(sizeof(uint16_t) * n);
    for (size_t i = 0; i < n; i++) g16[i] = 0x7fc1;
    a = (A){.f0 = gw, .c0 = xw, .c1 = y, .n = n};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_gelu_bwd, &a);
    a = (A){.h0 = g16, .ch0 = x16, .c1 = y, .n = n};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_gelu_bwd, &a);
    emu_check_bf16("gelu backward (bf16 in, set)", g16, gw, n);
    /* the 8-at-a-time forms gelu.cu takes for aligned bf16 rows (the tail one at a time): the
     * bits of the kernels above */
    size_t units = pw_vec_units(n);
    uint16_t *v16 = malloc(sizeof(uint16_t) * n);
    for (size_t i = 0; i < n; i++) v16[i] = 0x7fc1;
    a = (A){.h0 = v16, .ch0 = x16, .n = n};
    emu_launch(ew_grid(units), d1(PW_EW_THREADS), k_gelu_fwd_vec, &a);
    check_same("gelu forward, 8 a thread", v16, r16, sizeof(uint16_t) * n);
    for (size_t i = 0; i < n; i++) v16[i] = 0x7fc1;
    a = (A){.h0 = v16, .ch0 = x16, .c1 = y, .n = n};
    emu_launch(ew_grid(units), d1(PW_EW_THREADS), k_gelu_bwd_vec, &a);
    check_same("gelu backward, 8 a thread", v16, g16, sizeof(uint16_t) * n);
    free(v16);
    free(xw), free(ref), free(x16), free(r16), free(gw), free(g16);
    a = (A){.c0 = x, .c1 = y, .n = n};
    pw_residual_forward(out, x, y, n);
    a.f0 = eout;
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_res_fwd, &a);
    emu_check("residual forward", eout, out, n, TOL);
    float *da = emu_copy(d0, n), *db = emu_copy(x, n);
    float *eda = emu_copy(d0, n), *edb = emu_copy(x, n);
    pw_residual_backward(da, db, y, n);
    a = (A){.f0 = eda, .f1 = edb, .c0 = y, .n = n};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_res_bwd, &a);
    emu_check("residual backward da (+=)", eda, da, n, TOL);
    emu_check("residual backward db (+=)", edb, db, n, TOL);
    float *s = emu_copy(x, n), *es = emu_copy(x, n);
    pw_scale(s, 0.37f, n);
    a = (A){.f0 = es, .n = n};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_scale, &a);
    emu_check("scale", es, s, n, 0.0);
    free(x), free(y), free(d0), free(out), free(g), free(eg), free(da), free(db), free(eda);
    free(edb), free(s), free(es);
}

typedef struct AdamArgs {
    float *p, *m, *v;
    uint16_t *p16;
    const float *g;
    float gs;
    size_t n;
    float lr, b1, b2, eps, wd, c1, c2;
} AdamArgs;

static void k_adamw(void *p)
{
    AdamArgs *a = p;
    adamw_kernel(a->p, a->p16, a->g, a->gs, a->m, a->v, a->n, a->lr, a->b1, a->b2, a->eps, a->wd,
                 a->c1, a->c2);
}

/* the update with the gradients times gs and the bfloat16 copy written: the new weights within
 * TOL of the CPU's, the copy bit for bit their rounding */
static void run_adamw(size_t n, int t, float wd, float gs, unsigned long long *rng)
{
    printf("adamw n=%zu t=%d wd=%g gscale=%g\n", n, t, (double)wd, (double)gs);
    float *p0 = emu_randn(n, 1.0, rng), *g = emu_randn(n, 1e-3, rng), *m0 = emu_randn(n, 1e-3, rng);
    float *v0 = malloc(sizeof(float) * n);
    uint16_t *p16 = malloc(sizeof(uint16_t) * n);
    for (size_t i = 0; i < n; i++) v0[i] = m0[i] * m0[i] * 2.0f;
    float *p = emu_copy(p0, n), *m = emu_copy(m0, n), *v = emu_copy(v0, n);
    float *ep = emu_copy(p0, n), *em = emu_copy(m0, n), *ev = emu_copy(v0, n);
    const float lr = 3e-4f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f;
    pw_adamw_update(p, NULL, g, gs, m, v, n, lr, b1, b2, eps, wd, t);
    /* the bias corrections as adamw.cu computes them on the host */
    AdamArgs a = {ep, em, ev, p16, g, gs, n, lr, b1, b2, eps, wd,
                  (float)(1.0 / (1.0 - pow(b1, t))), (float)(1.0 / (1.0 - pow(b2, t)))};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_adamw, &a);
    emu_check("adamw params", ep, p, n, TOL);
    emu_check("adamw m", em, m, n, TOL);
    emu_check("adamw v", ev, v, n, TOL);
    emu_check_bf16("adamw params, bfloat16 copy", p16, ep, n);
    free(p0), free(g), free(m0), free(v0), free(p), free(m), free(v), free(ep), free(em), free(ev);
    free(p16);
}

static void k_sumsq_partial(void *p)
{
    A *a = p;
    sumsq_partial_kernel(a->d0, a->c0, a->n);
}
static void k_sumsq_finish(void *p)
{
    A *a = p;
    sumsq_finish_kernel(a->d0 + SUMSQ_BLOCKS, a->d0);
}

static void run_sumsq(size_t n, unsigned long long *rng)
{
    float *x = emu_randn(n, 1.0, rng);
    double want = pw_sumsq(x, n), *d = calloc(SUMSQ_BLOCKS + 1, sizeof(double));
    d[SUMSQ_BLOCKS] = 1.5; /* pw_sumsq_add_cuda adds onto the total */
    A a = {.d0 = d, .c0 = x, .n = n};
    emu_launch(d1(SUMSQ_BLOCKS), d1(SUMSQ_THREADS), k_sumsq_partial, &a);
    emu_launch(d1(1), d1(SUMSQ_THREADS), k_sumsq_finish, &a);
    double e = fabs(d[SUMSQ_BLOCKS] - 1.5 - want) / want;
    printf("sumsq n=%zu: rel err %.2e\n", n, e);
    CHECK(e <= 1e-12, "sumsq n=%zu: rel err %.3g", n, e);
    free(x), free(d);
}

static void k_gather(void *p)
{
    A *a = p;
    gather_rows_kernel(a->f0, a->c0, a->ci0, a->N, a->C);
}

typedef struct RecArgs {
    PwGenRows g;
    int n, *ptok, *ppos, *pslot;
    const int *rows, *tok;
    const float *lp, *lpf;
} RecArgs;

static void k_record(void *p)
{
    RecArgs *a = p;
    record_kernel(a->g, a->n, a->rows, a->tok, a->lp, a->lpf, a->ptok, a->ppos, a->pslot);
}

/* a gather of rows, and the rows' bookkeeping after a draw (as cuda_sample's run_record: a
 * third of the rows stopped, a permuted pass, a stop token drawn by some, a pass advanced) */
static void run_gather_record(int n, int R, unsigned long long *rng)
{
    printf("gather and record n=%d R=%d\n", n, R);
    const int C = 37, stop = 3;
    float *src = emu_randn((size_t)n * C, 1.0, rng), *dst = malloc(sizeof(float) * 2 * n * C);
    int *rows = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) rows[i] = (i * 7 + 2) % n;
    pw_gather_rows(dst, src, rows, n, C);
    A a = {.f0 = dst + (size_t)n * C, .c0 = src, .ci0 = rows, .N = n, .C = C};
    emu_launch(ew_grid((size_t)n * C), d1(PW_EW_THREADS), k_gather, &a);
    CHECK(!memcmp(dst, dst + (size_t)n * C, sizeof(float) * n * C), "gather differs");

    int *st = malloc(sizeof(int) * 12 * n), *tok = malloc(sizeof(int) * n);
    int *tokens = malloc(sizeof(int) * 2 * n * R);
    float *lps = malloc(sizeof(float) * 4 * n * R), *lp = malloc(sizeof(float) * 2 * n);
    for (int i = 0; i < n; i++) {
        st[i] = pw_test_rng_next(rng) % 3 != 0;                 /* live */
        st[n + i] = (int)(pw_test_rng_next(rng) % 50);          /* next */
        st[2 * n + i] = R / 2;                                  /* length */
        for (int k = 0; k < 3; k++) st[3 * n + k * n + i] = (int)(pw_test_rng_next(rng) % 100);
        tok[i] = (int)(pw_test_rng_next(rng) % 8);
        lp[i] = -(float)i / 7.0f, lp[n + i] = -(float)i / 5.0f;
    }
    memcpy(st + 6 * n, st, sizeof(int) * 6 * n); /* the emulated copy of the state and pass */
    for (int i = 0; i < 2 * n * R; i++) tokens[i] = -1;
    for (int i = 0; i < 4 * n * R; i++) lps[i] = 0.5f;
    PwGenRows h = {st, st + n, st + 2 * n, tokens, lps, lps + (size_t)n * R, R, stop};
    PwGenRows e = {st + 6 * n, st + 7 * n, st + 8 * n, tokens + n * R, lps + 2 * (size_t)n * R,
                   lps + 3 * (size_t)n * R, R, stop};
    pw_sample_record(&h, n, rows, tok, lp, lp + n, st + 3 * n, st + 4 * n, st + 5 * n);
    RecArgs r = {e, n, st + 9 * n, st + 10 * n, st + 11 * n, rows, tok, lp, lp + n};
    emu_launch(d1((unsigned)((n + RECORD_THREADS - 1) / RECORD_THREADS)), d1(RECORD_THREADS),
               k_record, &r);
    int bad = memcmp(st, st + 6 * n, sizeof(int) * 6 * n) != 0;
    bad += memcmp(tokens, tokens + n * R, sizeof(int) * n * R) != 0;
    bad += memcmp(lps, lps + 2 * (size_t)n * R, sizeof(float) * 2 * n * R) != 0;
    int recorded = 0;
    for (int i = 0; i < n * R; i++) recorded += tokens[i] >= 0;
    printf("  record: %s, %d tokens recorded\n", bad ? "DIFFERS" : "equal", recorded);
    CHECK(!bad && recorded > 0, "record: the rows' state differs from the CPU's");
    free(src), free(dst), free(rows), free(st), free(tok), free(tokens), free(lps), free(lp);
}

typedef struct MmArgs {
    float *f;
    uint16_t *h;
    const float *cf;
    const uint16_t *ch;
    const void *src;
    int N, C, ld, rows, bf16;
    size_t n;
} MmArgs;

static void k_bias(void *p)
{
    MmArgs *a = p;
    bias_seed_kernel(a->f, a->cf, a->N, a->C);
}
static void k_to_bf16(void *p)
{
    MmArgs *a = p;
    f32_to_bf16_kernel(a->h, a->cf, a->n);
}
static void k_to_bf16_vec(void *p)
{
    MmArgs *a = p;
    f32_to_bf16_vec_kernel(a->h, a->cf, a->n);
}
static void k_to_f32(void *p)
{
    MmArgs *a = p;
    bf16_to_f32_kernel(a->f, a->ch, a->n);
}
static void k_colsum_partial(void *p)
{
    MmArgs *a = p;
    colsum_partial_kernel(a->f, a->src, a->bf16, a->N, a->C, a->ld, a->rows);
}
static void k_colsum_partial_vec(void *p)
{
    MmArgs *a = p;
    colsum_partial_bf16_vec_kernel(a->f, (const uint16_t *)a->src, a->N, a->C, a->ld, a->rows);
}
static void k_colsum_finish(void *p)
{
    MmArgs *a = p;
    colsum_finish_kernel((float *)a->cf, a->f, a->rows, a->C);
}

/* what matmul.cu computes besides the GEMMs: the bias seed, the bf16 conversions (bit for bit
 * pw_bf16.h's: ties, NaN, infinities, subnormals; to bfloat16 one and 8 a thread), and the
 * column sum of dbias over float and bfloat16 rows ld apart, against a double sum */
static void run_matmul_aux(int N, int C, int ld, unsigned long long *rng)
{
    printf("matmul aux N=%d C=%d ld=%d\n", N, C, ld);
    size_t n = (size_t)N * ld;
    float *bias = emu_randn(C, 1.0, rng), *out = malloc(sizeof(float) * (size_t)N * C);
    MmArgs a = {.f = out, .cf = bias, .N = N, .C = C};
    emu_launch(ew_grid((size_t)N * C), d1(PW_EW_THREADS), k_bias, &a);
    int bad = 0;
    for (size_t i = 0; i < (size_t)N * C; i++) bad += out[i] != bias[i % C];
    CHECK(bad == 0, "bias seed: %d values differ", bad);

    float *x = emu_randn(n, 1.0, rng);
    x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = 1e-40f; /* a subnormal */
    uint32_t tie = 0x3f808000u; /* exactly between two bfloat16 values: rounds to even */
    memcpy(&x[4], &tie, 4);
    uint16_t *h = malloc(sizeof(uint16_t) * n);
    a = (MmArgs){.h = h, .cf = x, .n = n};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_to_bf16, &a);
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += h[i] != pw_bf16_from_f32(x[i]);
    /* 8 a thread where aligned (matmul.cu), a tail of n % 8 one at a time: the same bits */
    uint16_t *hv = malloc(sizeof(uint16_t) * n);
    a = (MmArgs){.h = hv, .cf = x, .n = n};
    emu_launch(ew_grid(pw_vec_units(n)), d1(PW_EW_THREADS), k_to_bf16_vec, &a);
    for (size_t i = 0; i < n; i++) bad += hv[i] != h[i];
    free(hv);
    float *back = malloc(sizeof(float) * n);
    a = (MmArgs){.f = back, .ch = h, .n = n};
    emu_launch(ew_grid(n), d1(PW_EW_THREADS), k_to_f32, &a);
    for (size_t i = 0; i < n; i++) {
        float want = pw_bf16_to_f32(h[i]);
        bad += memcmp(&back[i], &want, 4) != 0;
    }
    printf("  bf16 conversions: %d values differ from pw_bf16.h's\n", bad);
    CHECK(bad == 0, "bf16 conversions: %d values differ", bad);

    for (int bf16 = 0; bf16 <= 1; bf16++) {
        float *y = emu_randn(n, 1.0, rng);
        uint16_t *yh = malloc(sizeof(uint16_t) * n);
        for (size_t i = 0; i < n; i++) yh[i] = pw_bf16_from_f32(y[i]);
        float *dst = emu_randn(C, 1.0, rng), *want = emu_copy(dst, C);
        for (int c = 0; c < C; c++) {
            double s = 0.0;
            for (int i = 0; i < N; i++)
                s += bf16 ? pw_bf16_to_f32(yh[(size_t)i * ld + c]) : y[(size_t)i * ld + c];
            want[c] = (float)(want[c] + s);
        }
        EmuDim3 part_grid, fin_grid;
        int nchunks = colsum_grids(N, C, &part_grid, &fin_grid);
        float *part = malloc(sizeof(float) * (size_t)nchunks * C), *dst0 = emu_copy(dst, C);
        a = (MmArgs){.f = part, .cf = dst, .src = bf16 ? (const void *)yh : (const void *)y,
                     .N = N, .C = C, .ld = ld, .rows = pw_colsum_chunk_rows(N), .bf16 = bf16};
        emu_launch(part_grid, d1(PW_COLSUM_THREADS), k_colsum_partial, &a);
        a.rows = nchunks;
        emu_launch(fin_grid, d1(PW_COLSUM_THREADS), k_colsum_finish, &a);
        emu_check(bf16 ? "column sum, bfloat16 rows (+=)" : "column sum, float rows (+=)", dst,
                  want, C, TOL);
        /* the finish adds the partials in chunk order, several loaded at a time: the bits of one
         * at a time */
        for (int c = 0; c < C; c++) {
            float t = 0.0f;
            for (int y = 0; y < nchunks; y++) t += part[(size_t)y * C + c];
            dst0[c] += t;
        }
        check_same("column sum finish, in chunk order", dst, dst0, sizeof(float) * C);
        free(dst0);
        if (bf16 && C % 8 == 0 && ld % 8 == 0) {
            /* 8 columns a thread (pw_cuda_set_colsum_vec), as colsum.cu launches it: the partials
             * and the sum bit for bit the scalar kernel's */
            float *part2 = malloc(sizeof(float) * (size_t)nchunks * C);
            MmArgs v = {.f = part2, .src = yh, .N = N, .C = C, .ld = ld,
                        .rows = pw_colsum_chunk_rows(N)};
            EmuDim3 vgrid = {pw_colsum_vec_grid_x(C), (unsigned)nchunks, 1};
            emu_launch(vgrid, d1(pw_colsum_vec_threads(C)), k_colsum_partial_vec, &v);
            check_same("column sum partials, 8 a thread", part2, part,
                       sizeof(float) * (size_t)nchunks * C);
            free(part2);
        }
        free(y), free(yh), free(dst), free(want), free(part);
    }
    free(bias), free(out), free(x), free(h), free(back);
}

int main(void)
{
    unsigned long long rng = 1124;
    run_encoder(3, 40, 24, 11, &rng); /* a small vocabulary: many rows a group */
    run_encoder(2, 30, 300, 7, &rng); /* columns in three blocks */
    /* two column-sum chunks, C not a warp multiple; the one pass's second block has 6 rows */
    run_layernorm(70, 33, &rng);
    run_layernorm(9, 768, &rng);  /* at 8 rows a warp one block: warp 0 takes two rows */
    run_layernorm(77, 40, &rng);  /* 8 rows a warp: two blocks, the second part full */
    run_layernorm(3, 1000, &rng); /* warps with no rows; the kept row's last lanes partly idle */
    run_layernorm_vec(9, 768, &rng);  /* GPT-2's rows; the last block's second warp idle */
    run_layernorm_vec(70, 40, &rng);  /* 10 float4 a row: 22 lanes idle */
    run_layernorm_vec(3, 1024, &rng); /* every lane's 8 float4 */
    run_layernorm_vec(4100, 8, &rng); /* 8 rows a block from 4096 rows on */
    run_layernorm(150, 5, &rng);  /* three blocks, the lanes past C idle */
    run_layernorm(5, 1100, &rng); /* over PW_ROW_KEEP * 32: the loops that read the row again */
    run_elementwise(1000, &rng);
    run_elementwise(1005, &rng); /* the 8-at-a-time forms' tail */
    run_elementwise(70001, &rng);     /* more than one grid-stride block row */
    run_adamw(5000, 1, 0.1f, 1.0f, &rng);
    run_adamw(777, 5000, 0.0f, 0.37f, &rng);
    run_sumsq(1, &rng);
    run_sumsq(300007, &rng);          /* more elements than the fixed grid's threads */
    run_gather_record(300, 16, &rng); /* more rows than a block's threads */
    run_matmul_aux(150, 300, 307, &rng); /* three column-sum chunks, two column blocks */
    /* 8 columns a thread: a chunk of 64 rows and a tail of 11 (the unrolled loads' ends), GPT-2's
     * 2304 columns in two blocks of 160 threads (the second's last 32 idle), rows further apart */
    run_matmul_aux(75, 2304, 2304, &rng);
    run_matmul_aux(9, 8, 24, &rng);
    return pw_test_done("gpt2_emu");
}
