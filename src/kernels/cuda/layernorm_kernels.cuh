/* layernorm_kernels.cuh: LayerNorm forward and backward: one warp per row; dweight and dbias by
 * partial sums in a fixed order, of a block's rows (in the pass that makes dinp) or of a column
 * sum's chunks (rows over PW_ROW_KEEP * 32), then added in order (launched by layernorm.cu; the
 * CPU twin is cpu/layernorm.c). Written in the C subset of CUDA, so that
 * tests/cuda/test_gpt2_emu.c compiles this very file on the host and runs it under
 * tests/cuda/emu.h against the CPU kernel. */
#ifndef PW_LAYERNORM_KERNELS_CUH
#define PW_LAYERNORM_KERNELS_CUH

#include <math.h>
#include <stddef.h>

#include "bf16.cuh"
#include "launch.cuh"
#include "rows.cuh"
#include "warp.cuh"

/* A row of C <= PW_ROW_KEEP * 32 kept in the lane's registers: read once, written once, where
 * the loops below read it three times (PW_ROW_KEEP, launch.cuh). The same operations in the same
 * order as those loops: the same bits. */
static __device__ void layernorm_row_kept(float *out, uint16_t *out16, float *mean, float *rstd,
                                          float *res, const float *x, const float *inp2,
                                          const float *weight, const float *bias, int row, int C,
                                          int lane)
{
    size_t at = (size_t)row * C;
    float v[PW_ROW_KEEP];
    pw_row_load(v, x, inp2 ? inp2 + at : NULL, lane, C, PW_ROW_KEEP);
    float sum = 0.0f;
    for (int u = 0; u < PW_ROW_KEEP; u++)
        if (lane + u * PW_WARP < C) {
            if (inp2) res[at + lane + u * PW_WARP] = v[u];
            sum += v[u];
        }
    float m = pw_warp_sum(sum) / C;
    float var = 0.0f;
    for (int u = 0; u < PW_ROW_KEEP; u++)
        if (lane + u * PW_WARP < C) {
            float d = v[u] - m;
            var += d * d;
        }
    float s = 1.0f / sqrtf(pw_warp_sum(var) / C + 1e-5f);
    for (int u = 0; u < PW_ROW_KEEP; u++) {
        int c = lane + u * PW_WARP;
        v[u] = c < C ? (v[u] - m) * s * weight[c] + bias[c] : 0.0f;
    }
    pw_row_store(out ? out + at : NULL, out16 ? out16 + at : NULL, v, lane, C, PW_ROW_KEEP);
    if (lane == 0) {
        if (mean) mean[row] = m;
        if (rstd) rstd[row] = s;
    }
}

/* out (float32) and out16 (the same values rounded to bfloat16, for a bf16 model's products):
 * either may be NULL. With inp2, the row normalised is inp + inp2, written to res first (the
 * residual add fused: res may be inp; each lane reads back only what it wrote). */
__global__ void layernorm_forward_kernel(float *out, uint16_t *out16, float *mean, float *rstd,
                                         float *res, const float *inp, const float *inp2,
                                         const float *weight, const float *bias, int N, int C)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    int row = blockIdx.x * PW_ROW_WARPS + threadIdx.x / PW_WARP;
    int lane = threadIdx.x % PW_WARP;
    if (row >= N) return; /* a whole warp leaves together: the shuffles below stay full */
    size_t at = (size_t)row * C;
    const float *x = inp + at;
    if (C <= PW_ROW_KEEP * PW_WARP) {
        layernorm_row_kept(out, out16, mean, rstd, res, x, inp2, weight, bias, row, C, lane);
        return;
    }
    float sum = 0.0f;
    if (inp2) {
        for (int c0 = lane; c0 < C; c0 += PW_ROW_BATCH * PW_WARP) {
            float v[PW_ROW_BATCH];
            pw_row_load(v, x, inp2 + at, c0, C, PW_ROW_BATCH);
            for (int u = 0; u < PW_ROW_BATCH; u++)
                if (c0 + u * PW_WARP < C) {
                    res[at + c0 + u * PW_WARP] = v[u];
                    sum += v[u];
                }
        }
        x = res + at;
    } else {
        for (int c = lane; c < C; c += PW_WARP) sum += x[c];
    }
    float m = pw_warp_sum(sum) / C;
    /* two passes, as the CPU twin: E[x^2] - m^2 cancels for rows far from zero */
    float var = 0.0f;
    for (int c = lane; c < C; c += PW_WARP) {
        float d = x[c] - m;
        var += d * d;
    }
    float s = 1.0f / sqrtf(pw_warp_sum(var) / C + 1e-5f);
    for (int c0 = lane; c0 < C; c0 += PW_ROW_BATCH * PW_WARP) {
        float y[PW_ROW_BATCH];
        for (int u = 0; u < PW_ROW_BATCH; u++) {
            int c = c0 + u * PW_WARP;
            y[u] = c < C ? (x[c] - m) * s * weight[c] + bias[c] : 0.0f;
        }
        pw_row_store(out ? out + at : NULL, out16 ? out16 + at : NULL, y, c0, C, PW_ROW_BATCH);
    }
    if (lane == 0) {
        if (mean) mean[row] = m;
        if (rstd) rstd[row] = s;
    }
}

/* The forward with a lane's elements 16 bytes at a time (pw_cuda_set_ln_vec; layernorm.cu takes
 * it where C is a multiple of 4 up to PW_ROW_VEC * 128 and every row starts 16 bytes aligned):
 * float4 q = lane + 32 u of the row, u < PW_ROW_VEC, read once and kept in registers, the
 * weight's and bias's float4 loaded before the sums so that their round trip is not the last
 * one. The scalar kernel above issues four times the loads, one float each, and ran at 0.21 of
 * the copy for 16384 rows of 768 on an H200 (bench_kernels_cuda); its backward reached 0.82.
 * Each element's arithmetic is the scalar kernel's; the sums go in another order (each lane's
 * four neighbours first), so the results agree with it to rounding, not bit for bit. Blocks of
 * blockDim.x / 32 rows: layernorm.cu makes them small where there are few rows, so that a
 * decode step's 256 rows spread over the SMs. */
__global__ void layernorm_forward_vec_kernel(float *out, uint16_t *out16, float *mean,
                                             float *rstd, float *res, const float *inp,
                                             const float *inp2, const float *weight,
                                             const float *bias, int N, int C)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    int row = pw_row_vec_row(), lane = (int)(threadIdx.x % PW_WARP), C4 = C / 4;
    if (row >= N) return; /* a whole warp leaves together */
    size_t at = (size_t)row * C;
    float4 v[PW_ROW_VEC], wv[PW_ROW_VEC], bv[PW_ROW_VEC];
    pw_row_load4(v, (const float4 *)(inp + at), inp2 ? (const float4 *)(inp2 + at) : 0, lane, C4,
                 PW_ROW_VEC);
    pw_row_load4(wv, (const float4 *)weight, 0, lane, C4, PW_ROW_VEC);
    pw_row_load4(bv, (const float4 *)bias, 0, lane, C4, PW_ROW_VEC);
    float sum = 0.0f;
    PW_UNROLL
    for (int u = 0; u < PW_ROW_VEC; u++)
        if (lane + u * PW_WARP < C4) {
            if (res) ((float4 *)(res + at))[lane + u * PW_WARP] = v[u];
            sum += v[u].x + v[u].y + v[u].z + v[u].w;
        }
    float m = pw_warp_sum(sum) / C;
    float var = 0.0f;
    PW_UNROLL
    for (int u = 0; u < PW_ROW_VEC; u++)
        if (lane + u * PW_WARP < C4) {
            float d0 = v[u].x - m, d1 = v[u].y - m, d2 = v[u].z - m, d3 = v[u].w - m;
            var += d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3;
        }
    float s = 1.0f / sqrtf(pw_warp_sum(var) / C + 1e-5f);
    PW_UNROLL
    for (int u = 0; u < PW_ROW_VEC; u++) {
        int q = lane + u * PW_WARP;
        if (q >= C4) break;
        float4 o = make_float4((v[u].x - m) * s * wv[u].x + bv[u].x,
                               (v[u].y - m) * s * wv[u].y + bv[u].y,
                               (v[u].z - m) * s * wv[u].z + bv[u].z,
                               (v[u].w - m) * s * wv[u].w + bv[u].w);
        pw_row_store4(out ? out + at : 0, out16 ? out16 + at : 0, o, q);
    }
    if (lane == 0) {
        if (mean) mean[row] = m;
        if (rstd) rstd[row] = s;
    }
}

/* A lane's part of a row's dinp, added into g and rounded into g16 when it is not NULL:
 * g += s (w d - dsum - norm dnsum), PW_ROW_BATCH elements loaded before any is stored. Both
 * backward kernels below make dinp here: the same operations in the same order, the same bits. */
static __device__ __forceinline__ void layernorm_dinp_row(float *g, uint16_t *g16, const float *x,
                                                          const float *d, const float *weight,
                                                          float m, float s, float dsum,
                                                          float dnsum, int C, int lane)
{
    for (int c0 = lane; c0 < C; c0 += PW_ROW_BATCH * PW_WARP) {
        float v[PW_ROW_BATCH];
        for (int u = 0; u < PW_ROW_BATCH; u++) {
            int c = c0 + u * PW_WARP;
            float norm = c < C ? (x[c] - m) * s : 0.0f;
            v[u] = c < C ? g[c] + s * (weight[c] * d[c] - dsum - norm * dnsum) : 0.0f;
        }
        pw_row_store(g, g16, v, c0, C, PW_ROW_BATCH);
    }
}

/* dx = s (dnorm - mean(dnorm) - norm mean(dnorm norm)), dnorm = w dout; accumulated, and the
 * sum also rounded to bfloat16 into dinp16 when it is not NULL (the next product's dout) */
__global__ void layernorm_dinp_kernel(float *dinp, uint16_t *dinp16, const float *dout,
                                      const float *inp, const float *weight, const float *mean,
                                      const float *rstd, int N, int C)
{
    int row = blockIdx.x * PW_ROW_WARPS + threadIdx.x / PW_WARP;
    int lane = threadIdx.x % PW_WARP;
    if (row >= N) return;
    const float *x = inp + (size_t)row * C, *d = dout + (size_t)row * C;
    float *g = dinp + (size_t)row * C;
    float m = mean[row], s = rstd[row];
    float dsum = 0.0f, dnsum = 0.0f;
    for (int c = lane; c < C; c += PW_WARP) {
        float dn = weight[c] * d[c];
        dsum += dn;
        dnsum += dn * (x[c] - m) * s;
    }
    dsum = pw_warp_sum(dsum) / C;
    dnsum = pw_warp_sum(dnsum) / C;
    layernorm_dinp_row(g, dinp16 ? dinp16 + (size_t)row * C : NULL, x, d, weight, m, s, dsum,
                       dnsum, C, lane);
}

/* All three gradients in one pass over rows of C <= PW_ROW_KEEP * 32, where the kernels above
 * and below read dout and inp once for dinp and once more for dweight and dbias: at GPT-2's
 * 16384 rows of 768 that was 325 MB a call, this 225 MB (dout and inp read once, dinp read and
 * written, dinp16 written) and 1.6 MB of partial rows. Block b takes `rows` x PW_ROW_WARPS rows
 * from b * rows * PW_ROW_WARPS (pw_lnb_rows, launch.cuh), warp w every PW_ROW_WARPS-th from w;
 * a lane adds its columns' (lane + 32 u) dweight and dbias terms over its rows, in row order, in
 * registers, and the block's warps add theirs in warp order into pw and pb (2, gridDim.x, C),
 * which layernorm_dwdb_finish_kernel adds in block order: the same bits on every run, no
 * atomics. A row's loads come PW_ROW_BATCH a lane at a time before any is used; dinp is
 * layernorm_dinp_row's, as in layernorm_dinp_kernel (the same bits), reading x, d and the
 * weight again, now from L1: kept in registers beside the partials, they took the thread
 * past the 128 registers at which two blocks share an SM. dinp NULL: dweight and dbias alone. */
__global__ void __launch_bounds__(PW_ROW_THREADS)
    layernorm_backward_rows_kernel(float *dinp, uint16_t *dinp16, float *pw, float *pb,
                                   const float *dout, const float *inp, const float *weight,
                                   const float *mean, const float *rstd, int N, int C, int rows)
{
    __shared__ float sum_w[PW_ROW_KEEP * PW_WARP], sum_b[PW_ROW_KEEP * PW_WARP];
    int warp = threadIdx.x / PW_WARP, lane = threadIdx.x % PW_WARP;
    float sw[PW_ROW_KEEP], sb[PW_ROW_KEEP];
    for (int u = 0; u < PW_ROW_KEEP; u++) sw[u] = sb[u] = 0.0f;
    for (int i = 0; i < rows; i++) {
        int row = (blockIdx.x * rows + i) * PW_ROW_WARPS + warp;
        if (row >= N) break;
        size_t at = (size_t)row * C;
        const float *x = inp + at, *d = dout + at;
        float m = mean[row], s = rstd[row];
        float dsum = 0.0f, dnsum = 0.0f;
        for (int u0 = 0; u0 < PW_ROW_KEEP; u0 += PW_ROW_BATCH) {
            int c0 = lane + u0 * PW_WARP;
            float xv[PW_ROW_BATCH], dv[PW_ROW_BATCH], wv[PW_ROW_BATCH];
            pw_row_load(xv, x, NULL, c0, C, PW_ROW_BATCH);
            pw_row_load(dv, d, NULL, c0, C, PW_ROW_BATCH);
            pw_row_load(wv, weight, NULL, c0, C, PW_ROW_BATCH);
            for (int u = 0; u < PW_ROW_BATCH; u++)
                if (c0 + u * PW_WARP < C) {
                    float dn = wv[u] * dv[u];
                    dsum += dn;
                    dnsum += dn * (xv[u] - m) * s;
                    sw[u0 + u] += (xv[u] - m) * s * dv[u];
                    sb[u0 + u] += dv[u];
                }
        }
        if (!dinp) continue;
        dsum = pw_warp_sum(dsum) / C;
        dnsum = pw_warp_sum(dnsum) / C;
        layernorm_dinp_row(dinp + at, dinp16 ? dinp16 + at : NULL, x, d, weight, m, s, dsum,
                           dnsum, C, lane);
    }
    /* every warp reaches each barrier, those with no rows too (their sums are zeros) */
    size_t out = (size_t)blockIdx.x * C;
    for (int w = 0; w < PW_ROW_WARPS; w++) {
        if (warp == w)
            for (int u = 0; u < PW_ROW_KEEP; u++) {
                int c = lane + u * PW_WARP;
                if (c >= C) break;
                float tw = w ? sum_w[c] + sw[u] : sw[u], tb = w ? sum_b[c] + sb[u] : sb[u];
                if (w < PW_ROW_WARPS - 1) {
                    sum_w[c] = tw;
                    sum_b[c] = tb;
                } else {
                    pw[out + c] = tw;
                    pb[out + c] = tb;
                }
            }
        __syncthreads();
    }
}

/* Stage one of dweight and dbias for rows longer than the one pass takes: chunk y of rows into
 * partial sums (2, nchunks, C); thread c reads column c of each row, so a warp's loads are
 * coalesced. Stage two adds the chunks in a fixed order: the same bits on every run, no
 * atomics. */
__global__ void layernorm_dwdb_partial_kernel(float *pw, float *pb, const float *dout,
                                              const float *inp, const float *mean,
                                              const float *rstd, int N, int C, int rows)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    int r0 = blockIdx.y * rows, r1 = r0 + rows < N ? r0 + rows : N;
    float sw = 0.0f, sb = 0.0f;
    for (int i = r0; i < r1; i++) {
        float d = dout[(size_t)i * C + c];
        sw += (inp[(size_t)i * C + c] - mean[i]) * rstd[i] * d;
        sb += d;
    }
    pw[(size_t)blockIdx.y * C + c] = sw;
    pb[(size_t)blockIdx.y * C + c] = sb;
}

/* Stage two: the nchunks partial rows of pw and pb added in order into dweight and dbias (+=,
 * either may be NULL): a block of PW_ROW_THREADS takes 32 columns, a lane a column, its warp w
 * the partial rows w, w + PW_ROW_WARPS, ... in order, and the warps' sums are added in warp
 * order (pw_lnb_finish_blocks, launch.cuh, says why). */
__global__ void layernorm_dwdb_finish_kernel(float *dweight, float *dbias, const float *pw,
                                             const float *pb, int nchunks, int C)
{
    __shared__ float tw[PW_ROW_WARPS][PW_WARP], tb[PW_ROW_WARPS][PW_WARP];
    int warp = threadIdx.x / PW_WARP, lane = threadIdx.x % PW_WARP;
    int c = blockIdx.x * PW_WARP + lane;
    float sw = 0.0f, sb = 0.0f;
    if (c < C)
        for (int y = warp; y < nchunks; y += PW_ROW_WARPS) {
            sw += pw[(size_t)y * C + c];
            sb += pb[(size_t)y * C + c];
        }
    tw[warp][lane] = sw;
    tb[warp][lane] = sb;
    __syncthreads();
    if (warp != 0 || c >= C) return;
    for (int w = 1; w < PW_ROW_WARPS; w++) {
        sw += tw[w][lane];
        sb += tb[w][lane];
    }
    if (dweight) dweight[c] += sw;
    if (dbias) dbias[c] += sb;
}

#endif
