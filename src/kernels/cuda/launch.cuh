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

static inline unsigned int pw_row_blocks(size_t rows)
{
    return (unsigned int)((rows + PW_ROW_WARPS - 1) / PW_ROW_WARPS);
}

/* LayerNorm's backward over rows of up to PW_ROW_KEEP * 32 channels makes all three gradients
 * in one pass (layernorm_kernels.cuh): PW_LNB_ROWS rows a warp, PW_ROW_WARPS * PW_LNB_ROWS a
 * block, each block's dweight and dbias summed in registers into one partial row, the partial
 * rows (2 x blocks x C floats) then added in block order. The grid is N's alone: the same bits
 * on every device. GPT-2's 16384 rows of a step make 256 blocks, two to each SM of an H100 at
 * once; fewer rows a warp made more partial rows, whose in-order sum took longer than the pass
 * saved (4 rows: 140 us a call in all, 8: 116, the three kernels 166). Below PW_LNB_MIN_BLOCKS
 * blocks the pass leaves SMs idle while a warp works through its rows, and the three kernels,
 * a row a warp, are faster (4096 rows: 73 us against 48; 8192 rows: 84 against 92). */
#define PW_LNB_ROWS 8
#define PW_LNB_MIN_BLOCKS 128

static inline unsigned int pw_lnb_blocks(size_t rows)
{
    size_t per = (size_t)PW_ROW_WARPS * PW_LNB_ROWS;
    return (unsigned int)((rows + per - 1) / per);
}

/* whether layernorm.cu's backward of N rows of C takes the one pass (with dweight or dbias) */
static inline int pw_lnb_one_pass(int N, int C)
{
    return C <= PW_ROW_KEEP * 32 && pw_lnb_blocks((size_t)N) >= PW_LNB_MIN_BLOCKS;
}

#endif
