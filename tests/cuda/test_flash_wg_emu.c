/* test_flash_wg_emu.c: the attention on the warpgroup products, forward and backward
 * (src/kernels/cuda/flash_wg_kernels.cuh, the source nvcc compiles) under the host emulation
 * (emu.h, emu_wgmma.h), against the CPU's bfloat16 twin pw_attention_gqa_forward_bf16 (lse to
 * 1e-5, out to 2e-3 of its largest value: test_flash_tc_emu.c says why), its bfloat16 output
 * bit for bit its float32 one rounded, and against the mma.sync forward pw_flash_tc_fwd_64 run
 * under the same emulation bit for bit: both add each 16-deep slice of a product in the same
 * order here and round the same values, so any difference is a fragment, a descriptor, a
 * swizzle, a mask or a rescale of the new kernel's own. On the shapes of flash_case.h with
 * heads of 64 (padding with NaN in it, groups of 4 and 2, T past several blocks of 128 queries:
 * the first warpgroup's diagonal tile skipped) and a few of its own: a hole in the mask, a
 * block whose second warpgroup has one query, a padding-only sequence. The outputs start
 * poisoned (NaN), and the dynamic shared memory is poisoned at each block. The backward (dq's
 * kernel, then dk and dv's, after the mma.sync backward's prep kernel) likewise: dqkv against
 * the twin's backward within 2e-3 and against pw_flash_tc_dq_64 and _dkv_64 bit for bit, its
 * bfloat16 form bit for bit its float32 one rounded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_test.h"
#include "flash_case.h"
#include "lse_rows.h"

#include "flash_tc.cuh"
#include "flash_wg_kernels.cuh"

#include "pw_kernels.h"
#include "pw_test.h"

#define TOL_LSE 1e-5
#define TOL 2e-3

typedef struct Args {
    float *out, *lse;
    uint16_t *out16;
    const uint16_t *qkv;
    const int *mask;
    int T, NH, NKV, hs;
    float scale;
    int mode; /* flash_wg_kernels.cuh's FWG_* */
} Args;

/* the backward's: its prep's inputs and outputs, the gradients set (dqkv, or dqkv16 rounded) */
typedef struct Bwd {
    float *dqkv, *drow;
    uint16_t *dqkv16, *dout16;
    const float *dout, *lse;
    const uint16_t *qkv, *out16;
    const int *mask;
    int B, T, NH, NKV, hs;
    float scale;
    int mode;
} Bwd;

static void prep_k(void *p)
{
    Bwd *a = p;
    pw_flash_tc_prep(a->drow, a->dout16, a->dout, a->out16, a->mask, a->B, a->T, a->NH, a->hs);
}
#define BWD_K(name, fn)                                                                          \
    static void name(void *p)                                                                    \
    {                                                                                            \
        Bwd *a = p;                                                                              \
        fn(a->dqkv, a->dqkv16, a->drow, a->dout16, a->qkv, a->lse, a->mask, a->T, a->NH,        \
           a->NKV, a->hs, a->scale);                                                             \
    }
BWD_K(wg_dq, fwg_kernels(a->mode).dq)
BWD_K(wg_dkv, fwg_kernels(a->mode).dkv)
BWD_K(tc_dq, pw_flash_tc_dq_64)
BWD_K(tc_dkv, pw_flash_tc_dkv_64)

/* the warpgroup backward (dq's kernel, then dk and dv's) or the mma.sync one into a poisoned
 * dqkv (or dqkv16) */
static void backward(Bwd *a, int wg, size_t nqkv)
{
    if (a->dqkv)
        for (size_t i = 0; i < nqkv; i++) a->dqkv[i] = NAN;
    if (a->dqkv16)
        for (size_t i = 0; i < nqkv; i++) a->dqkv16[i] = 0x7fc1;
    unsigned rows = wg ? FWG_BLOCK_ROWS(a->mode) : TC_ROWS;
    unsigned bx = (unsigned)((a->T + rows - 1) / rows);
    EmuDim3 gq = {bx, (unsigned)a->NH, (unsigned)a->B}, gk = {bx, (unsigned)a->NKV, (unsigned)a->B};
    if (wg) {
        emu_launch_smem(gq, d1(PW_FWG_THREADS), PW_FWG_SMEM, wg_dq, a);
        emu_launch_smem(gk, d1(PW_FWG_THREADS), PW_FWG_DKV_SMEM, wg_dkv, a);
    } else {
        emu_launch(gq, d1(TC_THREADS), tc_dq, a);
        emu_launch(gk, d1(TC_THREADS), tc_dkv, a);
    }
}

static void wg_fwd(void *p)
{
    Args *a = p;
    /* the mode's kernel (flash_wg_kernels.cuh), as attention_bf16.cu finds it */
    fwg_kernels(a->mode).fwd(a->out, a->out16, a->lse, a->qkv, a->mask, a->T, a->NH, a->NKV,
                             a->hs, a->scale);
}

static void tc_fwd(void *p)
{
    Args *a = p;
    pw_flash_tc_fwd_64(a->out, a->out16, a->lse, a->qkv, a->mask, a->T, a->NH, a->NKV, a->hs,
                       a->scale);
}

static void poison(Args *a, size_t nout, size_t nlse)
{
    for (size_t i = 0; i < nout; i++) a->out[i] = NAN, a->out16[i] = 0x7fc1;
    for (size_t i = 0; i < nlse; i++) a->lse[i] = NAN;
}

/* the mma.sync kernels as the reference bit for bit: in the plain build; the race-checked one
 * leaves them to test_flash_tc_emu.c's (they would double its time and check nothing new) */
#ifdef EMU_RACE
#define WITH_TC 0
#else
#define WITH_TC 1
#endif

static void same_bits(const char *what, const void *got, const void *want, size_t bytes)
{
    if (!WITH_TC) return;
    int same = memcmp(got, want, bytes) == 0;
    printf("  %-30s %s\n", what, same ? "bit for bit" : "DIFFER");
    CHECK(same, "%s: not bit for bit the mma.sync forward's", what);
}

/* the warpgroup kernels' mode in run() (flash_wg_kernels.cuh's FWG_*) */
static int wg_mode;

static void run(int B, int T, int NH, int NKV, int hs, const int *pads, int npads, int hole,
                int use_mask, unsigned long long *rng)
{
    if (hs != 64) return; /* the kernel is for heads of 64 (the dispatch says so) */
    FlashCase fc = flash_case_make(B, T, NH, NKV, hs, pads, npads, hole, use_mask, rng);
    size_t nqkv = fc.nqkv, nout = fc.nout, nlse = fc.nlse;
    float *widened = malloc(sizeof(float) * nqkv);
    uint16_t *qkv = emu_bf16_of(fc.qkv, nqkv, widened);
    float *out = malloc(sizeof(float) * nout), *lse = malloc(sizeof(float) * nlse);
    pw_attention_gqa_forward_bf16(out, lse, qkv, fc.mask, B, T, NH, NKV, hs);

    float scale = 1.0f / sqrtf((float)hs);
    Args w = {malloc(sizeof(float) * nout), malloc(sizeof(float) * nlse),
              malloc(sizeof(uint16_t) * nout), qkv, fc.mask, T, NH, NKV, hs, scale, wg_mode};
    Args r = {malloc(sizeof(float) * nout), malloc(sizeof(float) * nlse),
              malloc(sizeof(uint16_t) * nout), qkv, fc.mask, T, NH, NKV, hs, scale, 0};
    poison(&w, nout, nlse);
    poison(&r, nout, nlse);
    const unsigned rows = FWG_BLOCK_ROWS(wg_mode);
    EmuDim3 gw = {(unsigned)((T + rows - 1) / rows), (unsigned)NH, (unsigned)B};
    EmuDim3 gt = {(unsigned)((T + TC_FWD_ROWS(64) - 1) / TC_FWD_ROWS(64)), (unsigned)NH,
                  (unsigned)B};
    emu_launch_smem(gw, d1(PW_FWG_THREADS), PW_FWG_SMEM, wg_fwd, &w);
    if (WITH_TC) emu_launch(gt, d1(TC_THREADS), tc_fwd, &r);
    emu_check("wgmma forward lse", w.lse, lse, nlse, TOL_LSE);
    LseRows lr = lse_rows(w.lse, lse, qkv, fc.mask, B, T, NH, NKV, hs, 1e-4);
    lse_rows_print(&lr);
    CHECK(lr.wrong == 0, "%zu lse rows wrong", lr.wrong);
    emu_check("wgmma forward out", w.out, out, nout, TOL);
    emu_check_bf16("wgmma forward out in bfloat16", w.out16, w.out, nout);
    /* FWG_ACC_FRESH adds each tile's sums to the carried ones otherwise than mma.sync: its out
     * and dqkv are held to the twin's bounds alone */
    const int exact = !(wg_mode & FWG_ACC_FRESH);
    if (exact) same_bits("out against mma.sync's", w.out, r.out, sizeof(float) * nout);
    same_bits("lse against mma.sync's", w.lse, r.lse, sizeof(float) * nlse);

    /* out16 alone (out NULL), as the model's bf16 forward asks */
    Args o = w;
    o.out = NULL;
    for (size_t i = 0; i < nout; i++) o.out16[i] = 0x7fc1;
    emu_launch_smem(gw, d1(PW_FWG_THREADS), PW_FWG_SMEM, wg_fwd, &o);
    emu_check_bf16("out16 alone", o.out16, w.out, nout);

    /* the backward, on the twin's lse and out (rounded), after the prep kernel (D, dout16) */
    uint16_t *tout16 = malloc(sizeof(uint16_t) * nout);
    for (size_t i = 0; i < nout; i++) tout16[i] = pw_bf16_from_f32(out[i]);
    float *dqkv = malloc(sizeof(float) * nqkv);
    pw_attention_gqa_backward_bf16(dqkv, fc.dout, qkv, tout16, lse, fc.mask, B, T, NH, NKV, hs);
    Bwd k = {malloc(sizeof(float) * nqkv), malloc(sizeof(float) * nlse), NULL,
             malloc(sizeof(uint16_t) * nout), fc.dout, lse, qkv, tout16, fc.mask, B, T, NH, NKV,
             hs, scale, wg_mode};
    emu_launch(d1(pw_row_blocks(nlse)), d1(PW_ROW_THREADS), prep_k, &k);
    Bwd tc = k;
    tc.dqkv = malloc(sizeof(float) * nqkv);
    backward(&k, 1, nqkv);
    if (WITH_TC) backward(&tc, 0, nqkv);
    emu_check("wgmma backward dqkv", k.dqkv, dqkv, nqkv, TOL);
    GradRows gr = grad_rows(k.dqkv, dqkv, B, T, NH, NKV, hs, TOL);
    grad_rows_print(&gr, B, T);
    CHECK(gr.wrong[0] + gr.wrong[1] + gr.wrong[2] == 0, "gradient rows wrong: %zu, %zu, %zu",
          gr.wrong[0], gr.wrong[1], gr.wrong[2]);
    if (exact) same_bits("dqkv against mma.sync's", k.dqkv, tc.dqkv, sizeof(float) * nqkv);
    Bwd k16 = k;
    k16.dqkv = NULL;
    k16.dqkv16 = malloc(sizeof(uint16_t) * nqkv);
    backward(&k16, 1, nqkv);
    emu_check_bf16("wgmma backward dqkv in bfloat16", k16.dqkv16, k.dqkv, nqkv);
    free(k16.dqkv16);
    free(tc.dqkv);
    free(k.dqkv), free(k.drow), free(k.dout16);
    free(dqkv);
    free(tout16);

    flash_case_free(&fc);
    free(widened);
    free(qkv);
    free(out);
    free(lse);
    free(w.out), free(w.lse), free(w.out16);
    free(r.out), free(r.lse), free(r.out16);
}

/* lse_rows.h's account of wrong rows, on lse values the CPU twin makes wrong on purpose (one
 * sequence of 200 queries, two heads on one key head, no mask): keys 64 to 127 masked out
 * (their queries become padding, lse 0, explained by nothing; the queries from 128 on lose an
 * earlier tile), then keys 128 to 191 replaced by keys 0 to 63 (the queries from 128 on see a
 * tile two before in its place) */
static void check_lse_rows(unsigned long long *rng)
{
    const int B = 1, T = 200, NH = 2, NKV = 1, hs = 64;
    printf("lse_rows.h on wrong values made on purpose\n");
    FlashCase fc = flash_case_make(B, T, NH, NKV, hs, NULL, 1, -1, 0, rng);
    const size_t W = (size_t)(NH + 2 * NKV) * hs;
    float *widened = malloc(sizeof(float) * fc.nqkv);
    uint16_t *qkv = emu_bf16_of(fc.qkv, fc.nqkv, widened);
    float *out = malloc(sizeof(float) * fc.nout), *want = malloc(sizeof(float) * fc.nlse);
    float *got = malloc(sizeof(float) * fc.nlse);
    int *cut = malloc(sizeof(int) * T);
    pw_attention_gqa_forward_bf16(out, want, qkv, NULL, B, T, NH, NKV, hs);

    LseRows r = lse_rows(want, want, qkv, NULL, B, T, NH, NKV, hs, 1e-4);
    CHECK(r.wrong == 0 && r.rows == (size_t)NH * T, "right values: %zu of %zu rows wrong",
          r.wrong, r.rows);

    for (int t = 0; t < T; t++) cut[t] = t < 64 || t >= 128;
    pw_attention_gqa_forward_bf16(out, got, qkv, cut, B, T, NH, NKV, hs);
    r = lse_rows(got, want, qkv, NULL, B, T, NH, NKV, hs, 1e-4);
    lse_rows_print(&r);
    CHECK(r.wrong == (size_t)NH * (64 + 72) && r.by_kind[LSE_NO_EARLY] == (size_t)NH * 72,
          "a tile left out: %zu wrong, %zu explained", r.wrong, r.by_kind[LSE_NO_EARLY]);
    CHECK(r.by_wg[0] == (size_t)NH * 64 && r.by_wg[1] == (size_t)NH * 72 &&
              r.by_tiles[1] == (size_t)NH * 64 && r.by_tiles[2] == (size_t)NH * 72,
          "a tile left out: rows by warpgroup %zu / %zu, by tiles %zu / %zu", r.by_wg[0],
          r.by_wg[1], r.by_tiles[1], r.by_tiles[2]);

    uint16_t *stale = malloc(sizeof(uint16_t) * fc.nqkv);
    memcpy(stale, qkv, sizeof(uint16_t) * fc.nqkv);
    for (int t = 128; t < 192; t++)
        memcpy(stale + t * W + NH * hs, qkv + (t - 128) * W + NH * hs, sizeof(uint16_t) * hs);
    pw_attention_gqa_forward_bf16(out, got, stale, NULL, B, T, NH, NKV, hs);
    r = lse_rows(got, want, qkv, NULL, B, T, NH, NKV, hs, 1e-4);
    lse_rows_print(&r);
    CHECK(r.wrong == (size_t)NH * 72 && r.by_kind[LSE_STALE] == r.wrong,
          "a stale tile: %zu wrong, %zu explained", r.wrong, r.by_kind[LSE_STALE]);

    /* grad_rows on the twin's backward with two rows made wrong: query 5's dq (head 1) and key
     * 130's dv; and a NaN in key 70's dk */
    float *dq = malloc(sizeof(float) * fc.nqkv), *dg = malloc(sizeof(float) * fc.nqkv);
    uint16_t *out16 = malloc(sizeof(uint16_t) * fc.nout);
    pw_attention_gqa_forward_bf16(out, got, qkv, NULL, B, T, NH, NKV, hs);
    for (size_t i = 0; i < fc.nout; i++) out16[i] = pw_bf16_from_f32(out[i]);
    pw_attention_gqa_backward_bf16(dq, fc.dout, qkv, out16, got, NULL, B, T, NH, NKV, hs);
    for (size_t i = 0; i < fc.nqkv; i++) dg[i] = dq[i];
    dg[5 * W + hs + 3] += 1.0f;
    dg[130 * W + (NH + NKV) * hs + 7] -= 1.0f;
    dg[70 * W + NH * hs] = NAN;
    GradRows g = grad_rows(dg, dq, B, T, NH, NKV, hs, 1e-3);
    grad_rows_print(&g, B, T);
    CHECK(g.wrong[0] == 1 && g.by_wg[0][0] == 1 && g.by_tile[0][0] == 1 && g.wrong[1] == 1 &&
              g.by_wg[1][1] == 1 && g.by_tile[1][1] == 1 && g.wrong[2] == 1 &&
              g.by_wg[2][0] == 1 && g.by_tile[2][2] == 1,
          "grad_rows: dq %zu, dk %zu, dv %zu wrong rows, or in the wrong buckets", g.wrong[0],
          g.wrong[1], g.wrong[2]);
    free(dq), free(dg), free(out16);

    free(stale), free(cut), free(got), free(want), free(out), free(qkv), free(widened);
    flash_case_free(&fc);
}

int main(void)
{
    flash_case_shapes(run);
    unsigned long long rng0 = 20261129;
    check_lse_rows(&rng0);
    unsigned long long rng = 20261128;
    int pads[] = {0, 3, 129, 200};
    /* a hole in row 1's mask (at 150 of 260), left padding of 3 in row 1; four blocks. The
     * race-checked build runs one head of three: a block's hazards do not depend on its head,
     * and the three took half of that build's time */
    run(2, 260, WITH_TC ? 3 : 1, WITH_TC ? 3 : 1, 64, pads, 2, 260 + 150, 1, &rng);
    /* a block whose second warpgroup has one query (T = 129), a padding-only sequence (T <= 129
     * of padding) beside a full one; groups of 2 */
    run(2, 129, 2, 1, 64, pads + 1, 2, -1, 1, &rng);
    /* a single block, no mask, one key tile and a part */
    run(1, 70, 1, 1, 64, pads, 1, -1, 0, &rng);
    /* the modes that go round a part of the schedule (flash_wg_kernels.cuh), each the same bits
     * as mma.sync's: on blocks with both warpgroups' rows, several key tiles and padding (the
     * shape an H200 got wrong), groups of 2. The race-checked build takes the two whose copies
     * and barriers differ (FWG_SERIAL, FWG_ONE_GROUP), on one sequence; the plain one every mode
     * built (FWG_ACC_FRESH's out and dqkv within the bounds, not bit for bit). */
    for (int i = 1; i < (WITH_TC ? FWG_MODES : 3); i++) {
        wg_mode = fwg_table[i].mode;
        printf("mode %d\n", wg_mode);
        run(WITH_TC ? 2 : 1, 150, 2, 1, 64, pads + 1, 2, -1, 1, &rng);
    }
    wg_mode = 0;
    return pw_test_done("flash_wg_emu");
}
