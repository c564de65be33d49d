/* launch.cuh: the launch shapes the kernel files share, in plain C so that the emulated tests
 * (tests/cuda/test_*_emu.c) launch with the very same numbers. */
#ifndef PW_CUDA_LAUNCH_CUH
#define PW_CUDA_LAUNCH_CUH

#include <stddef.h>

/* Elementwise kernels use grid-stride loops over size_t, so a grid of at most this many
 * blocks covers any n; enough blocks to fill any current GPU many times over. */
#define PW_EW_THREADS 256
#define PW_EW_MAX_BLOCKS 65536

static inline unsigned int pw_ew_blocks(size_t n)
{
    size_t b = (n + PW_EW_THREADS - 1) / PW_EW_THREADS;
    return (unsigned int)(b < PW_EW_MAX_BLOCKS ? b : PW_EW_MAX_BLOCKS);
}

/* Column sums (colsum.cu, LayerNorm's dweight and dbias) take blocks of PW_COLSUM_THREADS
 * columns and chunks of at least PW_COLSUM_ROWS rows: grid.y is at most 65535, so very tall
 * inputs get longer chunks. */
#define PW_COLSUM_THREADS 256
#define PW_COLSUM_ROWS 64

static inline int pw_colsum_chunk_rows(int N)
{
    int rows = PW_COLSUM_ROWS;
    if ((N + rows - 1) / rows > 65535) rows = (N + 65534) / 65535;
    return rows;
}

/* ... the bfloat16 sums 8 columns a thread (pw_cuda_set_colsum_vec): C / 8 groups over
 * pw_colsum_vec_grid_x blocks of pw_colsum_vec_threads (a multiple of 32, at most
 * PW_COLSUM_THREADS): GPT-2's 768 columns are one block of 96 threads a chunk, its 2304 two of
 * 160; and the loads a thread has in flight before it adds (the finish's too) */
#define PW_COLSUM_UNROLL 8

static inline unsigned int pw_colsum_vec_grid_x(int C)
{
    int groups = (C + 7) / 8;
    return (unsigned int)((groups + PW_COLSUM_THREADS - 1) / PW_COLSUM_THREADS);
}

static inline unsigned int pw_colsum_vec_threads(int C)
{
    int groups = (C + 7) / 8, bx = (int)pw_colsum_vec_grid_x(C);
    int per = (groups + bx - 1) / bx;
    return (unsigned int)((per + 31) / 32 * 32);
}

/* Row kernels (LayerNorm, RMSNorm, the attention GEMM path's softmaxes) run one warp per row,
 * PW_ROW_WARPS rows to a block of PW_ROW_THREADS threads. */
#define PW_ROW_WARPS 8
#define PW_ROW_THREADS (PW_ROW_WARPS * 32)
/* A row kernel's loops that store take PW_ROW_BATCH of a lane's elements at a time: all loaded,
 * then all used. The compiler cannot move a load above a store that may alias it (a fused
 * residual's res may be inp), so one element at a time waited a memory round trip each: the
 * residual RMSNorm took 21.8 us for a decode step's 256 rows of 896 (PW_PROFILE_OPS on an H100),
 * about 60 round trips. The sums keep their order: the same bits as one at a time. */
#define PW_ROW_BATCH 8
/* ... and a row of up to PW_ROW_KEEP * 32 channels (GPT-2 124M's 768, Qwen2.5-0.5B's 896) is
 * kept whole in the lane's registers by the forward norms: one read and one write of it */
#define PW_ROW_KEEP 32
/* ... or, in the float4 forms of the forward norms (pw_cuda_set_ln_vec), up to PW_ROW_VEC
 * float4 a lane: rows of up to 1024 channels, 2 rows a block below 4096 rows (a decode step's
 * 256 rows are 128 blocks, not 32), else PW_ROW_WARPS */
#define PW_ROW_VEC 8
static inline int pw_row_vec_warps(int rows) { return rows < 4096 ? 2 : PW_ROW_WARPS; }
static inline unsigned int pw_row_vec_blocks(int rows)
{
    int warps = pw_row_vec_warps(rows);
    return (unsigned int)((rows + warps - 1) / warps);
}

/* The elementwise bf16 kernels' 8-a-thread forms (GELU, the float32 -> bfloat16 conversion;
 * SwiGLU 8 columns a thread): 16 bytes of bfloat16 a load and a store, where one element a
 * thread had 2 bytes in flight. A unit is a group of PW_VEC below n / PW_VEC, then one element
 * of the tail each: pw_vec_units of them for n elements. */
#define PW_VEC 8

static inline size_t pw_vec_units(size_t n) { return n / PW_VEC + n % PW_VEC; }

static inline unsigned int pw_row_blocks(size_t rows)
{
    return (unsigned int)((rows + PW_ROW_WARPS - 1) / PW_ROW_WARPS);
}

/* LayerNorm's backward over rows of up to PW_ROW_KEEP * 32 channels makes all three gradients
 * in one pass (layernorm_kernels.cuh): pw_lnb_rows rows a warp, PW_ROW_WARPS times that a
 * block, each block's dweight and dbias summed in registers into one partial row, the partial
 * rows (2 x blocks x C floats) then added in block order by the finish kernel, 32 columns a
 * block, its 8 warps each summing every 8th partial row in order and then added in warp order.
 * The grid is N's alone: the same bits on every device. Rows a warp: PW_LNB_ROWS, halved (to
 * 1) while the grid would have fewer than PW_LNB_MIN_BLOCKS blocks: GPT-2's 16384 rows of a
 * step make 256 blocks of 8 rows a warp, two to each SM of an H100; a PPO minibatch's 2500,
 * 313 of one. Measured on an H100 with a prototype of this scheme, against the three kernels of
 * rows longer than that (a row kernel for dinp, a column sum's chunks, their sum): 15.4 us
 * against 19.4 at 1024 rows of 768, 22.0 against 30.1 at 2472, 37.0 against 48.2 at 4096, 62.3
 * against 91.5 at 8192, 109.8 against 165.7 at 16384. A finish of a column a thread, 3 blocks
 * for 768 columns, took 10 to 12 us where this one takes 4 to 5; with it, fixed 8 rows a warp
 * lost to the three kernels below 8192 rows and fixed 4 took 140 us at 16384. */
#define PW_LNB_ROWS 8
#define PW_LNB_MIN_BLOCKS 200

static inline unsigned int pw_lnb_blocks(size_t rows, int per_warp)
{
    size_t per = (size_t)PW_ROW_WARPS * per_warp;
    return (unsigned int)((rows + per - 1) / per);
}

/* rows a warp of the one pass over N rows */
static inline int pw_lnb_rows(size_t N)
{
    int r = PW_LNB_ROWS;
    while (r > 1 && pw_lnb_blocks(N, r) < PW_LNB_MIN_BLOCKS) r /= 2;
    return r;
}

/* whether the backward of rows of C channels takes the one pass (with dweight or dbias) */
static inline int pw_lnb_one_pass(int C) { return C <= PW_ROW_KEEP * 32; }

/* the finish's blocks (of PW_ROW_THREADS) for C columns: 32 columns a block */
static inline unsigned int pw_lnb_finish_blocks(int C) { return (unsigned int)((C + 31) / 32); }

/* The few-row products (skinny_kernels.cuh: a decode step's, 256 rows or fewer, bf16 operands,
 * float32 out): a block of PW_SK_THREADS threads makes a tile of PW_SK_BM rows by PW_SK_BN
 * outputs over one part of K, walked PW_SK_BK at a time. At GPT-2's 256 rows its projections
 * back to 768 channels are 24 such tiles for an H100's 132 SMs, so K is split in parts until the
 * grid is about PW_SK_PER_SM blocks an SM: each part walks at least PW_SK_MIN_STEPS steps of
 * PW_SK_BK, there are at most PW_SK_MAX_PARTS, and a stream's workspace holds PW_SK_WS_TILES
 * tiles' partial sums (tiles times parts; 16 MiB). A product of more than PW_SK_PER_TILE_SM
 * tiles an SM fills the device without a split (an LM head: 1572 tiles at 256 rows) and is left
 * to cuBLAS, as is one of more than PW_SK_MAX_ROWS rows or whose C is not a multiple of
 * PW_SK_BK. */
#define PW_SK_BM 64
#define PW_SK_BN 128
#define PW_SK_BK 32
#define PW_SK_THREADS 256
#define PW_SK_MAX_ROWS 256
#define PW_SK_PER_SM 2
#define PW_SK_PER_TILE_SM 4
#define PW_SK_MIN_STEPS 4
#define PW_SK_MAX_PARTS 8
#define PW_SK_WS_TILES 512
#define PW_SK_MAX_TILES 1024 /* a stream's counters, one a tile */

static inline int pw_sk_tiles(int N, int OC)
{
    return ((N + PW_SK_BM - 1) / PW_SK_BM) * ((OC + PW_SK_BN - 1) / PW_SK_BN);
}

/* the parts K is split in for a product of N rows of C to OC outputs on a device of sms SMs,
 * for a grid of about per_sm blocks an SM (PW_SK_PER_SM unless a benchmark asks otherwise);
 * 0: not a product for these kernels */
static inline int pw_sk_parts(int N, int C, int OC, int sms, int per_sm)
{
    if (N < 1 || N > PW_SK_MAX_ROWS || OC < 1 || C < PW_SK_BK || C % PW_SK_BK || sms < 1 ||
        per_sm < 1)
        return 0;
    int tiles = pw_sk_tiles(N, OC), steps = C / PW_SK_BK, want = per_sm * sms;
    if (tiles > PW_SK_PER_TILE_SM * sms || tiles > PW_SK_MAX_TILES) return 0;
    int parts = (want + tiles - 1) / tiles;
    if (parts > steps / PW_SK_MIN_STEPS) parts = steps / PW_SK_MIN_STEPS;
    if (parts > PW_SK_MAX_PARTS) parts = PW_SK_MAX_PARTS;
    if (parts * tiles > PW_SK_WS_TILES) parts = PW_SK_WS_TILES / tiles;
    return parts < 1 ? 1 : parts;
}

#endif
