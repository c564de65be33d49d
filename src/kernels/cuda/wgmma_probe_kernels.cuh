/* wgmma_probe_kernels.cuh: one warpgroup's product through each form of wgmma.cuh, laid out in
 * shared memory as the attention lays out its tiles (wg_tile.cuh): out (64 x 64, float32,
 * row-major) = the sum over four slices of 16 of A . B, with A (64 x 64 bfloat16, rows of m, k
 * along) and X (64 x 64 bfloat16):
 *  - PW_WG_PROBE_SS: A from shared memory, B[k][n] = X[n][k] (pw_wg_ss_k);
 *  - PW_WG_PROBE_RS_K: A from registers, B the same (pw_wg_rs_k, the attention's q k^T);
 *  - PW_WG_PROBE_RS_MN: A from registers, B[k][n] = X[k][n] (pw_wg_rs_mn, its p v).
 * The accumulators start as NaN and the first slice does not accumulate (its acc 0), the next
 * three do; each slice's descriptors are the first's moved by whole 16-byte units (32 bytes a
 * slice K-major, 2048 MN-major: X's by `step` bytes), as the attention moves them. lbo, sbo and
 * step are the descriptors' offsets and X's move (PW_WG_LBO, PW_WG_SBO and those steps are what
 * wgmma.cuh holds to be right; test_cuda_wgmma.c tries others when they fail, to say which the
 * hardware reads). What the GPU computes here
 * against what tests/cuda/emu_wgmma.h computes for the same source (test_wgmma_emu.c) is the
 * check that the layouts written in wgmma.cuh are the hardware's (test_cuda_wgmma.c).
 *
 * C subset of CUDA: the includer provides wgmma.cuh's and cp_async.cuh's functions (emu.h's on
 * the host), PW_DYN_SMEM, and NAN. */
#ifndef PW_CUDA_WGMMA_PROBE_KERNELS_CUH
#define PW_CUDA_WGMMA_PROBE_KERNELS_CUH

#include "wg_tile.cuh"

enum { PW_WG_PROBE_SS, PW_WG_PROBE_RS_K, PW_WG_PROBE_RS_MN, PW_WG_PROBE_FORMS };

#define PW_WG_PROBE_THREADS 128
/* zeros after X's tile, so that a search's larger offsets and steps (test_cuda_wgmma.c: SBO up to
 * 8192, steps up to 2048) read shared memory of the block's, never past it */
#define PW_WG_PROBE_MARGIN (72u << 10)
/* two tiles, the margin, and room to align */
#define PW_WG_PROBE_SMEM (2 * 64 * PW_WG_ROW + PW_WG_PROBE_MARGIN + PW_WG_ATOM)
/* X's move a slice: 16 k of a K-major row, 16 rows of an MN-major tile */
#define PW_WG_PROBE_STEP(form) ((form) == PW_WG_PROBE_RS_MN ? 16 * (int)PW_WG_ROW : 32)

/* What the code the device runs was built for: flag[0] its __CUDA_ARCH__ (900 for sm_90 and
 * sm_90a), flag[1] 1 where it has the warpgroup products (wgmma.cuh's PW_WGMMA), 0 where it has
 * the trapping bodies; one thread */
__global__ void pw_wgmma_arch_kernel(int *flag)
{
#ifdef __CUDA_ARCH__
    flag[0] = __CUDA_ARCH__;
#else
    flag[0] = 0;
#endif
#ifdef PW_WGMMA
    flag[1] = 1;
#else
    flag[1] = 0;
#endif
}

__global__ void __launch_bounds__(PW_WG_PROBE_THREADS)
    pw_wgmma_probe_kernel(float *out, const uint16_t *a, const uint16_t *x, int form, int lbo,
                          int sbo, int step)
{
    PW_DYN_SMEM(uint8_t, smem);
    uint8_t *sa = pw_wg_base(smem);
    uint8_t *sx = sa + 64 * PW_WG_ROW;
    const int t = (int)threadIdx.x, w = t / 32, lane = t % 32, g = lane / 4, c = lane % 4;
    for (int i = t; i < 64 * 8; i += PW_WG_PROBE_THREADS) { /* 8 chunks of 16 bytes a row */
        int r = i / 8, ch = i % 8;
        pw_cp_async16(pw_smem(sa) + pw_wg_chunk(r, ch), a + r * 64 + ch * 8, 16);
        pw_cp_async16(pw_smem(sx) + pw_wg_chunk(r, ch), x + r * 64 + ch * 8, 16);
    }
    for (uint32_t i = (uint32_t)t * 16; i < PW_WG_PROBE_MARGIN; i += PW_WG_PROBE_THREADS * 16)
        *(uint4 *)(sx + 64 * PW_WG_ROW + i) = make_uint4(0u, 0u, 0u, 0u);
    pw_cp_commit();
    pw_cp_wait_all();
    pw_wg_proxy_fence();
    __syncthreads();
    /* A's fragments of the warp's rows for the four slices, all made before the fence */
    uint32_t af[4][4];
    const uint16_t *a0 = a + (16 * w + g) * 64, *a8 = a0 + 8 * 64;
    for (int s = 0; s < 4; s++) {
        int k = 16 * s + 2 * c;
        af[s][0] = (uint32_t)a0[k] | (uint32_t)a0[k + 1] << 16;
        af[s][1] = (uint32_t)a8[k] | (uint32_t)a8[k + 1] << 16;
        af[s][2] = (uint32_t)a0[k + 8] | (uint32_t)a0[k + 9] << 16;
        af[s][3] = (uint32_t)a8[k + 8] | (uint32_t)a8[k + 9] << 16;
    }
    float d[32];
    for (int v = 0; v < 32; v++) d[v] = NAN;
    uint64_t da = pw_wg_desc(pw_smem(sa), PW_WG_LBO, PW_WG_SBO);
    uint64_t dx = pw_wg_desc(pw_smem(sx), (uint32_t)lbo, (uint32_t)sbo);
    pw_wg_hold(d);
    pw_wg_fence();
    for (int s = 0; s < 4; s++) {
        uint64_t xs = dx + (uint64_t)(step / 16 * s);
        if (form == PW_WG_PROBE_SS)
            pw_wg_ss_k(d, da + 2 * s, xs, s > 0);
        else if (form == PW_WG_PROBE_RS_K)
            pw_wg_rs_k(d, af[s], xs, s > 0);
        else
            pw_wg_rs_mn(d, af[s], xs, s > 0);
    }
    pw_wg_commit();
    pw_wg_wait(0);
    pw_wg_hold(d);
    for (int v = 0; v < 32; v++) {
        int m = 16 * w + g + 8 * ((v / 2) % 2), n = 8 * (v / 4) + 2 * c + v % 2;
        out[m * 64 + n] = d[v];
    }
}

#endif
