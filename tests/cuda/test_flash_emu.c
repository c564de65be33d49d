/* test_flash_emu.c: the fused attention kernels of the GPU (src/kernels/cuda/flash.cuh), the
 * very source nvcc compiles, built here as C and run under the host emulation of emu.h against
 * the CPU's pw_attention_gqa_forward / _backward (cpu/attention.c) on the same random data:
 * out, lse and the accumulated dqkv within 1e-5 relative. Needs no GPU: it runs wherever the
 * project builds, so the kernels' logic (tiling, masks, online softmax, the two backward
 * kernels' split of the gradients) is checked on every machine. Each of the three head-size
 * buckets runs, with groups of 1 to 4 query heads, left padding with a padding-only row, a hole
 * in the mask, T not a multiple of any tile, NaN in the left padding (never read), and the
 * same launch geometry as attention.cu. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_test.h"
#include "flash_case.h"

#include "flash.cuh"

#include "pw_kernels.h"
#include "pw_test.h"

#define TOL 1e-5

typedef struct Args {
    float *out, *lse, *dqkv, *drow;
    const float *qkv, *dout;
    const int *mask;
    int T, NH, NKV, hs;
    float scale;
} Args;

#define FLASH_WRAPPERS(HS)                                                                       \
    static void fwd_##HS(void *p)                                                                \
    {                                                                                            \
        Args *a = p;                                                                             \
        pw_flash_fwd_##HS(a->out, a->lse, a->qkv, a->mask, a->T, a->NH, a->NKV, a->hs, a->scale); \
    }                                                                                            \
    static void dq_##HS(void *p)                                                                 \
    {                                                                                            \
        Args *a = p;                                                                             \
        pw_flash_dq_##HS(a->dqkv, a->drow, a->dout, a->qkv, a->lse, a->mask, a->T, a->NH,       \
                         a->NKV, a->hs, a->scale);                                               \
    }                                                                                            \
    static void dkv_##HS(void *p)                                                                \
    {                                                                                            \
        Args *a = p;                                                                             \
        pw_flash_dkv_##HS(a->dqkv, a->drow, a->dout, a->qkv, a->lse, a->mask, a->T, a->NH,      \
                          a->NKV, a->hs, a->scale);                                              \
    }
FLASH_WRAPPERS(32)
FLASH_WRAPPERS(64)
FLASH_WRAPPERS(128)

static void run(int B, int T, int NH, int NKV, int hs, const int *pads, int npads, int hole,
                int use_mask, unsigned long long *rng)
{
    FlashCase fc = flash_case_make(B, T, NH, NKV, hs, pads, npads, hole, use_mask, rng);
    size_t nqkv = fc.nqkv, nout = fc.nout, nlse = fc.nlse;
    const int *mask = fc.mask;
    const float *qkv = fc.qkv, *dout = fc.dout, *dqkv0 = fc.dqkv0;
    float *out = malloc(sizeof(float) * nout), *lse = malloc(sizeof(float) * nlse);
    pw_attention_gqa_forward(out, lse, qkv, mask, B, T, NH, NKV, hs);
    float *dqkv = emu_copy(dqkv0, nqkv);
    pw_attention_gqa_backward(dqkv, dout, qkv, lse, mask, B, T, NH, NKV, hs);

    /* the kernels' outputs start poisoned: every value must be written */
    float *eout = malloc(sizeof(float) * nout), *elsev = malloc(sizeof(float) * nlse);
    float *edrow = malloc(sizeof(float) * nlse), *edqkv = emu_copy(dqkv0, nqkv);
    for (size_t i = 0; i < nout; i++) eout[i] = NAN;
    for (size_t i = 0; i < nlse; i++) elsev[i] = edrow[i] = NAN;
    Args a = {eout, elsev, edqkv, edrow, qkv, dout, mask, T, NH, NKV, hs,
              1.0f / sqrtf((float)hs)};
    void (*fwd)(void *) = hs <= 32 ? fwd_32 : hs <= 64 ? fwd_64 : fwd_128;
    void (*dq)(void *) = hs <= 32 ? dq_32 : hs <= 64 ? dq_64 : dq_128;
    void (*dkv)(void *) = hs <= 32 ? dkv_32 : hs <= 64 ? dkv_64 : dkv_128;
    int bucket = hs <= 32 ? 32 : hs <= 64 ? 64 : 128, bkv = FLASH_BKV(bucket);
    EmuDim3 gq = {(unsigned)((T + FLASH_BQ - 1) / FLASH_BQ), (unsigned)NH, (unsigned)B};
    EmuDim3 gk = {(unsigned)((T + bkv - 1) / bkv), (unsigned)NKV, (unsigned)B};
    emu_launch(gq, (EmuDim3){FLASH_BQ, 1, 1}, fwd, &a);
    double e_out = pw_max_rel_err_ff(eout, out, nout, 1e-6);
    double e_lse = pw_max_rel_err_ff(elsev, lse, nlse, 1e-6);
    CHECK(e_out <= TOL, "forward out: rel err %.3g", e_out);
    CHECK(e_lse <= TOL, "forward lse: rel err %.3g", e_lse);

    /* the backward reads the CPU's lse, so that it is tested on its own */
    a.lse = lse;
    emu_launch(gq, (EmuDim3){FLASH_BQ, 1, 1}, dq, &a);
    emu_launch(gk, (EmuDim3){(unsigned)bkv, 1, 1}, dkv, &a);
    double e_d = pw_max_rel_err_ff(edqkv, dqkv, nqkv, 1e-6);
    CHECK(e_d <= TOL, "backward dqkv (+=): rel err %.3g", e_d);
    printf("  out %.2e  lse %.2e  dqkv %.2e\n", e_out, e_lse, e_d);

    flash_case_free(&fc);
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
    return pw_test_done("flash_emu");
}
