/* wgmma_case.h: the data and the reference of the warpgroup products' probe
 * (src/kernels/cuda/wgmma_probe_kernels.cuh), for test_wgmma_emu.c (the probe under the
 * emulator) and test_cuda_wgmma.c (on the GPU). A and X hold small integers, so every product
 * and sum is exact in float32 whatever order the tensor cores add in: the probe must give the
 * reference bit for bit, and a layout wrong anywhere gives a wrong value there. A second pair
 * tells where a wrong layout put things: A the identity, X[r][c] = 16 (r % 16) + c % 16, so that
 * out[m][n] names the element of X it came from. And a search over the descriptor's offsets and
 * the slices' step that says which the hardware reads by, where the ones held right fail. */
#ifndef PW_TEST_CUDA_WGMMA_CASE_H
#define PW_TEST_CUDA_WGMMA_CASE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pw_bf16.h"

#define WG_N 64

static const char *const wg_form_name[] = {"A, B from shared memory (ss_k)",
                                           "A from registers, B K-major (rs_k)",
                                           "A from registers, B MN-major (rs_mn)"};

/* A and X (WG_N x WG_N bfloat16 bits): integers in [-4, 4] from a fixed sequence, or the
 * identity and the position code */
static inline void wg_case(uint16_t *a, uint16_t *x, int where)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < WG_N * WG_N; i++) {
        int r = i / WG_N, c = i % WG_N;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        float va = where ? (float)(r == c) : (float)((int)(s >> 33) % 9 - 4);
        float vx = where ? (float)(16 * (r % 16) + c % 16) : (float)((int)(s >> 45) % 9 - 4);
        a[i] = pw_bf16_from_f32(va);
        x[i] = pw_bf16_from_f32(vx);
    }
}

/* out[m][n] = sum over k of A[m][k] B[k][n], B[k][n] = X[n][k] for the two K-major forms and
 * X[k][n] for the MN-major one (form 2), in double (exact here) */
static inline void wg_reference(float *out, const uint16_t *a, const uint16_t *x, int form)
{
    for (int m = 0; m < WG_N; m++)
        for (int n = 0; n < WG_N; n++) {
            double s = 0.0;
            for (int k = 0; k < WG_N; k++) {
                uint16_t b = form == 2 ? x[k * WG_N + n] : x[n * WG_N + k];
                s += (double)pw_bf16_to_f32(a[m * WG_N + k]) * pw_bf16_to_f32(b);
            }
            out[m * WG_N + n] = (float)s;
        }
}

/* the elements of got that differ from want (bit for bit), the first few printed; with the
 * position code, what each of those came from */
static inline int wg_compare(const float *got, const float *want, int form, int where)
{
    int bad = 0;
    for (int i = 0; i < WG_N * WG_N; i++) {
        if (got[i] == want[i]) continue;
        if (bad++ < 8) {
            int m = i / WG_N, n = i % WG_N, code = (int)got[i];
            if (where && got[i] == (float)code && code >= 0 && code < 256)
                printf("    out[%d][%d] = %g, want %g: from X (row %% 16, col %% 16) = (%d, %d)\n",
                       m, n, got[i], want[i], code / 16, code % 16);
            else
                printf("    out[%d][%d] = %g, want %g\n", m, n, got[i], want[i]);
        }
    }
    printf("  %-38s %s: %d of %d differ\n", wg_form_name[form], where ? "where" : "values",
           bad, WG_N * WG_N);
    return bad;
}

/* The probe run with x's descriptor offsets (lbo, sbo) and slices step bytes apart, its output
 * into out (WG_N x WG_N): on the GPU or under the emulator */
typedef void (*WgRunAt)(float *out, int form, int lbo, int sbo, int step, void *ctx);

/* After a form's values differ from want: the offsets and steps under which the probe gives
 * want, printed (the descriptor's fields and the slices' move are where a reading of the
 * layouts most likely errs); how many did. The first of each list is what wgmma.cuh holds. */
static inline int wg_search(WgRunAt run, void *ctx, int form, const float *want)
{
    static const int lbos[] = {16, 0, 128, 1024, 2048, 8192}, sbos[] = {1024, 128, 2048, 8192};
    static const int steps[] = {32, 2048, 128, 1024};
    static float out[WG_N * WG_N];
    int found = 0;
    for (size_t i = 0; i < sizeof lbos / sizeof *lbos; i++)
        for (size_t j = 0; j < sizeof sbos / sizeof *sbos; j++)
            for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
                run(out, form, lbos[i], sbos[j], steps[k], ctx);
                if (memcmp(out, want, sizeof out)) continue;
                found++;
                printf("    %s gives the reference with LBO %d, SBO %d, slices %d bytes apart\n",
                       wg_form_name[form], lbos[i], sbos[j], steps[k]);
            }
    if (!found) printf("    %s: no LBO, SBO and step tried gives the reference\n",
                       wg_form_name[form]);
    return found;
}

#endif
