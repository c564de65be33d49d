/* test_flash_tc_emu.c: the tensor-core attention kernels of the GPU
 * (src/kernels/cuda/flash_tc.cuh), the very source nvcc compiles, built here as C and run under
 * the host emulation of emu.h (whose pw_mma_bf16 computes each lane's results from the PTX
 * fragment table, so a fragment put in the wrong lane or register gives a wrong product here as
 * on the GPU), against the CPU's bfloat16 twin pw_attention_gqa_forward_bf16 / _backward_bf16
 * (cpu/attention.c) on the same random data. Both round the same operands to bfloat16 and
 * accumulate in float32, in different orders: lse agrees to float32 rounding (1e-5); out and
 * dqkv to 2e-3 of their largest value, the room for a probability (or dS) that lands on the
 * other side of a bfloat16 rounding boundary in one and not the other (the GPU rounds
 * exp(s - running max), the twin exp(s - row max)); a misplaced fragment errs by the size of the
 * values. The backward's first kernel is checked on its own: dout in bfloat16 bit for bit (zeros
 * at padding queries) and D = rowsum(dout * out) against a float64 sum (1e-5). Each of the three
 * head-size buckets runs (the backward's gradients set into a dqkv filled with NaN, as both set
 * it), with groups of 1 to 4 query heads, left padding with a padding-only row, a hole in the
 * mask, T not a multiple of any tile, NaN in the left padding (never read: zeroed in shared
 * memory), heads that are a multiple of 8 (16-byte asynchronous copies) and one that is not (5:
 * copies a half at a time), and the launch geometry of attention_bf16.cu
 * (tests/cuda/flash_case.h). The fused backward (dkvq and the store of its dq) against the same
 * twin, with its dynamic shared memory poisoned at each block. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_test.h"
#include "flash_case.h"

#include "flash_tc.cuh"

#include "pw_kernels.h"
#include "pw_test.h"

#define TOL_LSE 1e-5
#define TOL 2e-3

typedef struct Args {
    float *out, *lse, *dqkv, *drow;
    float *dq32; /* the fused backward's dq sums (B,T,NH,hs), zeroed before it */
    uint16_t *dout16, *dqkv16; /* dqkv16: the backward's rounded output instead, or NULL */
    uint16_t *out16;           /* the forward's output rounded as well, or NULL */
    const uint16_t *qkv;
    const float *dout;
    const uint16_t *fout16; /* the forward's output the backward reads: rounded */
    const int *mask;
    int B, T, NH, NKV, hs;
    float scale;
} Args;

#define TC_WRAPPERS(HS)                                                                          \
    static void fwd_##HS(void *p)                                                                \
    {                                                                                            \
        Args *a = p;                                                                             \
        pw_flash_tc_fwd_##HS(a->out, a->out16, a->lse, a->qkv, a->mask, a->T, a->NH, a->NKV,     \
                             a->hs, a->scale);                                                   \
    }                                                                                            \
    static void dq_##HS(void *p)                                                                 \
    {                                                                                            \
        Args *a = p;                                                                             \
        pw_flash_tc_dq_##HS(a->dqkv, a->dqkv16, a->drow, a->dout16, a->qkv, a->lse, a->mask,    \
                            a->T, a->NH, a->NKV, a->hs, a->scale);                               \
    }                                                                                            \
    static void dkv_##HS(void *p)                                                                \
    {                                                                                            \
        Args *a = p;                                                                             \
        pw_flash_tc_dkv_##HS(a->dqkv, a->dqkv16, a->drow, a->dout16, a->qkv, a->lse, a->mask,   \
                             a->T, a->NH, a->NKV, a->hs, a->scale);                              \
    }
#define TC_FUSED(TAG)                                                                            \
    static void dkvq_##TAG(void *p)                                                              \
    {                                                                                            \
        Args *a = p;                                                                             \
        pw_flash_tc_dkvq_##TAG(a->dqkv, a->dqkv16, a->dq32, a->drow, a->dout16, a->qkv, a->lse, \
                               a->mask, a->T, a->NH, a->NKV, a->hs, a->scale);                   \
    }
TC_WRAPPERS(32)
TC_WRAPPERS(64)
TC_WRAPPERS(128)
TC_FUSED(32)
TC_FUSED(64)
TC_FUSED(64x3)
TC_FUSED(128)

static void dq_store_k(void *p)
{
    Args *a = p;
    pw_flash_tc_dq_store(a->dqkv, a->dqkv16, a->dq32, a->B, a->T, a->NH, a->NKV, a->hs);
}

/* The fused backward (dkvq, then the store of dq) into a poisoned dqkv (or dqkv16): the grid of
 * dkv, the dynamic shared memory its build asks for, dq's sums from zeros */
static void fused(Args *a, void (*k)(void *), size_t smem, size_t nqkv)
{
    size_t nq = (size_t)a->B * a->T * a->NH * a->hs;
    a->dq32 = calloc(nq, sizeof(float));
    if (a->dqkv)
        for (size_t i = 0; i < nqkv; i++) a->dqkv[i] = NAN;
    EmuDim3 gk = {(unsigned)((a->T + TC_ROWS - 1) / TC_ROWS), (unsigned)a->NKV, (unsigned)a->B};
    emu_launch_smem(gk, d1(TC_THREADS), smem, k, a);
    emu_launch(d1((unsigned)((nq + 255) / 256)), d1(256), dq_store_k, a);
    free(a->dq32);
    a->dq32 = NULL;
}

static void prep_k(void *p)
{
    Args *a = p;
    pw_flash_tc_prep(a->drow, a->dout16, a->dout, a->fout16, a->mask, a->B, a->T, a->NH, a->hs);
}

/* the prep kernel's outputs: dout16 the rounded dout at real queries and zeros at padding, bit
 * for bit; drow = rowsum(dout * out) there (a float64 sum, 1e-5) and 0 at padding */
static void check_prep(const Args *a, size_t nlse)
{
    int T = a->T, NH = a->NH, hs = a->hs;
    size_t bad = 0;
    float *want = malloc(sizeof(float) * nlse);
    for (size_t i = 0; i < nlse; i++) {
        int t = (int)(i % T), h = (int)(i / T % NH), b = (int)(i / ((size_t)T * NH));
        int real = !a->mask || a->mask[(size_t)b * T + t];
        size_t at = ((size_t)b * T + t) * NH * hs + (size_t)h * hs;
        double d = 0.0;
        for (int c = 0; c < hs; c++) {
            uint16_t w = real ? pw_bf16_from_f32(a->dout[at + c]) : 0;
            bad += a->dout16[at + c] != w;
            if (real) d += (double)a->dout[at + c] * pw_bf16_to_f32(a->fout16[at + c]);
        }
        want[i] = (float)d;
    }
    printf("  %-30s %zu differ\n", "prep: dout in bfloat16", bad);
    CHECK(bad == 0, "prep: %zu bfloat16 values of dout differ", bad);
    emu_check("prep: D = rowsum(dout * out)", a->drow, want, nlse, 1e-5);
    free(want);
}

static void run(int B, int T, int NH, int NKV, int hs, const int *pads, int npads, int hole,
                int use_mask, unsigned long long *rng)
{
    FlashCase fc = flash_case_make(B, T, NH, NKV, hs, pads, npads, hole, use_mask, rng);
    size_t nqkv = fc.nqkv, nout = fc.nout, nlse = fc.nlse;
    const int *mask = fc.mask;
    const float *dout = fc.dout;
    float *widened = malloc(sizeof(float) * nqkv);
    uint16_t *qkv = emu_bf16_of(fc.qkv, nqkv, widened); /* NaN stays NaN */
    float *out = malloc(sizeof(float) * nout), *lse = malloc(sizeof(float) * nlse);
    pw_attention_gqa_forward_bf16(out, lse, qkv, mask, B, T, NH, NKV, hs);
    uint16_t *out16 = malloc(sizeof(uint16_t) * nout), *eout16 = malloc(sizeof(uint16_t) * nout);
    for (size_t i = 0; i < nout; i++) out16[i] = pw_bf16_from_f32(out[i]), eout16[i] = 0x7fc1;
    float *dqkv = malloc(sizeof(float) * nqkv);
    pw_attention_gqa_backward_bf16(dqkv, dout, qkv, out16, lse, mask, B, T, NH, NKV, hs);

    /* the kernels' outputs start poisoned: every value must be written */
    float *eout = malloc(sizeof(float) * nout), *elsev = malloc(sizeof(float) * nlse);
    float *edrow = malloc(sizeof(float) * nlse), *edqkv = malloc(sizeof(float) * nqkv);
    uint16_t *edout16 = malloc(sizeof(uint16_t) * nout);
    for (size_t i = 0; i < nout; i++) eout[i] = NAN;
    for (size_t i = 0; i < nout; i++) edout16[i] = 0x7fc1;
    for (size_t i = 0; i < nlse; i++) elsev[i] = edrow[i] = NAN;
    for (size_t i = 0; i < nqkv; i++) edqkv[i] = NAN;
    Args a = {eout, elsev, edqkv, edrow, NULL, edout16, NULL, eout16, qkv, dout, out16, mask, B,
              T, NH, NKV, hs, 1.0f / sqrtf((float)hs)};
    void (*fwd)(void *) = hs <= 32 ? fwd_32 : hs <= 64 ? fwd_64 : fwd_128;
    void (*dq)(void *) = hs <= 32 ? dq_32 : hs <= 64 ? dq_64 : dq_128;
    void (*dkv)(void *) = hs <= 32 ? dkv_32 : hs <= 64 ? dkv_64 : dkv_128;
    int HS = hs <= 32 ? 32 : hs <= 64 ? 64 : 128, fr = TC_FWD_ROWS(HS);
    EmuDim3 gf = {(unsigned)((T + fr - 1) / fr), (unsigned)NH, (unsigned)B};
    EmuDim3 gq = {(unsigned)((T + TC_ROWS - 1) / TC_ROWS), (unsigned)NH, (unsigned)B};
    EmuDim3 gk = {(unsigned)((T + TC_ROWS - 1) / TC_ROWS), (unsigned)NKV, (unsigned)B};
    emu_launch(gf, d1(TC_THREADS), fwd, &a);
    emu_check("forward lse", elsev, lse, nlse, TOL_LSE);
    emu_check("forward out", eout, out, nout, TOL);
    emu_check_bf16("forward out in bfloat16 too", eout16, eout, nout);

    /* the backward reads the CPU's lse and out (rounded), so that it is tested on its own */
    a.lse = lse;
    emu_launch(d1(pw_row_blocks(nlse)), d1(PW_ROW_THREADS), prep_k, &a);
    check_prep(&a, nlse);
    emu_launch(gq, d1(TC_THREADS), dq, &a);
    emu_launch(gk, d1(TC_THREADS), dkv, &a);
    emu_check("backward: dqkv", edqkv, dqkv, nqkv, TOL);
    /* the backward's bf16 form (what a bf16 model's qkv product reads): the same kernels with
     * dqkv16 instead, bit for bit the float32 output rounded (on the first shape of each head
     * bucket: emulating the backward is most of this test's time) */
    static int seen[3];
    int bucket = HS == 32 ? 0 : HS == 64 ? 1 : 2;
    if (!seen[bucket]++) {
        uint16_t *e16 = malloc(sizeof(uint16_t) * nqkv);
        for (size_t i = 0; i < nqkv; i++) e16[i] = 0x7fc1;
        Args r = a;
        r.dqkv = NULL, r.dqkv16 = e16;
        emu_launch(gq, d1(TC_THREADS), dq, &r);
        emu_launch(gk, d1(TC_THREADS), dkv, &r);
        emu_check_bf16("backward: dqkv in bfloat16", e16, edqkv, nqkv);
        free(e16);
    }
    /* the fused backward (pw_cuda_set_flash_fused_bwd): dk, dv and dq in one kernel, dq summed
     * atomically (here in one order); against the twin, and in bfloat16 on the first shape of
     * each bucket, bit for bit its float32 form rounded; heads of 64 also in the three-block
     * build (tiles of 32 queries) */
    float *fq = malloc(sizeof(float) * nqkv);
    Args f = a;
    f.dqkv = fq;
    void (*dkvq)(void *) = hs <= 32 ? dkvq_32 : hs <= 64 ? dkvq_64 : dkvq_128;
    size_t smem = hs <= 32   ? pw_flash_tc_dkvq_bytes_32
                  : hs <= 64 ? pw_flash_tc_dkvq_bytes_64
                             : pw_flash_tc_dkvq_bytes_128;
    fused(&f, dkvq, smem, nqkv);
    emu_check("backward fused: dqkv", fq, dqkv, nqkv, TOL);
    /* dq on its own (the part the fused kernel makes its own way), against the largest dq */
    size_t nq = (size_t)B * T * NH * hs, W = (size_t)(NH + 2 * NKV) * hs;
    float *got_q = malloc(sizeof(float) * nq), *want_q = malloc(sizeof(float) * nq);
    for (size_t i = 0; i < nq; i++) {
        size_t at = i / ((size_t)NH * hs) * W + i % ((size_t)NH * hs);
        got_q[i] = fq[at];
        want_q[i] = dqkv[at];
    }
    emu_check("backward fused: dq", got_q, want_q, nq, TOL);
    free(got_q);
    free(want_q);
    static int seen_fused[3];
    if (!seen_fused[bucket]++) {
        uint16_t *e16 = malloc(sizeof(uint16_t) * nqkv);
        for (size_t i = 0; i < nqkv; i++) e16[i] = 0x7fc1;
        Args r = f;
        r.dqkv = NULL, r.dqkv16 = e16;
        fused(&r, dkvq, smem, nqkv);
        emu_check_bf16("backward fused: dqkv in bfloat16", e16, fq, nqkv);
        free(e16);
        if (HS == 64) {
            fused(&f, dkvq_64x3, pw_flash_tc_dkvq_bytes_64x3, nqkv);
            emu_check("backward fused, 3 blocks/SM build: dqkv", fq, dqkv, nqkv, TOL);
        }
    }
    free(fq);

    flash_case_free(&fc);
    free(widened);
    free(qkv);
    free(out16);
    free(eout16);
    free(edout16);
    free(out);
    free(lse);
    free(dqkv);
    free(eout);
    free(elsev);
    free(edrow);
    free(edqkv);
}

int main(void)
{
    flash_case_shapes(run);
    return pw_test_done("flash_tc_emu");
}
