/* test_skinny_emu.c: the GPU's few-row product (src/kernels/cuda/skinny_kernels.cuh), the very
 * source nvcc compiles, built here as C and run under the host emulation of emu.h (whose
 * pw_mma_bf16 and pw_ldsm_x4 follow the PTX fragment tables, so a fragment in the wrong lane or
 * register errs by the size of the values), against the CPU's bfloat16 twin
 * pw_matmul_forward_bf16 on the same random data, within float32's rounding (1e-5 of the
 * largest output; both take the same rounded operands and accumulate in float32, in different
 * orders). Shapes: rows and outputs that are not a multiple of the tile (rows past N and
 * outputs past OC zero-filled by the copies, never stored), K in 1 to 8 parts (the grid's z, as
 * skinny.cu launches pw_sk_parts of them), uneven parts (K's steps not a multiple of the
 * parts), a bias and none, and GPT-2's attention projection at 256 rows in 6 parts (full
 * tiles, four of rows). After each launch every tile's counter is back at zero (the next
 * launch needs no memset) and the output's neighbours are untouched; two launches give the
 * same bits. The GELU and SwiGLU epilogues (bfloat16 out) bit for bit the separate kernels on
 * the float32 output. pw_sk_parts (launch.cuh) is checked on the decode shapes by hand-worked
 * numbers. Needs no GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_test.h"

#include "skinny_kernels.cuh" /* emu.h stands in for mma.cuh and cp_async.cuh */

#include "pw_bf16.h"
#include "pw_kernels.h"
#include "pw_test.h"

#define GUARD 64 /* floats each side of the output that must stay as they were */

typedef struct Args {
    float *out;
    uint16_t *act16;
    float *ws;
    int *counters;
    const uint16_t *inp, *w;
    const float *bias;
    int N, C, OC, act;
} Args;

static void body(void *p)
{
    Args *a = p;
    pw_skinny_kernel(a->out, a->act16, a->ws, a->counters, a->inp, a->w, a->bias, a->N, a->C,
                     a->OC, a->act);
}

/* What separate kernels make of the float32 output f (N x OC) at output i of an epilogue: GELU
 * (gelu_kernels.cuh's gelu_forward_kernel with `round`: the sum rounded, its GELU rounded) of
 * f[i], or SwiGLU (swiglu_kernels.cuh's swiglu_forward_kernel with `round`) of the gate and up
 * sums of output i of N x OC / 2 (w's first OC / 2 rows the gates, the last the ups) */
static uint16_t act_want(int act, const float *f, int OC, size_t i)
{
    if (act == PW_SK_GELU)
        return pw_bf16_from_f32(gelu_of(pw_bf16_to_f32(pw_bf16_from_f32(f[i]))));
    size_t F = (size_t)OC / 2, r = i / F, j = i % F;
    float g = pw_bf16_to_f32(pw_bf16_from_f32(f[r * OC + j]));
    float u = pw_bf16_to_f32(pw_bf16_from_f32(f[r * OC + F + j]));
    return pw_bf16_from_f32(swiglu_of(g, u));
}

/* An epilogue (act: PW_SK_GELU, or PW_SK_SWIGLU with no bias): another launch of the same
 * product, whose bfloat16 output must be bit for bit act_want of the float32 output `f`, with
 * nothing written beside it and the counters back at zero */
static void run_act(const char *what, Args a, EmuDim3 grid, const float *f, int tiles, int act)
{
    const char *name = act == PW_SK_GELU ? "GELU" : "SwiGLU";
    size_t n = (size_t)a.N * (act == PW_SK_GELU ? a.OC : a.OC / 2);
    uint16_t *guarded = malloc(sizeof(uint16_t) * (n + 2 * GUARD)), *out = guarded + GUARD;
    for (size_t i = 0; i < n + 2 * GUARD; i++) guarded[i] = 0xffff;
    a.out = NULL;
    a.act16 = out;
    a.act = act;
    emu_launch(grid, d1(PW_SK_THREADS), body, &a);
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; i++)
        if (out[i] != act_want(act, f, a.OC, i) && bad++ == 0) first = i;
    int touched = 0, left = 0;
    for (int i = 0; i < GUARD; i++) touched += (guarded[i] != 0xffff) + (out[n + i] != 0xffff);
    for (int t = 0; t <= tiles; t++) left += a.counters[t] != 0;
    printf("  %-30s %s epilogue: %zu of %zu differ from %s of the float32 output\n", what, name,
           bad, n, name);
    CHECK(bad == 0, "%s: %s epilogue differs at %zu values, first at %zu", what, name, bad,
          first);
    CHECK(touched == 0 && left == 0, "%s: %s epilogue wrote %d beside, left %d counters up",
          what, name, touched, left);
    free(guarded);
}

enum { GELU = 1, SWIGLU = 2 }; /* run's epilogues besides the float32 output */

static void run(int N, int C, int OC, int parts, int with_bias, int epi, unsigned long long *rng)
{
    char what[96];
    snprintf(what, sizeof what, "N=%d C=%d OC=%d, %d part%s, %s", N, C, OC, parts,
             parts > 1 ? "s" : "", with_bias ? "bias" : "no bias");
    size_t NC = (size_t)N * C, OCC = (size_t)OC * C, NO = (size_t)N * OC;
    float *x = emu_randn(NC, 1.0, rng), *w = emu_randn(OCC, 0.1, rng);
    float *bias = with_bias ? emu_randn((size_t)OC, 0.5, rng) : NULL;
    float *xr = malloc(sizeof(float) * NC), *wr = malloc(sizeof(float) * OCC);
    uint16_t *x16 = emu_bf16_of(x, NC, xr), *w16 = emu_bf16_of(w, OCC, wr);
    float *ref = malloc(sizeof(float) * NO);
    pw_matmul_forward_bf16(ref, x, w, bias, N, C, OC);

    int tiles = pw_sk_tiles(N, OC);
    float *guarded = malloc(sizeof(float) * (NO + 2 * GUARD)), *out = guarded + GUARD;
    float *ws = malloc(sizeof(float) * (size_t)tiles * parts * SK_TILE);
    int *counters = calloc((size_t)tiles + 1, sizeof(int));
    float *first = malloc(sizeof(float) * NO);
    Args a = {out, NULL, ws, counters, x16, w16, bias, N, C, OC, PW_SK_PLAIN};
    EmuDim3 grid = {(unsigned)((N + PW_SK_BM - 1) / PW_SK_BM),
                    (unsigned)((OC + PW_SK_BN - 1) / PW_SK_BN), (unsigned)parts};
    for (int r = 0; r < 2; r++) {
        for (size_t i = 0; i < NO + 2 * GUARD; i++) guarded[i] = NAN;
        for (size_t i = 0; i < (size_t)tiles * parts * SK_TILE; i++) ws[i] = NAN;
        emu_launch(grid, d1(PW_SK_THREADS), body, &a);
        int left = 0;
        for (int t = 0; t <= tiles; t++) left += counters[t] != 0;
        CHECK(left == 0, "%s: %d tile counters not back at zero", what, left);
        int touched = 0;
        for (int i = 0; i < GUARD; i++) touched += !isnan(guarded[i]) + !isnan(out[NO + i]);
        CHECK(touched == 0, "%s: %d floats written beside the output", what, touched);
        if (r == 0) {
            emu_check(what, out, ref, NO, 1e-5);
            memcpy(first, out, sizeof(float) * NO);
        } else {
            CHECK(!memcmp(first, out, sizeof(float) * NO), "%s: a second launch gave other bits",
                  what);
        }
    }
    if (epi & GELU) run_act(what, a, grid, first, tiles, PW_SK_GELU);
    if (epi & SWIGLU) run_act(what, a, grid, first, tiles, PW_SK_SWIGLU);
    free(x), free(w), free(bias), free(xr), free(wr), free(x16), free(w16), free(ref);
    free(guarded), free(ws), free(counters), free(first);
}

/* pw_sk_parts on an H100's 132 SMs (2 blocks an SM wanted: 264), worked by hand from
 * launch.cuh's rules */
static void parts_rule(void)
{
    static const struct {
        int N, C, OC, parts;
        const char *what;
    } cases[] = {
        {256, 768, 768, 6, "GPT-2 attention projection: 24 tiles, 11 wanted, 24 steps / 4"},
        {256, 3072, 768, 8, "GPT-2 MLP down-projection: 24 tiles, 11 wanted, at most 8"},
        {256, 768, 2304, 4, "GPT-2 qkv: 72 tiles, 264 / 72 rounded up"},
        {256, 768, 3072, 3, "GPT-2 MLP up-projection: 96 tiles"},
        {256, 768, 50304, 0, "GPT-2 LM head: 1572 tiles, more than 4 an SM"},
        {256, 896, 4864, 2, "Qwen2.5-0.5B gate or up: 152 tiles"},
        {64, 4864, 896, 8, "Qwen2.5-0.5B down-projection at 64 rows: 7 tiles"},
        {64, 896, 1152, 7, "Qwen2.5-0.5B qkv at 64 rows: 9 tiles, 28 steps / 4"},
        {257, 768, 768, 0, "257 rows: past PW_SK_MAX_ROWS"},
        {8, 70, 128, 0, "C = 70: not a multiple of 32"},
        {8, 32, 128, 1, "one step of K: one part"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = pw_sk_parts(cases[i].N, cases[i].C, cases[i].OC, 132, PW_SK_PER_SM);
        printf("  parts %d (want %d): %s\n", got, cases[i].parts, cases[i].what);
        CHECK(got == cases[i].parts, "pw_sk_parts(%d, %d, %d, 132) = %d, want %d", cases[i].N,
              cases[i].C, cases[i].OC, got, cases[i].parts);
    }
    /* the benchmark's other aims: GPT-2's qkv and MLP up-projection at 1 and 4 blocks an SM
     * (132 / 72 and 132 / 96 rounded up; 528 / 72 and 528 / 96, bound at 6 by the steps, the
     * up-projection's then at 5 by the workspace: 6 x 96 tiles is more than 512) */
    CHECK(pw_sk_parts(256, 768, 2304, 132, 1) == 2 && pw_sk_parts(256, 768, 3072, 132, 1) == 2,
          "one block an SM: qkv %d, up %d parts, 2 and 2 wanted",
          pw_sk_parts(256, 768, 2304, 132, 1), pw_sk_parts(256, 768, 3072, 132, 1));
    CHECK(pw_sk_parts(256, 768, 2304, 132, 4) == 6 && pw_sk_parts(256, 768, 3072, 132, 4) == 5,
          "four blocks an SM: qkv %d, up %d parts, 6 and 5 wanted",
          pw_sk_parts(256, 768, 2304, 132, 4), pw_sk_parts(256, 768, 3072, 132, 4));
}

int main(void)
{
    unsigned long long rng = 29;
    parts_rule();
    /* two row tiles (70 rows: the second 6 of 64), two output tiles (200: the second 72 of
     * 128), 8 steps of K in 1, 2, 3 (uneven: 2, 3, 3) and 8 parts */
    const int parts[4] = {1, 2, 3, 8};
    for (int i = 0; i < 4; i++)
        run(70, 256, 200, parts[i], 1, parts[i] == 1 || parts[i] == 8 ? GELU : 0, &rng);
    /* no bias: SwiGLU of 100 outputs (the second tile's 36 of 64), in 1, 3 and 8 parts */
    run(70, 256, 200, 3, 0, SWIGLU, &rng);
    run(70, 256, 200, 1, 0, SWIGLU, &rng);
    run(70, 256, 200, 8, 0, SWIGLU, &rng);
    /* a few rows and outputs, one step a part; one whole tile of each (SwiGLU: 64 outputs) */
    run(5, 96, 8, 3, 1, GELU, &rng);
    run(5, 96, 8, 3, 0, SWIGLU, &rng);
    run(64, 64, 128, 2, 0, SWIGLU, &rng);
    /* GPT-2's attention projection at a decode step of 256 rows, as an H100 splits it */
    run(256, 768, 768, 6, 1, 0, &rng);
    return pw_test_done("test_skinny_emu");
}
