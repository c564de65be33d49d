/* flash_tc_kernels.cuh: fused causal attention with a key padding mask on the tensor cores, in
 * bfloat16 with float32 accumulation: forward, and backward as two kernels (dq; dk and dv) after
 * a row kernel for D = rowsum(dout * out). What they compute is pw_attention_gqa_forward_bf16 /
 * _backward_bf16 (cpu/attention.c), the model's attention at precision bf16; the layouts are
 * flash_kernels.cuh's (qkv rows of W = (NH + 2 NKV) hs floats, out (B,T,NH hs), lse (B,NH,T)),
 * read and written as float32: the operands are rounded to bfloat16 as they are loaded.
 *
 * Written in the C subset of CUDA like flash_kernels.cuh, so that tests/cuda/test_flash_tc_emu.c
 * runs this very file on the host under tests/cuda/emu.h. Beyond what that file needs from its
 * includer, this one needs pw_mma_bf16 and pw_bf16x2 (mma.cuh on the GPU, emu.h on the host),
 * __shfl_xor_sync of a float and uint16_t / uint32_t.
 *
 * Work split: a block is 4 warps, each warp owns 16 rows (queries in fwd and dq, keys in dkv)
 * and computes 16 x 8 tiles with pw_mma_bf16; its own operand (q, or k and v) stays in A
 * fragments in registers for the whole kernel, the other side goes through shared memory a
 * tile at a time as bfloat16 rows. A row's scores are spread over the 4 lanes of a quad (mma.cuh's
 * D layout), so its max and sum take two __shfl_xor_sync. Probabilities and dS go from the
 * D fragments of one product to the A fragments of the next without leaving registers.
 *  - fwd (grid ceil(T/64) x NH x B): S = q k^T per tile of TC_BK keys, an online softmax
 *    (running max and sum per row), O += P v with P rounded to bfloat16.
 *  - dq (same grid): per tile of TC_BT keys, S and dP = dout v^T again, dS = scale P (dP - D),
 *    dq += dS k.
 *  - dkv (grid ceil(T/64) x NKV x B): warp = 16 keys; over the G query heads of the group and
 *    the queries t >= the block's first key in tiles of TC_BQ, S^T = k q^T and dP^T = v dout^T,
 *    dv += P^T dout and dk += dS^T q. Each gradient element has one writer: no atomics, the
 *    same bits every run.
 * B operands are read from row-major bfloat16 tiles with ldmatrix (mma.cuh's pw_ldsm_x4, four
 * 8 x 8 matrices, two mma's B fragments, a load): plain for B[k][n] = X[n][k] (q k^T-shaped
 * products), transposed for B[k][n] = X[k][n] (P v-shaped ones); rows are TC_LD = hs + 8 halves
 * apart (16-byte aligned, as ldmatrix needs), which puts the 8 rows of each matrix in 8
 * distinct groups of 4 banks: no conflicts. */

#ifndef PW_FLASH_TC_CUH_COMMON
#define PW_FLASH_TC_CUH_COMMON

#define TC_WARPS 4
#define TC_THREADS (TC_WARPS * 32)
#define TC_ROWS (TC_WARPS * 16) /* rows (queries, or keys in dkv) per block */
#define TC_BK 64                /* keys per shared tile in fwd */
/* rows per shared tile in the backward, keys in dq (TC_BT) and queries in dkv (TC_BQ): fewer
 * for larger heads, so that a lane's accumulators (dq, or dk and dv, plus two tiles of scores)
 * stay in registers (dkv_64 with tiles of 64 spilled 72 bytes once its fragments came through
 * ldmatrix; with 32 it spills none at 246 registers) */
#define TC_BT(hs) ((hs) >= 128 ? 32 : 64)
#define TC_BQ(hs) ((hs) >= 64 ? 32 : 64)

/* The rows of a lane in a block of TC_ROWS: r and r + 8 of its warp's 16 */
static __device__ __forceinline__ int tc_row0(int base)
{
    return base + (int)(threadIdx.x / 32) * 16 + (int)(threadIdx.x % 32) / 4;
}

/* x[i] (i < n), or 0 beyond; ok: the row is real */
static __device__ __forceinline__ float tc_at(const float *x, int i, int n, int ok)
{
    return ok && i < n ? x[i] : 0.0f;
}

/* max and sum over the 4 lanes of a quad (the lanes that share a row of a D fragment) */
static __device__ __forceinline__ float tc_quad_max(float x)
{
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

static __device__ __forceinline__ float tc_quad_sum(float x)
{
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/* D = rowsum(dout * out) per query row (B,NH,T) for the backward; 0 at padding queries. One
 * thread a row, an elementwise grid. */
__global__ void pw_flash_tc_drow(float *drow, const float *dout, const float *out,
                                 const int *mask, int B, int T, int NH, int hs)
{
    size_t n = (size_t)B * NH * T;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int t = (int)(i % T), h = (int)(i / T % NH), b = (int)(i / ((size_t)T * NH));
        float d = 0.0f;
        if (!mask || mask[(size_t)b * T + t]) {
            size_t at = ((size_t)b * T + t) * NH * hs + (size_t)h * hs;
            for (int c = 0; c < hs; c++) d += dout[at + c] * out[at + c];
        }
        drow[i] = d;
    }
}

#endif /* PW_FLASH_TC_CUH_COMMON */

#define TC_FN(name) FLASH_CAT(pw_flash_tc_##name, FLASH_HS)
#define TC_LD (FLASH_HS + 8)
#define TC_KS (FLASH_HS / 16) /* k-steps over a head */
#define TC_NS (FLASH_HS / 8)  /* 8-column tiles over a head */
/* a bfloat16 tile of rows TC_LD halves long, declared as 32-bit words (so that its pairs may be
 * read as one aligned 32-bit load) and seen as halves */
#define TC_TILE(name, words) uint16_t(*name)[TC_LD] = (uint16_t(*)[TC_LD])(words)

/* Rows [r0, r0 + n) of a float32 matrix (row stride ld) into a bfloat16 tile, zeros past T,
 * past hs and at padding rows (so that a NaN there never reaches a product); the row flags
 * into okv when given. All TC_THREADS threads, between barriers.
 * Where whole 16-byte groups of 4 floats can be read (hs and ld multiples of 4, src 16-byte
 * aligned: every model's case), a thread issues TC_GROUP such loads before it converts and
 * stores any, so that they are in flight together; one element at a time, each store waited on
 * two dependent global reads (the row's mask, then the value) and the loop on the store, and
 * these kernels ran at 5% of the bf16 GEMM's rate on an H100 (docs/cuda.md, Benchmark).
 * Otherwise one float at a time. */
#define TC_GROUP 4
static __device__ __forceinline__ void TC_FN(load_tile)(uint16_t (*dst)[TC_LD], int *okv,
                                                        const float *src, size_t ld, int r0,
                                                        int n, int T, const int *m, int hs)
{
    if (hs % 4 == 0 && ld % 4 == 0 && ((uintptr_t)src & 15) == 0) {
        const int per_row = FLASH_HS / 4, nch = n * per_row;
        for (int base = 0; base < nch; base += TC_GROUP * TC_THREADS) {
            float4 v[TC_GROUP];
            PW_UNROLL
            for (int k = 0; k < TC_GROUP; k++) {
                int i = base + k * TC_THREADS + (int)threadIdx.x;
                int j = i / per_row, d = i % per_row * 4, r = r0 + j;
                if (i < nch && r < T && d < hs && flash_real(m, r))
                    v[k] = *(const float4 *)(src + (size_t)r * ld + d);
                else
                    v[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            PW_UNROLL
            for (int k = 0; k < TC_GROUP; k++) {
                int i = base + k * TC_THREADS + (int)threadIdx.x;
                if (i < nch) {
                    uint32_t *w = (uint32_t *)&dst[i / per_row][i % per_row * 4];
                    w[0] = pw_bf16x2(v[k].x, v[k].y);
                    w[1] = pw_bf16x2(v[k].z, v[k].w);
                }
            }
        }
    } else {
        for (int i = threadIdx.x; i < n * FLASH_HS; i += TC_THREADS) {
            int j = i / FLASH_HS, d = i % FLASH_HS, r = r0 + j;
            int ok = r < T && d < hs && flash_real(m, r);
            dst[j][d] = pw_bf16_bits(ok ? src[(size_t)r * ld + d] : 0.0f);
        }
    }
    for (int j = threadIdx.x; okv && j < n; j += TC_THREADS)
        okv[j] = r0 + j < T && flash_real(m, r0 + j);
}
#undef TC_GROUP

/* A fragments of a warp's 16 rows (row0, row0 + 8 for this lane) of a float32 matrix (row
 * stride ld), over the whole head, rounded; zero rows where not ok0 / ok8 */
static __device__ __forceinline__ void TC_FN(load_a)(uint32_t a[TC_KS][4], const float *x,
                                                     size_t ld, int row0, int ok0, int ok8,
                                                     int hs)
{
    int c = (int)(threadIdx.x % 32) % 4;
    const float *x0 = x + (size_t)row0 * ld, *x8 = x0 + 8 * ld;
    PW_UNROLL
    for (int kk = 0; kk < TC_KS; kk++) {
        int d = kk * 16 + 2 * c;
        a[kk][0] = pw_bf16x2(tc_at(x0, d, hs, ok0), tc_at(x0, d + 1, hs, ok0));
        a[kk][1] = pw_bf16x2(tc_at(x8, d, hs, ok8), tc_at(x8, d + 1, hs, ok8));
        a[kk][2] = pw_bf16x2(tc_at(x0, d + 8, hs, ok0), tc_at(x0, d + 9, hs, ok0));
        a[kk][3] = pw_bf16x2(tc_at(x8, d + 8, hs, ok8), tc_at(x8, d + 9, hs, ok8));
    }
}

/* s[n] (16 x 8 tile n of nt) = A . X^T for the rows n*8.. of a bfloat16 tile X: each row of X is
 * a column of B. One pw_ldsm_x4 brings the B fragments of two k-steps: lane l names row
 * n*8 + l % 8 at column (kk + l / 16) * 16 + (l / 8 % 2) * 8 (TC_KS is even in every bucket). */
#define TC_MMA_ABT(s, nt, a, X)                                                                  \
    do {                                                                                         \
        int l_ = (int)(threadIdx.x % 32);                                                        \
        PW_UNROLL                                                                                \
        for (int n_ = 0; n_ < (nt); n_++) {                                                      \
            s[n_][0] = s[n_][1] = s[n_][2] = s[n_][3] = 0.0f;                                    \
            PW_UNROLL                                                                            \
            for (int kk_ = 0; kk_ < TC_KS; kk_ += 2) {                                           \
                uint32_t b_[4];                                                                  \
                pw_ldsm_x4(b_, &X[n_ * 8 + (l_ & 7)][(kk_ + (l_ >> 4)) * 16 + (l_ >> 3 & 1) * 8]); \
                pw_mma_bf16(s[n_], a[kk_], b_);                                                  \
                pw_mma_bf16(s[n_], a[kk_ + 1], b_ + 2);                                          \
            }                                                                                    \
        }                                                                                        \
    } while (0)

/* acc[n] (the head's TC_NS tiles) += P . X, P the A fragments of tiles p[2kk], p[2kk+1] (16
 * rows x nk columns of D fragments, rounded here), X a bfloat16 tile of nk rows. One
 * pw_ldsm_x4_t brings the B fragments of two column tiles: lane l names row kk*16 + (l / 8 %
 * 2) * 8 + l % 8 at column (n + l / 16) * 8 (TC_NS is even in every bucket). */
#define TC_MMA_PX(acc, p, nk, X)                                                                 \
    do {                                                                                         \
        int l_ = (int)(threadIdx.x % 32), r_ = (l_ >> 3 & 1) * 8 + (l_ & 7);                     \
        PW_UNROLL                                                                                \
        for (int kk_ = 0; kk_ < (nk) / 16; kk_++) {                                              \
            uint32_t a_[4];                                                                      \
            a_[0] = pw_bf16x2(p[2 * kk_][0], p[2 * kk_][1]);                                     \
            a_[1] = pw_bf16x2(p[2 * kk_][2], p[2 * kk_][3]);                                     \
            a_[2] = pw_bf16x2(p[2 * kk_ + 1][0], p[2 * kk_ + 1][1]);                             \
            a_[3] = pw_bf16x2(p[2 * kk_ + 1][2], p[2 * kk_ + 1][3]);                             \
            PW_UNROLL                                                                            \
            for (int n_ = 0; n_ < TC_NS; n_ += 2) {                                              \
                uint32_t b_[4];                                                                  \
                pw_ldsm_x4_t(b_, &X[kk_ * 16 + r_][(n_ + (l_ >> 4)) * 8]);                       \
                pw_mma_bf16(acc[n_], a_, b_);                                                    \
                pw_mma_bf16(acc[n_ + 1], a_, b_ + 2);                                            \
            }                                                                                    \
        }                                                                                        \
    } while (0)

/* acc (16 rows of the head, D fragments) into float32 rows of y (row stride ld), added or
 * stored, times mul; rows where not ok0 / ok8 and columns past hs untouched */
static __device__ __forceinline__ void TC_FN(store_rows)(float *y, size_t ld, int row0, int ok0,
                                                         int ok8, float acc[TC_NS][4],
                                                         float mul0, float mul8, int add,
                                                         int hs)
{
    int c = (int)(threadIdx.x % 32) % 4;
    float *y0 = y + (size_t)row0 * ld, *y8 = y0 + 8 * ld;
    PW_UNROLL
    for (int n = 0; n < TC_NS; n++)
        PW_UNROLL
        for (int i = 0; i < 4; i++) {
            int d = n * 8 + 2 * c + (i & 1), ok = i < 2 ? ok0 : ok8;
            float *yy = i < 2 ? y0 : y8;
            float v = acc[n][i] * (i < 2 ? mul0 : mul8);
            if (ok && d < hs) yy[d] = add ? yy[d] + v : v;
        }
}

__global__ void __launch_bounds__(TC_THREADS)
    TC_FN(fwd)(float *out, float *lse, const float *qkv, const int *mask, int T, int NH, int NKV,
               int hs, float scale)
{
    __shared__ __align__(16) uint32_t ks_[TC_BK][TC_LD / 2], vs_[TC_BK][TC_LD / 2];
    __shared__ int km[TC_BK];
    TC_TILE(ks, ks_);
    TC_TILE(vs, vs_);
    int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * TC_ROWS, c = (int)(threadIdx.x % 32) % 4;
    FlashHead f = flash_head(qkv, b, h, T, NH, NKV, hs);
    const int *m = mask ? mask + (size_t)b * T : 0;
    int r0 = tc_row0(q0), r8 = r0 + 8;
    int ok0 = r0 < T && flash_real(m, r0), ok8 = r8 < T && flash_real(m, r8);
    uint32_t qa[TC_KS][4];
    TC_FN(load_a)(qa, f.q, (size_t)f.W, r0, ok0, ok8, hs);

    float o[TC_NS][4];
    PW_UNROLL
    for (int n = 0; n < TC_NS; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    /* running max and this lane's part of the running sum, rows r0 and r8 */
    float mx0 = -INFINITY, mx8 = -INFINITY, l0 = 0.0f, l8 = 0.0f;
    int kend = q0 + TC_ROWS < T ? q0 + TC_ROWS : T;
    for (int k0 = 0; k0 < kend; k0 += TC_BK) {
        TC_FN(load_tile)(ks, km, f.k, (size_t)f.W, k0, TC_BK, T, m, hs);
        TC_FN(load_tile)(vs, 0, f.v, (size_t)f.W, k0, TC_BK, T, m, hs);
        __syncthreads();
        float s[TC_BK / 8][4];
        TC_MMA_ABT(s, TC_BK / 8, qa, ks);
        float t0 = -INFINITY, t8 = -INFINITY;
        PW_UNROLL
        for (int n = 0; n < TC_BK / 8; n++)
            PW_UNROLL
            for (int i = 0; i < 4; i++) {
                int j = n * 8 + 2 * c + (i & 1), key = k0 + j, row = i < 2 ? r0 : r8;
                float x = key <= row && km[j] ? s[n][i] * scale : -INFINITY;
                s[n][i] = x;
                if (i < 2) t0 = fmaxf(t0, x);
                else t8 = fmaxf(t8, x);
            }
        t0 = fmaxf(mx0, tc_quad_max(t0));
        t8 = fmaxf(mx8, tc_quad_max(t8));
        /* a row with no real key yet keeps max -inf: measure from 0 (every p is 0 then) */
        float ref0 = t0 == -INFINITY ? 0.0f : t0, ref8 = t8 == -INFINITY ? 0.0f : t8;
        float c0 = expf(mx0 - ref0), c8 = expf(mx8 - ref8);
        l0 *= c0;
        l8 *= c8;
        PW_UNROLL
        for (int n = 0; n < TC_NS; n++) {
            o[n][0] *= c0;
            o[n][1] *= c0;
            o[n][2] *= c8;
            o[n][3] *= c8;
        }
        PW_UNROLL
        for (int n = 0; n < TC_BK / 8; n++)
            PW_UNROLL
            for (int i = 0; i < 4; i++) {
                float p = expf(s[n][i] - (i < 2 ? ref0 : ref8));
                s[n][i] = p;
                if (i < 2) l0 += p;
                else l8 += p;
            }
        TC_MMA_PX(o, s, TC_BK, vs);
        mx0 = t0;
        mx8 = t8;
        __syncthreads();
    }
    l0 = tc_quad_sum(l0);
    l8 = tc_quad_sum(l8);
    /* l >= 1 at a real query (its own key is real and at the max or below it) */
    float *ob = out + (size_t)b * T * NH * hs + (size_t)h * hs;
    size_t ld = (size_t)NH * hs;
    TC_FN(store_rows)(ob, ld, r0, r0 < T, r8 < T, o, ok0 ? 1.0f / l0 : 0.0f,
                      ok8 ? 1.0f / l8 : 0.0f, 0, hs);
    float *lb = lse + ((size_t)b * NH + h) * T;
    if (c == 0 && r0 < T) lb[r0] = ok0 ? mx0 + logf(l0) : 0.0f;
    if (c == 0 && r8 < T) lb[r8] = ok8 ? mx8 + logf(l8) : 0.0f;
}

__global__ void __launch_bounds__(TC_THREADS)
    TC_FN(dq)(float *dqkv, const float *drow, const float *dout, const float *qkv,
              const float *lse, const int *mask, int T, int NH, int NKV, int hs, float scale)
{
    const int BK = TC_BT(FLASH_HS);
    __shared__ __align__(16) uint32_t ks_[TC_BT(FLASH_HS)][TC_LD / 2],
        vs_[TC_BT(FLASH_HS)][TC_LD / 2];
    __shared__ int km[TC_BT(FLASH_HS)];
    TC_TILE(ks, ks_);
    TC_TILE(vs, vs_);
    int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * TC_ROWS, c = (int)(threadIdx.x % 32) % 4;
    FlashHead f = flash_head(qkv, b, h, T, NH, NKV, hs);
    const int *m = mask ? mask + (size_t)b * T : 0;
    int r0 = tc_row0(q0), r8 = r0 + 8;
    int ok0 = r0 < T && flash_real(m, r0), ok8 = r8 < T && flash_real(m, r8);
    size_t ld = (size_t)NH * hs, row = ((size_t)b * NH + h) * T;
    const float *dO = dout + (size_t)b * T * ld + (size_t)h * hs;
    uint32_t qa[TC_KS][4], da[TC_KS][4];
    TC_FN(load_a)(qa, f.q, (size_t)f.W, r0, ok0, ok8, hs);
    TC_FN(load_a)(da, dO, ld, r0, ok0, ok8, hs);
    float L0 = ok0 ? lse[row + r0] : 0.0f, L8 = ok8 ? lse[row + r8] : 0.0f;
    float D0 = ok0 ? drow[row + r0] : 0.0f, D8 = ok8 ? drow[row + r8] : 0.0f;

    float dq[TC_NS][4];
    PW_UNROLL
    for (int n = 0; n < TC_NS; n++) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;
    int kend = q0 + TC_ROWS < T ? q0 + TC_ROWS : T;
    for (int k0 = 0; k0 < kend; k0 += BK) {
        TC_FN(load_tile)(ks, km, f.k, (size_t)f.W, k0, BK, T, m, hs);
        TC_FN(load_tile)(vs, 0, f.v, (size_t)f.W, k0, BK, T, m, hs);
        __syncthreads();
        float s[TC_BT(FLASH_HS) / 8][4], dp[TC_BT(FLASH_HS) / 8][4];
        TC_MMA_ABT(s, BK / 8, qa, ks);
        TC_MMA_ABT(dp, BK / 8, da, vs);
        PW_UNROLL
        for (int n = 0; n < BK / 8; n++)
            PW_UNROLL
            for (int i = 0; i < 4; i++) {
                int j = n * 8 + 2 * c + (i & 1), key = k0 + j, lo = i < 2;
                int ok = (lo ? ok0 : ok8) && key <= (lo ? r0 : r8) && km[j];
                float p = ok ? expf(s[n][i] * scale - (lo ? L0 : L8)) : 0.0f;
                s[n][i] = scale * p * (dp[n][i] - (lo ? D0 : D8));
            }
        TC_MMA_PX(dq, s, BK, ks);
        __syncthreads();
    }
    float *g = dqkv + (f.q - qkv);
    TC_FN(store_rows)(g, (size_t)f.W, r0, ok0, ok8, dq, 1.0f, 1.0f, 1, hs);
}

__global__ void __launch_bounds__(TC_THREADS)
    TC_FN(dkv)(float *dqkv, const float *drow, const float *dout, const float *qkv,
               const float *lse, const int *mask, int T, int NH, int NKV, int hs, float scale)
{
    const int BQ = TC_BQ(FLASH_HS);
    __shared__ __align__(16) uint32_t qs_[TC_BQ(FLASH_HS)][TC_LD / 2],
        os_[TC_BQ(FLASH_HS)][TC_LD / 2];
    __shared__ float Ls[TC_BQ(FLASH_HS)], Ds[TC_BQ(FLASH_HS)];
    __shared__ int qm[TC_BQ(FLASH_HS)];
    TC_TILE(qs, qs_);
    TC_TILE(os, os_);
    int b = blockIdx.z, kv = blockIdx.y, G = NH / NKV, k0 = blockIdx.x * TC_ROWS;
    int c = (int)(threadIdx.x % 32) % 4;
    const int *m = mask ? mask + (size_t)b * T : 0;
    int s0 = tc_row0(k0), s8 = s0 + 8;
    int ok0 = s0 < T && flash_real(m, s0), ok8 = s8 < T && flash_real(m, s8);
    FlashHead f0 = flash_head(qkv, b, kv * G, T, NH, NKV, hs);
    uint32_t ka[TC_KS][4], va[TC_KS][4];
    TC_FN(load_a)(ka, f0.k, (size_t)f0.W, s0, ok0, ok8, hs);
    TC_FN(load_a)(va, f0.v, (size_t)f0.W, s0, ok0, ok8, hs);
    float dk[TC_NS][4], dv[TC_NS][4];
    PW_UNROLL
    for (int n = 0; n < TC_NS; n++)
        PW_UNROLL
        for (int i = 0; i < 4; i++) dk[n][i] = dv[n][i] = 0.0f;

    size_t ld = (size_t)NH * hs;
    for (int jh = 0; jh < G; jh++) {
        int h = kv * G + jh;
        FlashHead f = flash_head(qkv, b, h, T, NH, NKV, hs);
        const float *dO = dout + (size_t)b * T * ld + (size_t)h * hs;
        size_t row = ((size_t)b * NH + h) * T;
        for (int t0 = k0; t0 < T; t0 += BQ) {
            __syncthreads(); /* everyone is done with the previous tile */
            TC_FN(load_tile)(qs, qm, f.q, (size_t)f.W, t0, BQ, T, m, hs);
            TC_FN(load_tile)(os, 0, dO, ld, t0, BQ, T, m, hs);
            for (int j = threadIdx.x; j < BQ; j += TC_THREADS) {
                int t = t0 + j, ok = t < T && flash_real(m, t);
                Ls[j] = ok ? lse[row + t] : 0.0f;
                Ds[j] = ok ? drow[row + t] : 0.0f;
            }
            __syncthreads();
            float s[TC_BQ(FLASH_HS) / 8][4], dp[TC_BQ(FLASH_HS) / 8][4];
            TC_MMA_ABT(s, BQ / 8, ka, qs);
            TC_MMA_ABT(dp, BQ / 8, va, os);
            PW_UNROLL
            for (int n = 0; n < BQ / 8; n++)
                PW_UNROLL
                for (int i = 0; i < 4; i++) {
                    int j = n * 8 + 2 * c + (i & 1), t = t0 + j, lo = i < 2;
                    int ok = (lo ? ok0 : ok8) && t >= (lo ? s0 : s8) && qm[j];
                    float p = ok ? expf(s[n][i] * scale - Ls[j]) : 0.0f;
                    s[n][i] = p;
                    dp[n][i] = scale * p * (dp[n][i] - Ds[j]);
                }
            TC_MMA_PX(dv, s, BQ, os);
            TC_MMA_PX(dk, dp, BQ, qs);
        }
    }
    TC_FN(store_rows)(dqkv + (f0.k - qkv), (size_t)f0.W, s0, ok0, ok8, dk, 1.0f, 1.0f, 1, hs);
    TC_FN(store_rows)(dqkv + (f0.v - qkv), (size_t)f0.W, s0, ok0, ok8, dv, 1.0f, 1.0f, 1, hs);
}

#undef TC_FN
#undef TC_LD
#undef TC_KS
#undef TC_NS
#undef TC_TILE
