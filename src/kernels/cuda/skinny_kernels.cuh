/* skinny_kernels.cuh: the few-row product of a decode step on the tensor cores, out(N,OC) =
 * inp(N,C) . w(OC,C)^T + bias, bf16 operands, float32 accumulation and output (what
 * pw_matmul_forward_bf16 computes on the CPU), for N up to PW_SK_MAX_ROWS (launch.cuh); or,
 * for GPT-2's MLP up-projection, GELU of it in bfloat16, or for the Llama family's [gate | up]
 * product, SwiGLU of its two halves in bfloat16 (act16, below).
 *
 * Why a kernel of our own beside cuBLAS: at a decode step's 256 rows GPT-2's projections back
 * to 768 channels are 12 tiles of 128 x 128 for an H100's 132 SMs, each walking all of K alone;
 * measured there, such products took 8 to 16 us where reading their weights takes 2 to 3
 * (performance.md). This kernel splits K in parts (pw_sk_parts, launch.cuh) so the grid fills the
 * device, and sums the parts in the same launch: each block stores its partial tile in a
 * workspace and counts itself in the tile's counter; the block that counts last adds the parts
 * in part order (0, 1, ...), then the bias, and writes the output, and sets the counter back to
 * zero for the next launch. The order is fixed: the same bits on every run, as cuBLASLt's own
 * split-K with its parts summed in a workspace (lt_plan.cu) gives.
 *
 * Grid: (m tiles, n tiles, parts); the m tiles of one n tile run next to each other, so the
 * weights one reads from memory the next finds in L2. A block of 8 warps makes a tile of
 * PW_SK_BM = 64 rows by PW_SK_BN = 128 outputs, each warp 32 x 32 of it (2 x 4 products of
 * mma.cuh's m16n8k16 for each 16 of K). Its part of K comes through shared memory PW_SK_BK = 32
 * at a time in three buffers: the copies of the next two (cp_async.cuh, 16 bytes a thread, rows
 * past N or OC zero-filled) are in flight while the warps compute on the current one. Rows of a
 * buffer are SK_LD = 40 halves apart (80 bytes: 16-byte aligned, as ldmatrix and cp.async need,
 * and the 8 rows of an ldmatrix matrix fall in 8 distinct groups of 4 banks). Both operands are
 * K-contiguous (inp's rows, w's rows), so both come by plain ldmatrix (mma.cuh): A as the
 * product's rows, B as X[n][k] = w's rows.
 *
 * The caller (skinny.cu) guarantees: C a multiple of PW_SK_BK, inp and w 16-byte aligned,
 * out 16-byte aligned with OC a multiple of 4, a workspace of PW_SK_WS_TILES tiles and
 * counters at zero for every tile of the grid.
 *
 * Written in the C subset of CUDA, so that tests/cuda/test_skinny_emu.c compiles this very file
 * on the host and runs it under tests/cuda/emu.h; the includer provides mma.cuh's and
 * cp_async.cuh's functions (emu.h's on the host), launch.cuh, PW_UNROLL, __ldcg of a float4,
 * __threadfence and atomicAdd of an int. */
#ifndef PW_CUDA_SKINNY_KERNELS_CUH
#define PW_CUDA_SKINNY_KERNELS_CUH

#include "bf16.cuh"
#include "gelu.cuh"
#include "swiglu.cuh"

/* the epilogues (pw_skinny_kernel's act) */
#define PW_SK_PLAIN 0  /* out = the product and bias, float32 */
#define PW_SK_GELU 1   /* act16 = GELU of it, bfloat16 */
#define PW_SK_SWIGLU 2 /* act16 (N x OC / 2) = SwiGLU of the gate half and the up half, bfloat16 */

#define SK_STAGES 3
#define SK_LD (PW_SK_BK + 8)
#define SK_TILE (PW_SK_BM * PW_SK_BN) /* floats of a partial tile in the workspace */

/* The row of w that row rb of the tile's B (its column rb) is, -1 past the output. With
 * SwiGLU a tile of 128 columns is 64 outputs' gates and ups interleaved by 8: columns 16i..16i+7
 * the gates of outputs 8i..8i+7 of the tile's 64, columns 16i+8..16i+15 their ups (rows F
 * further), so that a lane holds each of its outputs' gate and up (D tiles nt and nt + 1). */
static __device__ __forceinline__ int sk_wrow(int n0, int rb, int OC, int act)
{
    if (act != PW_SK_SWIGLU) return n0 + rb < OC ? n0 + rb : -1;
    int F = OC / 2, j = n0 / 2 + (rb / 16) * 8 + rb % 8;
    return j < F ? j + (rb / 8 % 2) * F : -1;
}

/* One step's operands into a buffer: 64 rows of inp (a 16-byte copy a thread) and 128 rows of
 * w (two), PW_SK_BK halves each from column k0 */
static __device__ __forceinline__ void sk_load(uint16_t *sa, uint16_t *sb, const uint16_t *inp,
                                               const uint16_t *w, int m0, int n0, int k0, int N,
                                               int C, int OC, int act, int tid)
{
    int r = tid / 4, c = (tid % 4) * 8, row = m0 + r;
    pw_cp_async16(pw_smem(sa + r * SK_LD + c), inp + (size_t)(row < N ? row : 0) * C + k0 + c,
                  row < N ? 16 : 0);
    PW_UNROLL
    for (int h = 0; h < 2; h++) {
        int rb = r + 64 * h, wr = sk_wrow(n0, rb, OC, act);
        pw_cp_async16(pw_smem(sb + rb * SK_LD + c), w + (size_t)(wr >= 0 ? wr : 0) * C + k0 + c,
                      wr >= 0 ? 16 : 0);
    }
}

/* GELU's epilogue: the sum rounded to bfloat16 (as the separate GELU kernel reads a float32
 * input at bf16: bf16.cuh's pw_input_at), its GELU rounded, two a 32-bit store */
static __device__ __forceinline__ float sk_rounded(float x)
{
    return pw_bf16_float(pw_bf16_bits(x));
}
static __device__ __forceinline__ uint32_t sk_gelu_pair(float a, float b)
{
    return pw_bf16_pair(gelu_of(sk_rounded(a)), gelu_of(sk_rounded(b)));
}

/* SwiGLU's the same way: the gate and up sums rounded (as the SwiGLU kernel reads a float32
 * [gate | up] at bf16), SwiGLU of them rounded, two outputs a 32-bit store */
static __device__ __forceinline__ uint32_t sk_swiglu_pair(float g0, float u0, float g1, float u1)
{
    return pw_bf16_pair(swiglu_of(sk_rounded(g0), sk_rounded(u0)),
                        swiglu_of(sk_rounded(g1), sk_rounded(u1)));
}

/* position e of a tile summed over its parts in part order, each read through L2 (__ldcg,
 * where the other blocks' stores are); the loop unrolled to PW_SK_MAX_PARTS, so that every
 * part's load is in flight at once */
static __device__ __forceinline__ float4 sk_sum(const float *parts0, int parts, int e)
{
    float4 v[PW_SK_MAX_PARTS];
    PW_UNROLL
    for (int p = 0; p < PW_SK_MAX_PARTS; p++)
        v[p] = p < parts ? __ldcg((const float4 *)(parts0 + (size_t)p * SK_TILE + e))
                         : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4 s = v[0];
    PW_UNROLL
    for (int p = 1; p < PW_SK_MAX_PARTS; p++)
        if (p < parts) {
            s.x += v[p].x;
            s.y += v[p].y;
            s.z += v[p].z;
            s.w += v[p].w;
        }
    return s;
}

/* act PW_SK_PLAIN: out = the product and bias (float32). PW_SK_GELU: act16 = GELU of it in
 * bfloat16 (GPT-2's MLP up-projection in a cache pass: what the product into float32 and then
 * gelu_forward_kernel with `round` give, bit for bit). PW_SK_SWIGLU: act16 (N x F, F = OC / 2)
 * = SwiGLU of w's first F rows' products (gates) and its last F rows' (ups), no bias (the
 * Llama family's [gate | up] product in a cache pass: what the product into float32 and then
 * swiglu_forward_kernel with `round` give, bit for bit); out is not written in either. */
__global__ void __launch_bounds__(PW_SK_THREADS)
    pw_skinny_kernel(float *out, uint16_t *act16, float *ws, int *counters, const uint16_t *inp,
                     const uint16_t *w, const float *bias, int N, int C, int OC, int act)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    __shared__ __align__(16) uint16_t sa[SK_STAGES][PW_SK_BM * SK_LD];
    __shared__ __align__(16) uint16_t sb[SK_STAGES][PW_SK_BN * SK_LD];
    __shared__ int last;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / 4, wn = warp % 4; /* the warp's 32 x 32: rows wm * 32, columns wn * 32 */
    const int m0 = blockIdx.x * PW_SK_BM, n0 = blockIdx.y * PW_SK_BN;
    const int part = blockIdx.z, parts = gridDim.z, steps = C / PW_SK_BK;
    const int k_first = (int)((long long)steps * part / parts);
    const int nsteps = (int)((long long)steps * (part + 1) / parts) - k_first;
    float acc[2][4][4];
    PW_UNROLL
    for (int i = 0; i < 2; i++)
        PW_UNROLL
        for (int j = 0; j < 4; j++)
            PW_UNROLL
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

    /* the first two steps in flight; a group is committed every step, empty or not, so that
     * "all but the newest" is always the step about to be used */
    for (int p = 0; p < SK_STAGES - 1; p++) {
        if (p < nsteps)
            sk_load(sa[p], sb[p], inp, w, m0, n0, (k_first + p) * PW_SK_BK, N, C, OC, act, tid);
        pw_cp_commit();
    }
    /* ldmatrix's lanes: lane 8i + j gives row j of matrix i. A: matrices (rows 0-7, k 0-7),
     * (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15): the m16n8k16 A fragment. B:
     * (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15): two n8 B fragments. */
    const int a_row = wm * 32 + (lane / 8 % 2) * 8 + lane % 8, a_k = (lane / 16) * 8;
    const int b_row = wn * 32 + (lane / 16) * 8 + lane % 8, b_k = (lane / 8 % 2) * 8;
    for (int t = 0; t < nsteps; t++) {
        pw_cp_wait_but_one();
        __syncthreads(); /* step t landed for all; every warp is done with step t - 1's buffer */
        int next = t + SK_STAGES - 1;
        if (next < nsteps)
            sk_load(sa[next % SK_STAGES], sb[next % SK_STAGES], inp, w, m0, n0,
                    (k_first + next) * PW_SK_BK, N, C, OC, act, tid);
        pw_cp_commit();
        const uint16_t *A = sa[t % SK_STAGES], *B = sb[t % SK_STAGES];
        PW_UNROLL
        for (int kk = 0; kk < PW_SK_BK; kk += 16) {
            uint32_t af[2][4], bf[2][4];
            PW_UNROLL
            for (int mt = 0; mt < 2; mt++)
                pw_ldsm_x4(af[mt], A + (a_row + mt * 16) * SK_LD + kk + a_k);
            PW_UNROLL
            for (int np = 0; np < 2; np++)
                pw_ldsm_x4(bf[np], B + (b_row + np * 16) * SK_LD + kk + b_k);
            PW_UNROLL
            for (int mt = 0; mt < 2; mt++)
                PW_UNROLL
                for (int nt = 0; nt < 4; nt++)
                    pw_mma_bf16(acc[mt][nt], af[mt], &bf[nt / 2][(nt % 2) * 2]);
        }
    }
    pw_cp_wait_all();

    /* a lane's results (mma.cuh's D layout): rows g and g + 8 of each 16, columns 2c, 2c + 1;
     * one part writes the output with its bias, each of several its partial tile */
    const int g = lane / 4, c2 = (lane % 4) * 2, tile = blockIdx.y * gridDim.x + blockIdx.x;
    const int whole = parts == 1, ld = whole ? OC : PW_SK_BN, F = OC / 2;
    if (whole && act == PW_SK_SWIGLU) { /* D tiles nt (gates) and nt + 1 (their ups) */
        PW_UNROLL
        for (int mt = 0; mt < 2; mt++)
            PW_UNROLL
            for (int nt = 0; nt < 4; nt += 2)
                PW_UNROLL
                for (int h = 0; h < 2; h++) {
                    int r = m0 + wm * 32 + mt * 16 + g + 8 * h;
                    int j = n0 / 2 + (wn * 2 + nt / 2) * 8 + c2; /* F is even: j + 1 < F too */
                    if (r >= N || j >= F) continue;
                    *(uint32_t *)(act16 + (size_t)r * F + j) =
                        sk_swiglu_pair(acc[mt][nt][2 * h], acc[mt][nt + 1][2 * h],
                                       acc[mt][nt][2 * h + 1], acc[mt][nt + 1][2 * h + 1]);
                }
        return;
    }
    const int rows = whole ? N - m0 : PW_SK_BM, cols = whole ? OC - n0 : PW_SK_BN;
    float *dst = whole ? (act ? NULL : out + (size_t)m0 * OC + n0)
                       : ws + ((size_t)tile * parts + part) * SK_TILE;
    const float *b = whole && bias ? bias + n0 : NULL;
    PW_UNROLL
    for (int mt = 0; mt < 2; mt++)
        PW_UNROLL
        for (int nt = 0; nt < 4; nt++)
            PW_UNROLL
            for (int h = 0; h < 2; h++) {
                int r = wm * 32 + mt * 16 + g + 8 * h, lc = wn * 32 + nt * 8 + c2;
                if (r >= rows || lc >= cols) continue; /* OC is even: lc + 1 < cols too */
                float v0 = acc[mt][nt][2 * h] + (b ? b[lc] : 0.0f);
                float v1 = acc[mt][nt][2 * h + 1] + (b ? b[lc + 1] : 0.0f);
                if (dst) {
                    dst[(size_t)r * ld + lc] = v0;
                    dst[(size_t)r * ld + lc + 1] = v1;
                } else { /* one part, GELU's output: lc even, so 4-byte aligned */
                    *(uint32_t *)(act16 + (size_t)(m0 + r) * OC + n0 + lc) = sk_gelu_pair(v0, v1);
                }
            }
    if (whole) return;
    /* the partial stored and made visible device-wide before the block counts itself */
    __threadfence();
    __syncthreads();
    if (tid == 0) {
        last = atomicAdd(counters + tile, 1) == parts - 1;
        if (last) counters[tile] = 0; /* every part has counted: ready for the next launch */
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    /* the tile's parts in part order (sk_sum), 4 columns a thread (this is the product's tail:
     * one block of each tile, a round trip to L2 per position a thread takes, 8 of them) */
    const float *parts0 = ws + (size_t)tile * parts * SK_TILE;
    for (int e = tid * 4; e < SK_TILE; e += PW_SK_THREADS * 4) {
        int row = m0 + e / PW_SK_BN, lc = e % PW_SK_BN, col = n0 + lc;
        if (row >= N) break; /* e only grows: the rows past N are all that is left */
        if (act == PW_SK_SWIGLU) { /* a gate column's thread takes its up too, 8 further */
            int j = n0 / 2 + (lc / 16) * 8 + lc % 8; /* F a multiple of 4: j + 3 < F too */
            if (lc / 8 % 2 || j >= F) continue;
            float4 gs = sk_sum(parts0, parts, e), us = sk_sum(parts0, parts, e + 8);
            uint32_t *a = (uint32_t *)(act16 + (size_t)row * F + j);
            a[0] = sk_swiglu_pair(gs.x, us.x, gs.y, us.y);
            a[1] = sk_swiglu_pair(gs.z, us.z, gs.w, us.w);
            continue;
        }
        if (col >= OC) continue; /* OC is a multiple of 4: col + 3 < OC too */
        float4 s = sk_sum(parts0, parts, e);
        if (bias) {
            s.x += bias[col];
            s.y += bias[col + 1];
            s.z += bias[col + 2];
            s.w += bias[col + 3];
        }
        if (act == PW_SK_GELU) { /* OC a multiple of 4: two 4-byte aligned pairs */
            uint32_t *a = (uint32_t *)(act16 + (size_t)row * OC + col);
            a[0] = sk_gelu_pair(s.x, s.y);
            a[1] = sk_gelu_pair(s.z, s.w);
        } else {
            *(float4 *)(out + (size_t)row * OC + col) = s;
        }
    }
}

#endif
