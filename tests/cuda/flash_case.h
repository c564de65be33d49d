/* flash_case.h: the data both emulated attention tests (test_flash_emu.c, float32, and
 * test_flash_tc_emu.c, tensor cores) run on: a left-padding mask (one pad length per row,
 * cycled, and an optional hole: a masked-out token of row 0), random qkv, dout and a dqkv to
 * add into, with NaN in the padding rows of qkv and dout (the kernels must never read them). */
#ifndef PW_TEST_CUDA_FLASH_CASE_H
#define PW_TEST_CUDA_FLASH_CASE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "emu_test.h"

typedef struct FlashCase {
    int B, T, NH, NKV, hs;
    size_t nqkv, nout, nlse;
    int *mask; /* NULL: no mask */
    float *qkv, *dout, *dqkv0;
} FlashCase;

static inline FlashCase flash_case_make(int B, int T, int NH, int NKV, int hs, const int *pads,
                                        int npads, int hole, int use_mask,
                                        unsigned long long *rng)
{
    printf("B=%d T=%d NH=%d NKV=%d hs=%d mask=%d hole=%d\n", B, T, NH, NKV, hs, use_mask, hole);
    FlashCase fc = {B, T, NH, NKV, hs, 0, 0, 0, NULL, NULL, NULL, NULL};
    size_t BT = (size_t)B * T, W = (size_t)(NH + 2 * NKV) * hs, C = (size_t)NH * hs;
    fc.nqkv = BT * W;
    fc.nout = BT * C;
    fc.nlse = (size_t)B * NH * T;
    if (use_mask) {
        fc.mask = malloc(sizeof(int) * BT);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) fc.mask[b * T + t] = t >= pads[b % npads];
        if (hole >= 0) fc.mask[hole] = 0;
    }
    fc.qkv = emu_randn(fc.nqkv, 1.0, rng);
    fc.dout = emu_randn(fc.nout, 1.0, rng);
    fc.dqkv0 = emu_randn(fc.nqkv, 1.0, rng);
    for (int b = 0; use_mask && b < B; b++)
        for (int t = 0; t < pads[b % npads] && t < T; t++) {
            for (size_t i = 0; i < W; i++) fc.qkv[((size_t)b * T + t) * W + i] = NAN;
            for (size_t i = 0; i < C; i++) fc.dout[((size_t)b * T + t) * C + i] = NAN;
        }
    return fc;
}

/* The shapes both tests run, each through run(..., rng) */
typedef void (*FlashRun)(int B, int T, int NH, int NKV, int hs, const int *pads, int npads,
                         int hole, int use_mask, unsigned long long *rng);

static inline void flash_case_shapes(FlashRun run)
{
    unsigned long long rng = 20261125;
    int pads[] = {0, 7, 40, 70};
    /* bucket 32: hs 5 (most of the bucket zeros), groups of 3, a padding-only row, a hole */
    run(4, 70, 6, 2, 5, pads, 4, 50, 1, &rng);
    /* bucket 32 full, multi-head, no mask, T past two query blocks and many key tiles */
    run(2, 150, 2, 2, 32, pads, 1, -1, 0, &rng);
    /* bucket 64: GPT-2's head size, groups of 4, left padding */
    run(2, 97, 4, 1, 64, pads, 3, -1, 1, &rng);
    /* bucket 128: Llama's head size (smaller tiles in the backward), groups of 2, a hole after
     * padding */
    run(2, 70, 2, 1, 128, pads, 2, 20, 1, &rng);
    /* a head of 48 runs in the 64 bucket */
    run(1, 33, 3, 3, 48, pads, 1, -1, 0, &rng);
    /* GPT-2's head over three forward blocks of 128 queries (two row tiles a warp), most key
     * tiles wholly below the diagonal (the unmasked path), a group of 2 */
    run(1, 300, 2, 1, 64, pads, 1, -1, 0, &rng);
}

static inline void flash_case_free(FlashCase *fc)
{
    free(fc->mask);
    free(fc->qkv);
    free(fc->dout);
    free(fc->dqkv0);
}

#endif
