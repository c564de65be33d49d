/* flash_tc_kernels.cuh: fused causal attention with a key padding mask on the tensor cores, in
 * bfloat16 with float32 accumulation: forward, and backward as two kernels (dq; dk and dv) after
 * a row kernel that makes D = rowsum(dout * out) and dout in bfloat16. What they compute is
 * pw_attention_gqa_forward_bf16 / _backward_bf16 (cpu/attention.c), the model's attention at
 * precision bf16. q, k and v come in bfloat16 (the model keeps them so for the backward anyway),
 * in flash_kernels.cuh's layout (qkv rows of W = (NH + 2 NKV) hs, out (B,T,NH hs), lse
 * (B,NH,T)); out, lse and dqkv are float32. The backward SETS dqkv: every element of a row
 * before T has one writer (padding rows get zeros), so the caller needs no memset first.
 *
 * Written in the C subset of CUDA like flash_kernels.cuh, so that tests/cuda/test_flash_tc_emu.c
 * runs this very file on the host under tests/cuda/emu.h. Beyond what that file needs from its
 * includer, this one needs mma.cuh's and cp_async.cuh's functions (emu.h's on the host),
 * __syncthreads_or, __shfl_xor_sync of a float and uint16_t / uint32_t.
 *
 * dkvq (a build of dkv's body, not the default: pw_cuda_set_flash_fused_bwd) makes dq in the
 * same pass, FlashAttention-2's way: each tile's dS^T goes through shared memory, dS . K is
 * added atomically into a float32 dq that pw_flash_tc_dq_store writes out; 5 products a tile
 * pair where dq's kernel and dkv's make 7, for atomics and their order.
 *
 * Work split: a block is 4 warps, each warp owns 16 rows (queries in fwd and dq, keys in dkv;
 * TC_FWD_MT row tiles of 16 in fwd) and computes 16 x 8 tiles with pw_mma_bf16; its own
 * operand (q, or k and v) stays in A fragments in registers for the whole kernel, the other
 * side goes through shared memory a tile at a time. A row's scores are spread over the 4 lanes
 * of a quad (mma.cuh's D layout), so its max and sum take two __shfl_xor_sync. Probabilities
 * and dS go from the D fragments of one product to the A fragments of the next without
 * leaving registers.
 *  - fwd (grid ceil(T/TC_FWD_ROWS) x NH x B): S = q k^T per tile of TC_BT keys, an online
 *    softmax (running max and sum per row), O += P v with P rounded to bfloat16.
 *  - dq (grid ceil(T/64) x NH x B): per tile of TC_BT keys, S and dP = dout v^T again,
 *    dS = scale P (dP - D), dq += dS k.
 *  - dkv (grid ceil(T/64) x NKV x B): warp = 16 keys; over the G query heads of the group and
 *    the queries t >= the block's first key in tiles of TC_BT, S^T = k q^T and dP^T = v dout^T,
 *    dv += P^T dout and dk += dS^T q.
 * fwd and dq take their query blocks last first (the causal mask gives the last the most keys:
 * started first, they leave the short ones for the grid's tail).
 *
 * Tiles: two buffers of each, the next tile's copies (cp_async.cuh, 16 bytes a thread at a
 * time) in flight while the warps compute on the current one; one barrier once it has landed,
 * one after the products. A tile's rows come with their mask flags; where one is padding (NaN
 * may live there, and 0 * NaN is NaN), those rows are zeroed in shared memory after a second
 * barrier. A tile wholly below the diagonal for a warp, without padding and inside T, skips the
 * per-element mask: the mask is one branch a tile around selects, never a branch an element
 * (which cost the forward 7 instructions an element on unmasked tiles too, sm_90 SASS). The
 * exponentials are exp2 of one FFMA (TC_LOG2E), and the forward rescales its running sums and
 * outputs only when a row max of the warp moved (a vote); dk/dv selects padding keys away only
 * in a warp that has one (a vote before the loop). The copies' shared addresses are made once
 * a tile (pw_smem) and moved by constants. bench/bench_sass.py counts what a tile issues
 * besides its products. B operands are read with ldmatrix (mma.cuh's pw_ldsm_x4, four 8 x 8
 * matrices, two mma's B fragments, a load): plain for B[k][n] = X[n][k] (q k^T-shaped
 * products), transposed for B[k][n] = X[k][n] (P v-shaped ones); rows are TC_LD = hs + 8 halves
 * apart (16-byte aligned, as ldmatrix and cp.async need), which puts the 8 rows of each matrix
 * in 8 distinct groups of 4 banks: no conflicts. Each gradient element has one writer: no
 * atomics, the same bits every run. */

#ifndef PW_FLASH_TC_CUH_COMMON
#define PW_FLASH_TC_CUH_COMMON

#define TC_WARPS 4
#define TC_THREADS (TC_WARPS * 32)
#define TC_ROWS (TC_WARPS * 16) /* rows (queries, or keys in dkv) per block */
/* rows per shared tile, keys in fwd and dq and queries in dkv: 64, or 32 for heads of 128, so
 * that two buffers of two tiles stay under 48 KiB of static shared memory and a lane's
 * accumulators (o or dq, or dk and dv, plus the tiles of scores) stay in registers. ptxas,
 * sm_90: with tiles of 64, fwd_64 (two row tiles) takes 255 registers and dkv_64 255 with 8
 * bytes spilled off its loop's fast path, two blocks an SM as with tiles of 32 (222, 236),
 * for 13% to 18% fewer instructions a product (bench/bench_sass.py: 5.14, 5.02 and 4.80 in
 * fwd, dq and dkv against 6.28, 5.77 and 5.80: a tile's barriers, copy setup and vote serve
 * twice the products; dq_64 gives up its third block an SM for it); before the loop was
 * made lean (one mask branch a tile) the same tiles spilled 32 and 72 bytes. A build may set
 * its own (TC_TILE_ROWS: flash_tc.cuh's three-block build keeps 32). */
#define TC_TILE(hs) ((hs) >= 128 ? 32 : 64)
/* Row tiles of 16 a warp holds in the forward: two for heads up to 64, so that each B fragment
 * a warp loads from shared memory serves two products instead of one (the loads per product
 * halve; FlashAttention-2's forward holds 32 rows a warp the same way), one for 128, where the
 * output's accumulators alone take 128 registers. dq and dk/dv hold one (their two score tiles
 * and two accumulators fill the registers already). */
#define TC_FWD_MT(hs) ((hs) >= 128 ? 1 : 2)
#define TC_FWD_ROWS(hs) (TC_ROWS * TC_FWD_MT(hs)) /* queries per forward block */

/* log2(e): the kernels take exp(scale x - m) as exp2(x scale log2(e) - m log2(e)), one FFMA
 * and one MUFU.EX2 an element, with scale log2(e) made once (FlashAttention's habit) */
#define TC_LOG2E 1.4426950408889634f

/* The rows of a lane in row tile mt of a block whose warps hold mt_n tiles each: r and r + 8 of
 * the tile's 16 (a warp's tiles are consecutive) */
static __device__ __forceinline__ int tc_row0(int base, int mt, int mt_n)
{
    return base + ((int)(threadIdx.x / 32) * mt_n + mt) * 16 + (int)(threadIdx.x % 32) / 4;
}

/* The first row of a query block of fwd and dq (rows a block): the last block first */
static __device__ __forceinline__ int tc_query_block(int rows)
{
    return (int)(gridDim.x - 1 - blockIdx.x) * rows;
}

/* Whether a bfloat16 matrix can be copied in 16-byte groups: hs a multiple of 8 (so are the
 * row strides and every head's start), the base 16-byte aligned */
static __device__ __forceinline__ int tc_vec(const uint16_t *x, int hs)
{
    return hs % 8 == 0 && ((uintptr_t)x & 15) == 0;
}

/* x[d] and x[d + 1] as an A register pair (the first in the low half), zeros past hs or where
 * the row is not ok */
static __device__ __forceinline__ uint32_t tc_pair(const uint16_t *x, int d, int hs, int ok)
{
    uint32_t lo = ok && d < hs ? x[d] : 0u, hi = ok && d + 1 < hs ? x[d + 1] : 0u;
    return lo | hi << 16;
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

/* p[0] += a and p[1] += b, each atomically (p 8-byte aligned): one 8-byte reduction where the
 * GPU has it (sm_90's vector atomicAdd on global memory), else two; the fused backward's sums
 * into dq take half the instructions and transactions so */
static __device__ __forceinline__ void tc_atomic_add2(float *p, float a, float b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd((float2 *)p, make_float2(a, b));
#else
    atomicAdd(p, a);
    atomicAdd(p + 1, b);
#endif
}

/* Issue the copies of n values of a row vector from r0 on (4 bytes each: mask flags, lse or D)
 * into dst, zeros past T; src NULL: 1 before T (no mask). Thread i takes i, i + TC_THREADS, ...,
 * the entries tc_padded reads back. */
static __device__ __forceinline__ void tc_issue_row4(void *dst, const void *src, int r0, int n,
                                                     int T)
{
    for (int j = threadIdx.x; j < n; j += TC_THREADS) {
        int r = r0 + j;
        if (src)
            pw_cp_async4((int *)dst + j, (const int *)src + (r < T ? r : 0), r < T ? 4 : 0);
        else
            ((int *)dst)[j] = r < T;
    }
}

/* Whether a row before T of a landed tile is padding (its flag 0), asked of the whole block: a
 * barrier. Each thread reads back the flags it copied itself (tc_issue_row4), which its own
 * wait has made visible to it. */
static __device__ __forceinline__ int tc_padded(const int *ok, int r0, int n, int T)
{
    int pad = 0;
    for (int j = threadIdx.x; j < n; j += TC_THREADS) pad |= r0 + j < T && !ok[j];
    return __syncthreads_or(pad);
}

/* Where fwd and dq copy their key tiles from: a head's keys and values (row stride ld), the
 * sequence's mask row (NULL: none), T, the head size, whether 16-byte copies apply (tc_vec) */
typedef struct TcKv {
    const uint16_t *k, *v;
    size_t ld;
    const int *m;
    int T, hs, vec;
} TcKv;

/* The backward's first kernel, over query rows (B,NH,T), one warp a row (PW_ROW_WARPS rows to a
 * block): D = rowsum(dout * out) from the float32 dout and the forward's output in bfloat16
 * (out16, as flash-attention keeps it) into drow, and dout rounded to bfloat16 into dout16
 * (dout's layout (B,T,NH hs)) for the products; zeros in both at padding queries. */
__global__ void pw_flash_tc_prep(float *drow, uint16_t *dout16, const float *dout,
                                 const uint16_t *out16, const int *mask, int B, int T, int NH,
                                 int hs)
{
    size_t rows = (size_t)B * NH * T;
    size_t i = (size_t)blockIdx.x * PW_ROW_WARPS + threadIdx.x / 32;
    if (i >= rows) return; /* the whole warp */
    int lane = (int)(threadIdx.x % 32);
    int t = (int)(i % T), h = (int)(i / T % NH), b = (int)(i / ((size_t)T * NH));
    int real = !mask || mask[(size_t)b * T + t];
    size_t at = ((size_t)b * T + t) * NH * hs + (size_t)h * hs;
    float d = 0.0f;
    for (int c = lane; c < hs; c += 32) {
        float g = real ? dout[at + c] : 0.0f;
        if (real) d += g * pw_bf16_float(out16[at + c]);
        dout16[at + c] = pw_bf16_bits(g);
    }
    PW_UNROLL
    for (int o = 16; o > 0; o /= 2) d += __shfl_xor_sync(0xffffffffu, d, o);
    if (lane == 0) drow[i] = d;
}

/* After dkvq (the backward with dq fused): dq, summed into dq32 ((B,T,NH,hs) floats), into the
 * q part of dqkv (float32) or of dqkv16 (rounded to bfloat16), one element a thread: every q
 * element of a row before T set, as dq's kernel sets it (padding queries' sums are zeros: each
 * of their dS was) */
__global__ void pw_flash_tc_dq_store(float *dqkv, uint16_t *dqkv16, const float *dq32, int B,
                                     int T, int NH, int NKV, int hs)
{
    size_t n = (size_t)B * T * NH * hs, i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    size_t r = i / hs, bt = r / NH;
    size_t at = bt * (size_t)(NH + 2 * NKV) * hs + (r % NH) * hs + i % hs; /* flash_at's q */
    if (dqkv) dqkv[at] = dq32[i];
    if (dqkv16) dqkv16[at] = pw_bf16_bits(dq32[i]);
}

#endif /* PW_FLASH_TC_CUH_COMMON */

/* FLASH_TAG names the build (FLASH_HS, or a variant of it: flash_tc.cuh); TC_MIN_BLOCKS, where
 * defined, the blocks an SM it is built for (__launch_bounds__'s second figure; left out,
 * ptxas weighs registers against occupancy itself, and a 1 there is not the same: it gave
 * fwd_128 228 registers where ptxas alone chose 168) */
#define TC_FN(name) FLASH_CAT(pw_flash_tc_##name, FLASH_TAG)
#ifdef TC_TILE_ROWS
#define TC_BT TC_TILE_ROWS /* this build's tile rows */
#else
#define TC_BT TC_TILE(FLASH_HS)
#endif
#ifdef TC_MIN_BLOCKS
#define TC_BOUNDS __launch_bounds__(TC_THREADS, TC_MIN_BLOCKS)
#else
#define TC_BOUNDS __launch_bounds__(TC_THREADS)
#endif
#define TC_LD (FLASH_HS + 8)
#define TC_KS (FLASH_HS / 16) /* k-steps over a head */
#define TC_NS (FLASH_HS / 8)  /* 8-column tiles over a head */

/* Issue the copies of rows [r0, r0 + n) of a bfloat16 matrix (row stride ld) into a tile, zeros
 * past T and past hs: with vec (tc_vec), 16-byte groups through pw_cp_async16, else one half at
 * a time with plain loads and stores (heads that are not a multiple of 8). Padding rows come
 * as they are (TC_FN(scrub) zeroes them once landed). All TC_THREADS threads. */
static __device__ __forceinline__ void TC_FN(issue_tile)(uint16_t (*dst)[TC_LD],
                                                         const uint16_t *src, size_t ld, int r0,
                                                         int n, int T, int hs, int vec)
{
    if (vec) {
        /* n is a constant at every call: the trip count is known and the loop unrolled (a
         * generic one cost three times the instructions a copy, sm_90 SASS); a thread's column
         * is the same at every step (per_row divides TC_THREADS), its rows step apart, and
         * both addresses move by a constant: a copy is a bound test, two selects and the add */
        const int per_row = FLASH_HS / 8, chunks = n * per_row, step = TC_THREADS / per_row;
        int j0 = (int)threadIdx.x / per_row, d = (int)threadIdx.x % per_row * 8, okd = d < hs;
        pw_smem_t to = pw_smem(&dst[j0][d]);
        const uint16_t *from = src + (size_t)(r0 + j0) * ld + d;
        size_t stride = (size_t)step * ld;
        PW_UNROLL
        for (int u = 0; u * step * per_row < chunks; u++) {
            int j = j0 + u * step, ok = okd && r0 + j < T;
            if (chunks % TC_THREADS != 0 && j >= n) break;
            pw_cp_async16(to + (pw_smem_t)(u * step * TC_LD * 2), ok ? from : src,
                          ok ? 16 : 0);
            from += stride;
        }
    } else {
        for (int i = threadIdx.x; i < n * FLASH_HS; i += TC_THREADS) {
            int j = i / FLASH_HS, d = i % FLASH_HS, r = r0 + j;
            dst[j][d] = r < T && d < hs ? src[(size_t)r * ld + d] : (uint16_t)0;
        }
    }
}

/* After tc_padded found padding: zeros into the rows of tiles a and b whose flag is 0 (rows past
 * T are zeros already), so that a NaN there never meets a zero probability in a product; a
 * barrier after. */
static __device__ __forceinline__ void TC_FN(scrub)(uint16_t (*a)[TC_LD], uint16_t (*b)[TC_LD],
                                                    const int *ok, int n)
{
    const int per_row = FLASH_HS / 2;
    for (int i = threadIdx.x; i < n * per_row; i += TC_THREADS) {
        int j = i / per_row, d = i % per_row * 2;
        if (!ok[j]) {
            *(uint32_t *)&a[j][d] = 0u;
            *(uint32_t *)&b[j][d] = 0u;
        }
    }
    __syncthreads();
}

/* A tile pair has landed in this thread (its wait done): the barrier that makes it the block's,
 * and its padding rows zeroed; whether there were any */
static __device__ __forceinline__ int TC_FN(land)(uint16_t (*a)[TC_LD], uint16_t (*b)[TC_LD],
                                                  const int *ok, int r0, int n, int T)
{
    int pad = tc_padded(ok, r0, n, T);
    if (pad) TC_FN(scrub)(a, b, ok, n);
    return pad;
}

/* A fragments of a warp's 16 rows (row0, row0 + 8 for this lane) of a bfloat16 matrix (row
 * stride ld), over the whole head; zero rows where not ok0 / ok8 */
static __device__ __forceinline__ void TC_FN(load_a)(uint32_t a[TC_KS][4], const uint16_t *x,
                                                     size_t ld, int row0, int ok0, int ok8,
                                                     int hs)
{
    int c = (int)(threadIdx.x % 32) % 4;
    const uint16_t *x0 = x + (size_t)row0 * ld, *x8 = x0 + 8 * ld;
    PW_UNROLL
    for (int kk = 0; kk < TC_KS; kk++) {
        int d = kk * 16 + 2 * c;
        a[kk][0] = tc_pair(x0, d, hs, ok0);
        a[kk][1] = tc_pair(x8, d, hs, ok8);
        a[kk][2] = tc_pair(x0, d + 8, hs, ok0);
        a[kk][3] = tc_pair(x8, d + 8, hs, ok8);
    }
}

/* s[mt][n] (16 x 8 tile n of nt, for each of the warp's MT row tiles) = A[mt] . X^T for the rows
 * n*8.. of a bfloat16 tile X: each row of X is a column of B. One pw_ldsm_x4 brings the B
 * fragments of two k-steps, which every row tile uses: lane l names row n*8 + l % 8 at column
 * (kk + l / 16) * 16 + (l / 8 % 2) * 8 (TC_KS is even in every bucket). */
#define TC_MMA_ABT(s, nt, a, X, MT)                                                              \
    do {                                                                                         \
        int l_ = (int)(threadIdx.x % 32);                                                        \
        PW_UNROLL                                                                                \
        for (int n_ = 0; n_ < (nt); n_++) {                                                      \
            PW_UNROLL                                                                            \
            for (int m_ = 0; m_ < (MT); m_++)                                                    \
                s[m_][n_][0] = s[m_][n_][1] = s[m_][n_][2] = s[m_][n_][3] = 0.0f;                \
            PW_UNROLL                                                                            \
            for (int kk_ = 0; kk_ < TC_KS; kk_ += 2) {                                           \
                uint32_t b_[4];                                                                  \
                pw_ldsm_x4(b_, &X[n_ * 8 + (l_ & 7)][(kk_ + (l_ >> 4)) * 16 + (l_ >> 3 & 1) * 8]); \
                PW_UNROLL                                                                        \
                for (int m_ = 0; m_ < (MT); m_++) {                                              \
                    pw_mma_bf16(s[m_][n_], a[m_][kk_], b_);                                      \
                    pw_mma_bf16(s[m_][n_], a[m_][kk_ + 1], b_ + 2);                              \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    } while (0)

/* acc[mt][n] (the head's TC_NS tiles, for each of the warp's MT row tiles) += P[mt] . X, P[mt]
 * the A fragments of tiles p[mt][2kk], p[mt][2kk+1] (16 rows x nk columns of D fragments,
 * rounded here), X a bfloat16 tile of nk rows. One pw_ldsm_x4_t brings the B fragments of two
 * column tiles, which every row tile uses: lane l names row kk*16 + (l / 8 % 2) * 8 + l % 8 at
 * column (n + l / 16) * 8 (TC_NS is even in every bucket). */
#define TC_MMA_PX(acc, p, nk, X, MT)                                                             \
    do {                                                                                         \
        int l_ = (int)(threadIdx.x % 32), r_ = (l_ >> 3 & 1) * 8 + (l_ & 7);                     \
        PW_UNROLL                                                                                \
        for (int kk_ = 0; kk_ < (nk) / 16; kk_++) {                                              \
            uint32_t a_[MT][4];                                                                  \
            PW_UNROLL                                                                            \
            for (int m_ = 0; m_ < (MT); m_++) {                                                  \
                a_[m_][0] = pw_bf16x2(p[m_][2 * kk_][0], p[m_][2 * kk_][1]);                     \
                a_[m_][1] = pw_bf16x2(p[m_][2 * kk_][2], p[m_][2 * kk_][3]);                     \
                a_[m_][2] = pw_bf16x2(p[m_][2 * kk_ + 1][0], p[m_][2 * kk_ + 1][1]);             \
                a_[m_][3] = pw_bf16x2(p[m_][2 * kk_ + 1][2], p[m_][2 * kk_ + 1][3]);             \
            }                                                                                    \
            PW_UNROLL                                                                            \
            for (int n_ = 0; n_ < TC_NS; n_ += 2) {                                              \
                uint32_t b_[4];                                                                  \
                pw_ldsm_x4_t(b_, &X[kk_ * 16 + r_][(n_ + (l_ >> 4)) * 8]);                       \
                PW_UNROLL                                                                        \
                for (int m_ = 0; m_ < (MT); m_++) {                                              \
                    pw_mma_bf16(acc[m_][n_], a_[m_], b_);                                        \
                    pw_mma_bf16(acc[m_][n_ + 1], a_[m_], b_ + 2);                                \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    } while (0)

/* acc (16 rows of the head, D fragments) times mul0 / mul8 into float32 rows of y and / or
 * rounded to bfloat16 into the rows of y16 (either may be NULL; row stride ld), set; rows past
 * T (row0 >= T, row0 + 8 >= T) and columns past hs untouched */
static __device__ __forceinline__ void TC_FN(store_rows)(float *y, uint16_t *y16, size_t ld,
                                                         int row0, int T, float acc[TC_NS][4],
                                                         float mul0, float mul8, int hs)
{
    int c = (int)(threadIdx.x % 32) % 4;
    size_t r0 = (size_t)row0 * ld, r8 = r0 + 8 * ld;
    PW_UNROLL
    for (int n = 0; n < TC_NS; n++)
        PW_UNROLL
        for (int i = 0; i < 4; i++) {
            int d = n * 8 + 2 * c + (i & 1), in = i < 2 ? row0 < T : row0 + 8 < T;
            float v = acc[n][i] * (i < 2 ? mul0 : mul8);
            if (!in || d >= hs) continue;
            if (y) y[(i < 2 ? r0 : r8) + d] = v;
            if (y16) y16[(i < 2 ? r0 : r8) + d] = pw_bf16_bits(v);
        }
}

/* The key side of fwd and dq: two buffers of TC_BT keys, their values and their flags */
typedef struct TC_FN(Keys) {
    uint16_t k[2][TC_BT][TC_LD], v[2][TC_BT][TC_LD];
    int m[2][TC_BT];
} TC_FN(Keys);

/* Issue keys [k0, k0 + TC_BT) of src, their values and flags into buffer buf: one group */
static __device__ __forceinline__ void TC_FN(issue_keys)(TC_FN(Keys) * t, int buf,
                                                         const TcKv *src, int k0)
{
    const int BK = TC_BT;
    TC_FN(issue_tile)(t->k[buf], src->k, src->ld, k0, BK, src->T, src->hs, src->vec);
    TC_FN(issue_tile)(t->v[buf], src->v, src->ld, k0, BK, src->T, src->hs, src->vec);
    tc_issue_row4(t->m[buf], src->m, k0, BK, src->T);
    pw_cp_commit();
}

/* Tile it of nt (buffer it % 2) landed and made the block's, padding zeroed, while tile it + 1
 * is issued into the other buffer (the barrier that closed tile it - 1 freed it); whether tile
 * it has padding */
static __device__ __forceinline__ int TC_FN(next_keys)(TC_FN(Keys) * t, int it, int nt,
                                                       const TcKv *src)
{
    const int BK = TC_BT, cur = it & 1;
    if (it + 1 < nt) {
        TC_FN(issue_keys)(t, cur ^ 1, src, (it + 1) * BK);
        pw_cp_wait_but_one();
    } else {
        pw_cp_wait_all();
    }
    return TC_FN(land)(t->k[cur], t->v[cur], t->m[cur], it * BK, BK, src->T);
}

__global__ void TC_BOUNDS
    TC_FN(fwd)(float *out, uint16_t *out16, float *lse, const uint16_t *qkv, const int *mask,
               int T, int NH, int NKV, int hs, float scale)
{
    const int BK = TC_BT, MT = TC_FWD_MT(FLASH_HS), ROWS = TC_FWD_ROWS(FLASH_HS);
    const float sl2 = scale * TC_LOG2E;
    __shared__ __align__(16) TC_FN(Keys) kt;
    int b = blockIdx.z, h = blockIdx.y, q0 = tc_query_block(ROWS), c = (int)(threadIdx.x % 32) % 4;
    FlashAt at = flash_at(b, h, T, NH, NKV, hs);
    const int *m = mask ? mask + (size_t)b * T : 0;
    TcKv src = {qkv + at.k, qkv + at.v, (size_t)at.W, m, T, hs, tc_vec(qkv, hs)};
    int nt = ((q0 + ROWS < T ? q0 + ROWS : T) + BK - 1) / BK;
    TC_FN(issue_keys)(&kt, 0, &src, 0); /* in flight while the queries are read */
    int w0 = tc_row0(q0, 0, MT) - (int)(threadIdx.x % 32) / 4; /* the warp's first query */
    /* per row tile: this lane's rows r and r + 8, whether each is a real query, the running
     * max and this lane's part of the running sum, and the output's accumulators */
    int r0[TC_FWD_MT(FLASH_HS)], ok0[TC_FWD_MT(FLASH_HS)], ok8[TC_FWD_MT(FLASH_HS)];
    float mx0[TC_FWD_MT(FLASH_HS)], mx8[TC_FWD_MT(FLASH_HS)], l0[TC_FWD_MT(FLASH_HS)],
        l8[TC_FWD_MT(FLASH_HS)];
    uint32_t qa[TC_FWD_MT(FLASH_HS)][TC_KS][4];
    float o[TC_FWD_MT(FLASH_HS)][TC_NS][4];
    PW_UNROLL
    for (int mt = 0; mt < MT; mt++) {
        r0[mt] = tc_row0(q0, mt, MT);
        ok0[mt] = r0[mt] < T && flash_real(m, r0[mt]);
        ok8[mt] = r0[mt] + 8 < T && flash_real(m, r0[mt] + 8);
        TC_FN(load_a)(qa[mt], qkv + at.q, (size_t)at.W, r0[mt], ok0[mt], ok8[mt], hs);
        mx0[mt] = mx8[mt] = -INFINITY;
        l0[mt] = l8[mt] = 0.0f;
        PW_UNROLL
        for (int n = 0; n < TC_NS; n++)
            o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.0f;
    }
    for (int it = 0; it < nt; it++) {
        int k0 = it * BK, cur = it & 1, pad = TC_FN(next_keys)(&kt, it, nt, &src);
        /* every key of the tile real and at or before the warp's first query: no mask */
        int masked = pad || k0 + BK - 1 > w0 || k0 + BK > T;
        float s[TC_FWD_MT(FLASH_HS)][TC_BT / 8][4];
        TC_MMA_ABT(s, BK / 8, qa, kt.k[cur], TC_FWD_MT(FLASH_HS));
        /* scores stay unscaled: the max is the same key's either way (scale > 0), and the
         * scale goes into the exponent's one FFMA */
        if (masked) {
            PW_UNROLL
            for (int mt = 0; mt < MT; mt++)
                PW_UNROLL
                for (int n = 0; n < BK / 8; n++)
                    PW_UNROLL
                    for (int i = 0; i < 4; i++) {
                        int j = n * 8 + 2 * c + (i & 1), row = r0[mt] + (i < 2 ? 0 : 8);
                        int keep = (k0 + j <= row) & (kt.m[cur][j] != 0);
                        s[mt][n][i] = keep ? s[mt][n][i] : -INFINITY;
                    }
        }
        PW_UNROLL
        for (int mt = 0; mt < MT; mt++) {
            float t0 = mx0[mt], t8 = mx8[mt];
            PW_UNROLL
            for (int n = 0; n < BK / 8; n++) {
                t0 = fmaxf(t0, fmaxf(s[mt][n][0], s[mt][n][1]));
                t8 = fmaxf(t8, fmaxf(s[mt][n][2], s[mt][n][3]));
            }
            t0 = tc_quad_max(t0);
            t8 = tc_quad_max(t8);
            /* a row with no real key yet keeps max -inf: measure from 0 (every p is 0 then) */
            float ref0 = t0 == -INFINITY ? 0.0f : t0, ref8 = t8 == -INFINITY ? 0.0f : t8;
            /* the running sums and outputs rescaled only where a max of the warp moved: once
             * the row's largest scores are in, most tiles leave every max as it was, and the
             * factor would be exactly 1 */
            if (__any_sync(0xffffffffu, t0 != mx0[mt] || t8 != mx8[mt])) {
                float c0 = exp2f((mx0[mt] - ref0) * sl2), c8 = exp2f((mx8[mt] - ref8) * sl2);
                l0[mt] *= c0;
                l8[mt] *= c8;
                PW_UNROLL
                for (int n = 0; n < TC_NS; n++) {
                    o[mt][n][0] *= c0;
                    o[mt][n][1] *= c0;
                    o[mt][n][2] *= c8;
                    o[mt][n][3] *= c8;
                }
            }
            float n0 = -ref0 * sl2, n8 = -ref8 * sl2;
            PW_UNROLL
            for (int n = 0; n < BK / 8; n++)
                PW_UNROLL
                for (int i = 0; i < 4; i++) {
                    float p = exp2f(fmaf(s[mt][n][i], sl2, i < 2 ? n0 : n8));
                    s[mt][n][i] = p;
                    if (i < 2) l0[mt] += p;
                    else l8[mt] += p;
                }
            mx0[mt] = t0;
            mx8[mt] = t8;
        }
        TC_MMA_PX(o, s, BK, kt.v[cur], TC_FWD_MT(FLASH_HS));
        __syncthreads(); /* everyone is done with this buffer before it is refilled */
    }
    size_t ld = (size_t)NH * hs;
    float *lb = lse + ((size_t)b * NH + h) * T;
    PW_UNROLL
    for (int mt = 0; mt < MT; mt++) {
        float L0 = tc_quad_sum(l0[mt]), L8 = tc_quad_sum(l8[mt]);
        int r = r0[mt];
        /* l >= 1 at a real query (its own key is real and at the max or below it) */
        size_t oat = (size_t)b * T * ld + (size_t)h * hs;
        TC_FN(store_rows)(out ? out + oat : NULL, out16 ? out16 + oat : NULL, ld, r, T, o[mt],
                          ok0[mt] ? 1.0f / L0 : 0.0f, ok8[mt] ? 1.0f / L8 : 0.0f, hs);
        if (c == 0 && r < T) lb[r] = ok0[mt] ? mx0[mt] * scale + logf(L0) : 0.0f;
        if (c == 0 && r + 8 < T) lb[r + 8] = ok8[mt] ? mx8[mt] * scale + logf(L8) : 0.0f;
    }
}

__global__ void TC_BOUNDS
    TC_FN(dq)(float *dqkv, uint16_t *dqkv16, const float *drow, const uint16_t *dout16,
              const uint16_t *qkv, const float *lse, const int *mask, int T, int NH, int NKV,
              int hs, float scale)
{
    const int BK = TC_BT;
    __shared__ __align__(16) TC_FN(Keys) kt;
    int b = blockIdx.z, h = blockIdx.y, q0 = tc_query_block(TC_ROWS);
    int c = (int)(threadIdx.x % 32) % 4;
    FlashAt at = flash_at(b, h, T, NH, NKV, hs);
    const int *m = mask ? mask + (size_t)b * T : 0;
    TcKv src = {qkv + at.k, qkv + at.v, (size_t)at.W, m, T, hs, tc_vec(qkv, hs)};
    int nt = ((q0 + TC_ROWS < T ? q0 + TC_ROWS : T) + BK - 1) / BK;
    TC_FN(issue_keys)(&kt, 0, &src, 0); /* in flight while the queries are read */
    int r0 = tc_row0(q0, 0, 1), r8 = r0 + 8, w0 = q0 + (int)(threadIdx.x / 32) * 16;
    int ok0 = r0 < T && flash_real(m, r0), ok8 = r8 < T && flash_real(m, r8);
    size_t ld = (size_t)NH * hs, row = ((size_t)b * NH + h) * T;
    uint32_t qa[1][TC_KS][4], da[1][TC_KS][4]; /* one row tile */
    TC_FN(load_a)(qa[0], qkv + at.q, (size_t)at.W, r0, ok0, ok8, hs);
    TC_FN(load_a)(da[0], dout16 + (size_t)b * T * ld + (size_t)h * hs, ld, r0, ok0, ok8, hs);
    /* log2(scale) - lse log2(e), so that exp2(s scale log2(e) + L) = scale p (dS's first
     * factor) with no product an element; and D; at a padding query log2(scale) and 0, whose
     * q and dout rows are zeros too, so that its every dS is scale (0 - 0) = 0 without a test */
    float ls = log2f(scale);
    float L0 = ok0 ? ls - lse[row + r0] * TC_LOG2E : ls;
    float L8 = ok8 ? ls - lse[row + r8] * TC_LOG2E : ls;
    float D0 = ok0 ? drow[row + r0] : 0.0f, D8 = ok8 ? drow[row + r8] : 0.0f;
    const float sl2 = scale * TC_LOG2E;

    float dq[1][TC_NS][4];
    PW_UNROLL
    for (int n = 0; n < TC_NS; n++) dq[0][n][0] = dq[0][n][1] = dq[0][n][2] = dq[0][n][3] = 0.0f;
    for (int it = 0; it < nt; it++) {
        int k0 = it * BK, cur = it & 1, pad = TC_FN(next_keys)(&kt, it, nt, &src);
        int masked = pad || k0 + BK - 1 > w0 || k0 + BK > T;
        float s[1][TC_BT / 8][4], dp[1][TC_BT / 8][4];
        TC_MMA_ABT(s, BK / 8, qa, kt.k[cur], 1);
        TC_MMA_ABT(dp, BK / 8, da, kt.v[cur], 1);
        PW_UNROLL
        for (int n = 0; n < BK / 8; n++)
            PW_UNROLL
            for (int i = 0; i < 4; i++) {
                int lo = i < 2;
                float p = exp2f(fmaf(s[0][n][i], sl2, lo ? L0 : L8));
                s[0][n][i] = p * (dp[0][n][i] - (lo ? D0 : D8)); /* p: scale exp(...) */
            }
        /* one branch a tile, the tests without one an element (a select, not a product: a
         * future key's p may be inf) */
        if (masked) {
            PW_UNROLL
            for (int n = 0; n < BK / 8; n++)
                PW_UNROLL
                for (int i = 0; i < 4; i++) {
                    int j = n * 8 + 2 * c + (i & 1), lo = i < 2;
                    int keep = (lo ? ok0 : ok8) & (k0 + j <= (lo ? r0 : r8)) & (kt.m[cur][j] != 0);
                    s[0][n][i] = keep ? s[0][n][i] : 0.0f;
                }
        }
        TC_MMA_PX(dq, s, BK, kt.k[cur], 1);
        __syncthreads(); /* everyone is done with this buffer before it is refilled */
    }
    /* padding queries: zeros (their dS were) */
    TC_FN(store_rows)(dqkv ? dqkv + at.q : NULL, dqkv16 ? dqkv16 + at.q : NULL, (size_t)at.W,
                      r0, T, dq[0], 1.0f, 1.0f, hs);
}

/* dkvq's part of dq for one query tile (queries t0.., head h): this warp's dS^T (16 keys x
 * TC_BT queries, D fragments after the mask) rounded into dst, a barrier, then each warp takes
 * one row tile of 16 queries and TC_DQ_COLS of the head's 8-column tiles: dq += dS . K over the
 * block's TC_ROWS keys, A fragments of dS from dst (stored as its transpose: ldmatrix .trans;
 * matrix i of lane 8i + j is keys (i / 2) * 8 + j, queries (i % 2) * 8, so that r[i] is the A
 * register i of the PTX table), B fragments of K from ks (as TC_MMA_PX's), then atomically added
 * into dq32 ((B,T,NH,hs) floats), rows past T and columns past hs left out. The caller's barrier
 * after it frees dst for the next tile. */
#define TC_DQ_RT (TC_BT / 16)                  /* row tiles of a query tile */
#define TC_DQ_COLS (TC_NS * TC_DQ_RT / TC_WARPS) /* 8-column tiles a warp takes (even) */
static __device__ __forceinline__ void TC_FN(dq_tile)(uint16_t (*dst)[TC_BT + 8],
                                                      uint16_t (*ks)[TC_LD],
                                                      float dp[TC_BT / 8][4], float *dq32, int b,
                                                      int h, int t0, int T, int NH, int hs)
{
    int l = (int)(threadIdx.x % 32), w = (int)(threadIdx.x / 32), g = l / 4, c = l % 4;
    PW_UNROLL
    for (int n = 0; n < TC_BT / 8; n++) {
        *(uint32_t *)&dst[w * 16 + g][n * 8 + 2 * c] = pw_bf16x2(dp[n][0], dp[n][1]);
        *(uint32_t *)&dst[w * 16 + g + 8][n * 8 + 2 * c] = pw_bf16x2(dp[n][2], dp[n][3]);
    }
    __syncthreads();
    int rt = w % TC_DQ_RT, c0 = w / TC_DQ_RT * TC_DQ_COLS, r_ = (l >> 3 & 1) * 8 + (l & 7);
    float acc[TC_DQ_COLS][4];
    PW_UNROLL
    for (int n = 0; n < TC_DQ_COLS; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
    PW_UNROLL
    for (int kk = 0; kk < TC_ROWS / 16; kk++) {
        uint32_t a[4];
        pw_ldsm_x4_t(a, &dst[kk * 16 + (l >> 4) * 8 + (l & 7)][rt * 16 + (l >> 3 & 1) * 8]);
        PW_UNROLL
        for (int n = 0; n < TC_DQ_COLS; n += 2) {
            uint32_t bf[4];
            pw_ldsm_x4_t(bf, &ks[kk * 16 + r_][(c0 + n + (l >> 4)) * 8]);
            pw_mma_bf16(acc[n], a, bf);
            pw_mma_bf16(acc[n + 1], a, bf + 2);
        }
    }
    int r0 = t0 + rt * 16 + g;
    float *q0 = dq32 + (((size_t)b * T + r0) * NH + h) * hs, *q8 = q0 + (size_t)8 * NH * hs;
    PW_UNROLL
    for (int n = 0; n < TC_DQ_COLS; n++)
        PW_UNROLL
        for (int i = 0; i < 4; i += 2) { /* a lane's two adjacent columns of a row */
            int d = (c0 + n) * 8 + 2 * c, row = r0 + (i < 2 ? 0 : 8);
            float *at = (i < 2 ? q0 : q8) + d;
            if (row >= T || d >= hs) continue;
            if (d + 1 < hs && ((uintptr_t)at & 7) == 0) { /* hs even: always */
                tc_atomic_add2(at, acc[n][i], acc[n][i + 1]);
            } else {
                atomicAdd(at, acc[n][i]);
                if (d + 1 < hs) atomicAdd(at + 1, acc[n][i + 1]);
            }
        }
}

/* The shared memory of dkv and dkvq: two buffers of query tiles, their dout rows, lse, D and
 * mask flags; with dq fused (dkvq), dS^T of the block's keys over a query tile (dst, the keys'
 * rows TC_BT + 8 halves apart: 16-byte aligned rows, 8 rows in 8 distinct groups of banks) and
 * the block's own keys (ks) */
typedef struct TC_FN(Smem) {
    uint16_t (*qs)[TC_BT][TC_LD], (*os)[TC_BT][TC_LD];
    float (*Ls)[TC_BT], (*Ds)[TC_BT];
    int (*qm)[TC_BT];
    uint16_t (*dst)[TC_BT + 8], (*ks)[TC_LD];
} TC_FN(Smem);

/* dkvq's dynamic shared memory, in bytes, and its carving (16-byte aligned pieces first) */
#define TC_DKVQ_BYTES                                                                            \
    (2 * (size_t)2 * TC_BT * TC_LD * 2 + (size_t)TC_ROWS * (TC_BT + 8) * 2 +                     \
     (size_t)TC_ROWS * TC_LD * 2 + (size_t)3 * 2 * TC_BT * 4)
static const size_t TC_FN(dkvq_bytes) = TC_DKVQ_BYTES;

/* dk and dv of the block's keys (grid as dkv's), and with fuse their part of dq added into dq32
 * ((B,T,NH,hs) floats, zeroed before): after dk and dv, a tile's dS^T goes to shared memory and
 * the block's 4 warps share dq's tile (16 queries and a part of the head each) = dS . K over the
 * block's 64 keys, atomically added. fuse is a constant at each call: the kernel built for it. */
static __device__ __forceinline__ void TC_FN(dkv_body)(
    float *dqkv, uint16_t *dqkv16, const float *drow, const uint16_t *dout16, const uint16_t *qkv,
    const float *lse, const int *mask, int T, int NH, int NKV, int hs, float scale,
    const TC_FN(Smem) * sm, int fuse, float *dq32)
{
    const int BQ = TC_BT;
    uint16_t (*qs)[TC_BT][TC_LD] = sm->qs, (*os)[TC_BT][TC_LD] = sm->os;
    float (*Ls)[TC_BT] = sm->Ls, (*Ds)[TC_BT] = sm->Ds;
    int (*qm)[TC_BT] = sm->qm;
    int b = blockIdx.z, kv = blockIdx.y, G = NH / NKV, k0 = blockIdx.x * TC_ROWS;
    int c = (int)(threadIdx.x % 32) % 4;
    const float sl2 = scale * TC_LOG2E;
    const int *m = mask ? mask + (size_t)b * T : 0;
    size_t ld = (size_t)NH * hs;
    const uint16_t *dO = dout16 + (size_t)b * T * ld;
    int vq = tc_vec(qkv, hs), vo = tc_vec(dout16, hs);
    FlashAt a0 = flash_at(b, kv * G, T, NH, NKV, hs);
    /* the tiles: every query head of the group, for each the queries from k0 on */
    int per = (T - k0 + BQ - 1) / BQ, nt = G * per, nh = 0, nq = k0;
#define TC_DKV_ISSUE(buf)                                                                        \
    do {                                                                                         \
        int h_, t_;                                                                              \
        FLASH_WALK_NEXT(h_, t_, nh, nq, kv * G, k0, BQ, T);                                      \
        size_t row_ = ((size_t)b * NH + h_) * T;                                                 \
        FlashAt a_ = flash_at(b, h_, T, NH, NKV, hs);                                            \
        TC_FN(issue_tile)(qs[buf], qkv + a_.q, (size_t)a_.W, t_, BQ, T, hs, vq);                 \
        TC_FN(issue_tile)(os[buf], dO + (size_t)h_ * hs, ld, t_, BQ, T, hs, vo);                 \
        tc_issue_row4(qm[buf], m, t_, BQ, T);                                                    \
        tc_issue_row4(Ls[buf], lse + row_, t_, BQ, T);                                           \
        tc_issue_row4(Ds[buf], drow + row_, t_, BQ, T);                                          \
        pw_cp_commit();                                                                          \
    } while (0)
    /* dq's keys: the block's own, in the first group of copies */
    if (fuse) TC_FN(issue_tile)(sm->ks, qkv + a0.k, (size_t)a0.W, k0, TC_ROWS, T, hs, vq);
    TC_DKV_ISSUE(0);
    int s0 = tc_row0(k0, 0, 1), s8 = s0 + 8, wlast = k0 + (int)(threadIdx.x / 32) * 16 + 15;
    int ok0 = s0 < T && flash_real(m, s0), ok8 = s8 < T && flash_real(m, s8);
    int key_pad = __any_sync(0xffffffffu, !(ok0 && ok8)); /* a key of the warp not real */
    uint32_t ka[1][TC_KS][4], va[1][TC_KS][4]; /* one row tile */
    TC_FN(load_a)(ka[0], qkv + a0.k, (size_t)a0.W, s0, ok0, ok8, hs);
    TC_FN(load_a)(va[0], qkv + a0.v, (size_t)a0.W, s0, ok0, ok8, hs);
    float dk[1][TC_NS][4], dv[1][TC_NS][4];
    PW_UNROLL
    for (int n = 0; n < TC_NS; n++)
        PW_UNROLL
        for (int i = 0; i < 4; i++) dk[0][n][i] = dv[0][n][i] = 0.0f;

    /* hq: the head of the tile in hand (t0 wraps to k0 at each new head) */
    for (int it = 0, t0 = k0, hq = kv * G; it < nt;
         it++, hq += t0 + BQ >= T, t0 = t0 + BQ < T ? t0 + BQ : k0) {
        int cur = it & 1;
        if (it + 1 < nt) {
            TC_DKV_ISSUE(cur ^ 1);
            pw_cp_wait_but_one();
        } else {
            pw_cp_wait_all();
        }
        int pad = TC_FN(land)(qs[cur], os[cur], qm[cur], t0, BQ, T);
        if (fuse && it == 0) /* padding keys' rows of ks zeroed (NaN may live there), made the
                                block's by the barrier before dq's products */
            for (int i = threadIdx.x; i < TC_ROWS * (FLASH_HS / 2); i += TC_THREADS) {
                int j = i / (FLASH_HS / 2), d = i % (FLASH_HS / 2) * 2;
                if (k0 + j < T && !flash_real(m, k0 + j)) *(uint32_t *)&sm->ks[j][d] = 0u;
            }
        /* every query of the tile real and at or after the warp's last key: no mask */
        int masked = pad || t0 < wlast || t0 + BQ > T;
        float s[1][TC_BT / 8][4], dp[1][TC_BT / 8][4];
        TC_MMA_ABT(s, BQ / 8, ka, qs[cur], 1);
        TC_MMA_ABT(dp, BQ / 8, va, os[cur], 1);
        PW_UNROLL
        for (int n = 0; n < BQ / 8; n++)
            PW_UNROLL
            for (int i = 0; i < 4; i++) {
                int j = n * 8 + 2 * c + (i & 1);
                float p = exp2f(fmaf(s[0][n][i], sl2, -Ls[cur][j] * TC_LOG2E));
                dp[0][n][i] = scale * p * (dp[0][n][i] - Ds[cur][j]);
                s[0][n][i] = p;
            }
        /* one branch a tile, the tests without one an element (selects: a p before its key may
         * be inf; a padding key's row of k and v is zeros, but its p would not be) */
        if (masked || key_pad) {
            PW_UNROLL
            for (int n = 0; n < BQ / 8; n++)
                PW_UNROLL
                for (int i = 0; i < 4; i++) {
                    int j = n * 8 + 2 * c + (i & 1), lo = i < 2;
                    int keep = (lo ? ok0 : ok8) & (t0 + j >= (lo ? s0 : s8)) & (qm[cur][j] != 0);
                    s[0][n][i] = keep ? s[0][n][i] : 0.0f;
                    dp[0][n][i] = keep ? dp[0][n][i] : 0.0f;
                }
        }
        TC_MMA_PX(dv, s, BQ, os[cur], 1);
        TC_MMA_PX(dk, dp, BQ, qs[cur], 1);
        if (fuse) TC_FN(dq_tile)(sm->dst, sm->ks, dp[0], dq32, b, hq, t0, T, NH, hs);
        __syncthreads(); /* everyone is done with this buffer before it is refilled */
    }
#undef TC_DKV_ISSUE
    /* padding keys: zeros (no query gave them a probability) */
    TC_FN(store_rows)(dqkv ? dqkv + a0.k : NULL, dqkv16 ? dqkv16 + a0.k : NULL, (size_t)a0.W,
                      s0, T, dk[0], 1.0f, 1.0f, hs);
    TC_FN(store_rows)(dqkv ? dqkv + a0.v : NULL, dqkv16 ? dqkv16 + a0.v : NULL, (size_t)a0.W,
                      s0, T, dv[0], 1.0f, 1.0f, hs);
}

__global__ void TC_BOUNDS
    TC_FN(dkv)(float *dqkv, uint16_t *dqkv16, const float *drow, const uint16_t *dout16,
               const uint16_t *qkv, const float *lse, const int *mask, int T, int NH, int NKV,
               int hs, float scale)
{
    __shared__ __align__(16) uint16_t qs[2][TC_BT][TC_LD], os[2][TC_BT][TC_LD];
    __shared__ float Ls[2][TC_BT], Ds[2][TC_BT];
    __shared__ int qm[2][TC_BT];
    TC_FN(Smem) sm = {qs, os, Ls, Ds, qm, NULL, NULL};
    TC_FN(dkv_body)(dqkv, dqkv16, drow, dout16, qkv, lse, mask, T, NH, NKV, hs, scale, &sm, 0,
                    NULL);
}

/* dkv with dq fused: dk and dv set as dkv sets them (dqkv or dqkv16), dq added into dq32, which
 * pw_flash_tc_dq_store then writes as dq's kernel would. dS . K is made once a tile where dq's
 * kernel made S, dP and dS again: 5 products a (key, query) tile pair instead of 7. The sums
 * into dq32 are atomic: their order, and so dq's last bits, vary from run to run. Dynamic
 * shared memory of TC_FN(dkvq_bytes) (over 48 KiB for heads of 64 and 128: the launch raises
 * the kernel's limit). */
__global__ void TC_BOUNDS
    TC_FN(dkvq)(float *dqkv, uint16_t *dqkv16, float *dq32, const float *drow,
                const uint16_t *dout16, const uint16_t *qkv, const float *lse, const int *mask,
                int T, int NH, int NKV, int hs, float scale)
{
    PW_DYN_SMEM(uint16_t, tc_smem);
    uint16_t *p = tc_smem;
    TC_FN(Smem) sm;
    sm.qs = (uint16_t (*)[TC_BT][TC_LD])p;
    p += 2 * TC_BT * TC_LD;
    sm.os = (uint16_t (*)[TC_BT][TC_LD])p;
    p += 2 * TC_BT * TC_LD;
    sm.dst = (uint16_t (*)[TC_BT + 8])p;
    p += TC_ROWS * (TC_BT + 8);
    sm.ks = (uint16_t (*)[TC_LD])p;
    p += TC_ROWS * TC_LD;
    sm.Ls = (float (*)[TC_BT])p;
    sm.Ds = sm.Ls + 2;
    sm.qm = (int (*)[TC_BT])(sm.Ds + 2);
    TC_FN(dkv_body)(dqkv, dqkv16, drow, dout16, qkv, lse, mask, T, NH, NKV, hs, scale, &sm, 1,
                    dq32);
}

#undef TC_DQ_RT
#undef TC_DQ_COLS
#undef TC_DKVQ_BYTES
#undef TC_FN
#undef TC_BT
#undef TC_TILE_ROWS
#undef TC_BOUNDS
#undef TC_MIN_BLOCKS
#undef TC_LD
#undef TC_KS
#undef TC_NS
