/* bench_kernels_cuda.c: each CUDA kernel's time at the GPT-2 124M shape, as GB/s or TFLOP/s
 * next to what this GPU measurably does (a device-to-device copy, big fp32 and bf16 GEMMs).
 * Run: bench_kernels_cuda [reps]. Prints a table, then `RESULT ...`; exits 77 without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "pw_cuda_check.h"
#include "pw_device.h"
#include "pw_kernels.h"
#include "pw_kernels_cuda.h"

enum { B = 16, T = 1024, C = 768, NH = 12, V = 50257, N = B * T };
enum { VP = 50304 }; /* the vocabulary padded to a multiple of 64, as the model lays out logits */
#define NPARAMS 124475904ul /* GPT-2 124M's parameter count: the AdamW and clipping size */

/* ---- buffers, one set for every kernel (about 12 GB) */
typedef struct Bufs {
    int *inp, *targets, *mask, *pos;
    float *wte, *wpe, *x, *y, *dx, *dy, *mean, *rstd, *lnw, *lnb, *dlnw, *dlnb;
    float *qkv, *dqkv, *att, *fc, *dfc, *w, *dw, *bias, *dbias, *logits, *dlogits, *rowv, *rowg;
    float *lpst; /* (N, PW_LP_STATS) the log-prob forward's kept statistics */
    float *params, *grads, *m, *v;
    pw_bf16 *params16; /* a bf16 model's copy of the weights, which its update writes */
    pw_bf16 *x16, *w16, *dy16, *qkv16, *fc16; /* fc16: the fc product rounded */
    pw_bf16 *y16; /* the attention's output rounded, as a bf16 model keeps it */
    PwRowGroups tokg, posg; /* the rows by token and by position, as a model's backward makes */
} Bufs;

static void *dev(size_t bytes)
{
    void *p = NULL;
    PW_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
}

/* fill n floats with values uniform in [-scale, scale]: one host tile of random numbers copied
 * over the whole buffer (the values only need to be ordinary numbers, not independent) */
#define TILE (1u << 20)
static float tile[TILE];
static void fill(float *d, size_t n, float scale)
{
    for (size_t j = 0; j < TILE; j++) tile[j] = scale * ((float)rand() / RAND_MAX * 2.0f - 1.0f);
    for (size_t i = 0; i < n; i += TILE) {
        size_t k = n - i < TILE ? n - i : TILE;
        PW_CUDA_CHECK(cudaMemcpy(d + i, tile, k * sizeof(float), cudaMemcpyHostToDevice));
    }
}

static float *devf(size_t n, float scale)
{
    float *d = dev(n * sizeof(float));
    fill(d, n, scale);
    return d;
}

static int *devi(const int *h, size_t n)
{
    int *d = dev(n * sizeof(int));
    PW_CUDA_CHECK(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));
    return d;
}

static pw_bf16 *dev16(const float *src, size_t n)
{
    pw_bf16 *d = dev(n * sizeof(pw_bf16));
    pw_f32_to_bf16_cuda(d, src, n, 0);
    return d;
}

/* rows 0 .. N-1 grouped by keys (pw_row_groups), the arrays on the device */
static PwRowGroups groups(const int *keys, int nkeys)
{
    int *h = malloc(sizeof(int) * (3 * N + 1));
    int *scratch = malloc(sizeof(int) * (nkeys + 1));
    int n = pw_row_groups(keys, N, nkeys, h, h + N, h + 2 * N + 1, scratch);
    int *d = devi(h, 3 * N + 1);
    free(h);
    free(scratch);
    return (PwRowGroups){d, d + N, d + 2 * N + 1, n};
}

static void setup(Bufs *b)
{
    size_t NC = (size_t)N * C, NV = (size_t)N * V;
    int *h = malloc(sizeof(int) * N), *hp = malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++) h[i] = rand() % V;
    b->inp = devi(h, N);
    b->targets = devi(h, N);
    b->tokg = groups(h, V);
    /* left padding of 0, 40, 80, ... tokens: the RLHF batches this code exists for */
    for (int i = 0; i < N; i++) h[i] = i % T >= (i / T) * 40;
    b->mask = devi(h, N);
    pw_positions_from_mask(hp, h, B, T);
    b->posg = groups(hp, T);
    free(h);
    free(hp);
    b->pos = dev(sizeof(int) * N);
    pw_positions_from_mask_cuda(b->pos, b->mask, B, T, 0);
    b->wte = devf((size_t)V * C, 0.02f);
    b->wpe = devf((size_t)T * C, 0.01f);
    b->x = devf(NC, 1.0f);
    b->y = devf(NC, 1.0f);
    b->dx = devf(NC, 1.0f);
    b->dy = devf(NC, 1.0f);
    b->mean = devf(N, 0.0f);
    b->rstd = devf(N, 1.0f);
    b->lnw = devf(C, 1.0f);
    b->lnb = devf(C, 0.1f);
    b->dlnw = devf(C, 0.0f);
    b->dlnb = devf(C, 0.0f);
    b->qkv = devf(NC * 3, 1.0f);
    b->dqkv = devf(NC * 3, 0.0f);
    b->att = devf((size_t)B * NH * T, 0.0f); /* the log-sum-exp rows between the passes */
    b->fc = devf(NC * 4, 1.0f);
    b->dfc = devf(NC * 4, 1.0f);
    b->w = devf((size_t)V * C, 0.02f); /* big enough for every weight, the LM head's included */
    b->dw = devf((size_t)V * C, 0.0f);
    b->bias = devf(V, 0.01f);
    b->dbias = devf(V, 0.0f);
    b->logits = devf((size_t)N * VP, 2.0f); /* (N, V) dense, or (N, VP) padded */
    b->dlogits = devf((size_t)N * VP, 0.0f);
    b->lpst = devf((size_t)N * PW_LP_STATS, 0.0f);
    b->rowv = devf(N, 1.0f);
    b->rowg = devf(N, 1.0f);
    b->params = devf(NPARAMS, 0.02f);
    b->grads = devf(NPARAMS, 1e-3f);
    b->m = devf(NPARAMS, 0.0f);
    b->v = devf(NPARAMS, 0.0f);
    b->params16 = dev(sizeof(pw_bf16) * NPARAMS);
    b->x16 = dev16(b->x, NC);
    b->qkv16 = dev16(b->qkv, NC * 3);
    b->y16 = dev(sizeof(pw_bf16) * NC);
    b->fc16 = dev(sizeof(pw_bf16) * NC * 4);
    b->w16 = dev16(b->w, (size_t)V * C);
    b->dy16 = dev16(b->logits, NV); /* a (N,V) gradient for the LM head's bf16 backward */
    PW_CUDA_CHECK(cudaDeviceSynchronize());
}

/* ---- the kernels, each as one call on the default stream */
static Bufs g;
static void encoder_fwd(void)
{
    pw_encoder_forward_cuda(g.y, g.inp, g.pos, g.wte, g.wpe, B, T, C, 0);
}
static void encoder_bwd(void)
{
    pw_encoder_backward_cuda(g.dw, g.dx, g.dy, &g.tokg, &g.posg, C, 0);
}
static void ln_fwd(void)
{
    pw_layernorm_forward_cuda(g.y, g.mean, g.rstd, g.x, g.lnw, g.lnb, N, C, 0);
}
/* LayerNorm's forward through the float4 kernel (pw_cuda_set_ln_vec), and the residual form a
 * bf16 model runs (the sum written, the result in bfloat16, the statistics kept) both ways, at
 * the step's rows and at a decode step's 256 */
enum { LN_DEC = 256 };
static void ln_fwd_vec(void)
{
    pw_cuda_set_ln_vec(1);
    ln_fwd();
    pw_cuda_set_ln_vec(0);
}
static void res_ln(int rows, int vec)
{
    pw_cuda_set_ln_vec(vec);
    pw_residual_layernorm_forward_cuda(g.y, NULL, g.y16, g.mean, g.rstd, g.x, g.dx, g.lnw, g.lnb,
                                       rows, C, 0);
    pw_cuda_set_ln_vec(0);
}
static void res_ln_all(void) { res_ln(N, 0); }
static void res_ln_all_vec(void) { res_ln(N, 1); }
static void res_ln_dec(void) { res_ln(LN_DEC, 0); }
static void res_ln_dec_vec(void) { res_ln(LN_DEC, 1); }
static void ln_bwd(void)
{
    pw_layernorm_backward_cuda(g.dx, NULL, g.dlnw, g.dlnb, g.dy, g.x, g.lnw, g.mean, g.rstd, N, C,
                               0);
}
/* ... at the row counts of a PPO micro batch (8 rows of 309 tokens) and of 4096: the one pass
 * chooses fewer rows a warp there (pw_lnb_rows, launch.cuh) */
enum { LN_PPO = 2472, LN_MID = 4096 };
static void ln_bwd_ppo(void)
{
    pw_layernorm_backward_cuda(g.dx, NULL, g.dlnw, g.dlnb, g.dy, g.x, g.lnw, g.mean, g.rstd,
                               LN_PPO, C, 0);
}
static void ln_bwd_mid(void)
{
    pw_layernorm_backward_cuda(g.dx, NULL, g.dlnw, g.dlnb, g.dy, g.x, g.lnw, g.mean, g.rstd,
                               LN_MID, C, 0);
}
static void qkv_fwd(void) { pw_matmul_forward_cuda(g.qkv, g.x, g.w, g.bias, N, C, 3 * C, 0); }
static void qkv_bwd(void)
{
    pw_matmul_backward_cuda(g.dx, g.dw, g.dbias, g.dqkv, g.x, g.w, N, C, 3 * C, 0, 0);
}
static void fc_fwd(void) { pw_matmul_forward_cuda(g.fc, g.x, g.w, g.bias, N, C, 4 * C, 0); }
static void fcproj_fwd(void) { pw_matmul_forward_cuda(g.y, g.fc, g.w, g.bias, N, 4 * C, C, 0); }
static void lm_fwd(void) { pw_matmul_forward_cuda(g.logits, g.x, g.wte, NULL, N, C, V, 0); }
static void lm_bwd(void)
{
    pw_matmul_backward_cuda(g.dx, g.dw, NULL, g.dlogits, g.x, g.wte, N, C, V, 0, 0);
}
static void qkv16_fwd(void)
{
    pw_matmul_forward_bf16_cuda(g.qkv, g.x16, g.w16, g.bias, N, C, 3 * C, 0);
}
/* the bias seeded by its own kernel and read back by the GEMM (beta = 1): the path the cuBLASLt
 * epilogue replaces */
static void fc16_fwd(void)
{
    pw_matmul_forward_bf16_cuda(g.fc, g.x16, g.w16, g.bias, N, C, 4 * C, 0);
}
static void fc16_fwd_seeded(void)
{
    pw_cuda_set_epilogue(0);
    fc16_fwd();
    pw_cuda_set_epilogue(1);
}
/* a bf16 model keeps the fc product rounded: made by the GEMM itself, against the float32
 * output converted by a kernel of its own (what it did before) */
static void fc16_out16(void) /* with its bias in float32: the slow kernel */
{
    pw_cuda_set_lt_bias16(0);
    pw_matmul_forward_bf16_out_cuda(g.fc16, g.x16, g.w16, g.bias, N, C, 4 * C, 0);
    pw_cuda_set_lt_bias16(1);
}
/* the same with the bias rounded to bfloat16 for cuBLASLt (pw_cuda_set_lt_bias16, the default) */
static void fc16_out16_b16(void)
{
    pw_matmul_forward_bf16_out_cuda(g.fc16, g.x16, g.w16, g.bias, N, C, 4 * C, 0);
}
static void fc16_convert(void)
{
    fc16_fwd();
    pw_f32_to_bf16_cuda(g.fc16, g.fc, (size_t)N * 4 * C, 0);
}
static void lm16_fwd(void)
{
    pw_matmul_forward_bf16_cuda(g.logits, g.x16, g.w16, NULL, N, C, V, 0);
}
static void lm16_bwd(void)
{
    pw_matmul_backward_bf16_cuda(g.dx, g.dw, NULL, g.dy16, V, g.x16, g.w16, N, C, V, 0, 0);
}
static void att_fwd(void) { pw_attention_forward_cuda(g.y, g.att, g.qkv, g.mask, B, T, C, NH, 0); }
static void att_bwd(void)
{
    pw_attention_backward_cuda(g.dqkv, g.dy, g.qkv, g.att, g.mask, B, T, C, NH, 0);
}
/* the model's attention at precision bf16: the tensor-core kernels (attention_bf16.cu) */
static void att_fwd_tc(void)
{
    /* as a bf16 model calls it: the output rounded only */
    pw_attention_gqa_forward_bf16_cuda(NULL, g.y16, g.att, g.qkv16, g.mask, B, T, NH, NH, C / NH,
                                       0);
}
static void att_bwd_tc(void)
{
    pw_attention_gqa_backward_bf16_cuda(g.dqkv, NULL, g.dy, g.qkv16, g.y16, g.att, g.mask, B, T,
                                        NH, NH, C / NH, 0);
}
/* the same built for three blocks an SM (pw_cuda_set_flash_blocks(3)): the 64 bucket's choice */
static void att_fwd_tc3(void)
{
    pw_cuda_set_flash_blocks(3);
    att_fwd_tc();
    pw_cuda_set_flash_blocks(2);
}
static void att_bwd_tc3(void)
{
    pw_cuda_set_flash_blocks(3);
    att_bwd_tc();
    pw_cuda_set_flash_blocks(2);
}
/* the attention on Hopper's warpgroup products (pw_cuda_set_flash_wgmma; where the device has
 * none, the same calls on mma.sync: wgmma_calls in the RESULT line says which ran) */
static void att_fwd_wg(void)
{
    pw_cuda_set_flash_wgmma(1);
    att_fwd_tc();
    pw_cuda_set_flash_wgmma(0);
}
static void att_bwd_wg(void)
{
    pw_cuda_set_flash_wgmma(1);
    att_bwd_tc();
    pw_cuda_set_flash_wgmma(0);
}
/* the same in a mode of its schedule (pw_cuda_set_flash_wgmma_mode): what a mode that the GPU
 * gets right would cost, beside the schedule as written */
#define ATT_WG_MODE(name, fn, bits)                                                              \
    static void name(void)                                                                       \
    {                                                                                            \
        pw_cuda_set_flash_wgmma_mode(bits);                                                      \
        fn();                                                                                    \
        pw_cuda_set_flash_wgmma_mode(0);                                                         \
    }
ATT_WG_MODE(att_fwd_wg_serial, att_fwd_wg, PW_WGMMA_SERIAL)
ATT_WG_MODE(att_bwd_wg_serial, att_bwd_wg, PW_WGMMA_SERIAL)
ATT_WG_MODE(att_fwd_wg_one, att_fwd_wg, PW_WGMMA_ONE_GROUP)
ATT_WG_MODE(att_bwd_wg_one, att_bwd_wg, PW_WGMMA_ONE_GROUP)
ATT_WG_MODE(att_fwd_wg_each, att_fwd_wg, PW_WGMMA_BATCH_EACH)
ATT_WG_MODE(att_bwd_wg_each, att_bwd_wg, PW_WGMMA_BATCH_EACH)
ATT_WG_MODE(att_fwd_wg_fresh, att_fwd_wg, PW_WGMMA_ACC_FRESH)
ATT_WG_MODE(att_bwd_wg_fresh, att_bwd_wg, PW_WGMMA_ACC_FRESH)
/* the backward with dq made by the dk/dv kernel (pw_cuda_set_flash_fused_bwd), both builds */
static void att_bwd_fused(void)
{
    pw_cuda_set_flash_fused_bwd(1);
    att_bwd_tc();
    pw_cuda_set_flash_fused_bwd(0);
}
static void att_bwd_fused3(void)
{
    pw_cuda_set_flash_blocks(3);
    att_bwd_fused();
    pw_cuda_set_flash_blocks(2);
}
/* the same calls on the GEMM path (pw_cuda_set_flash(0)), the fused kernels' comparison */
static void att_fwd_gemm(void)
{
    pw_cuda_set_flash(0);
    att_fwd();
    pw_cuda_set_flash(1);
}
static void att_bwd_gemm(void)
{
    pw_cuda_set_flash(0);
    att_bwd();
    pw_cuda_set_flash(1);
}
/* one decode step's attention over a KV cache: DB rows, each one new token at slot DK - 1 (DK
 * keys: 64 prompt tokens and 256 new ones, the mean over a 512-token generation), the caches
 * (DB, NH, DT, hs) of float32 or bfloat16 */
enum { DB = 256, DK = 320, DT = 576 };
typedef struct Decode {
    float *qkv, *out, *k32, *v32;
    pw_bf16 *k16, *v16;
    int *row, *off, *slot;
} Decode;
static Decode dc;
static void decode_setup(void)
{
    size_t cache = (size_t)DB * DT * C;
    dc.qkv = devf((size_t)DB * 3 * C, 1.0f);
    dc.out = devf((size_t)DB * C, 0.0f);
    dc.k32 = devf(cache, 1.0f);
    dc.v32 = devf(cache, 1.0f);
    dc.k16 = dev16(dc.k32, cache);
    dc.v16 = dev16(dc.v32, cache);
    int *h = malloc(sizeof(int) * (DB + 1));
    for (int i = 0; i <= DB; i++) h[i] = i;
    dc.row = devi(h, DB);
    dc.off = devi(h, DB + 1);
    for (int i = 0; i < DB; i++) h[i] = DK - 1;
    dc.slot = devi(h, DB);
    free(h);
    PW_CUDA_CHECK(cudaDeviceSynchronize());
}
static void decode32(void)
{
    pw_attention_cache_gqa_forward_cuda(dc.out, dc.k32, dc.v32, NULL, dc.qkv, dc.row, dc.off,
                                        dc.slot, DB, DB, DT, NH, NH, C / NH, 0);
}
static void decode16(void)
{
    pw_attention_cache_gqa_forward_bf16_cuda(dc.out, dc.k16, dc.v16, NULL, dc.qkv, dc.row, dc.off,
                                             dc.slot, DB, DB, DT, NH, NH, C / NH, 0);
}
/* the same through the tile kernel (pw_cuda_set_cache_split(0)), the split kernel's comparison */
static void decode32_tiles(void)
{
    pw_cuda_set_cache_split(0);
    decode32();
    pw_cuda_set_cache_split(1);
}
static void decode16_tiles(void)
{
    pw_cuda_set_cache_split(0);
    decode16();
    pw_cuda_set_cache_split(1);
}

static void gelu_fwd(void) { pw_gelu_forward_cuda(g.dfc, g.fc, (size_t)N * 4 * C, 0); }
static void gelu_bwd(void) { pw_gelu_backward_cuda(g.dfc, g.fc, g.fc, (size_t)N * 4 * C, 0); }
/* the bf16 model's forms, 8 elements a thread (16-byte aligned rows), and again one element a
 * thread (the same rows 2 bytes off: the kernels' other path), 8 elements fewer for room */
enum { NG = N * 4 * C - 8 };
static void gelu16_fwd(void) { pw_gelu_forward_bf16_cuda(g.fc16, (pw_bf16 *)g.dfc, NULL, NG, 0); }
static void gelu16_fwd_one(void)
{
    pw_gelu_forward_bf16_cuda(g.fc16 + 1, (pw_bf16 *)g.dfc + 1, NULL, NG, 0);
}
static void gelu16_bwd(void)
{
    pw_gelu_backward_bf16_cuda(g.fc16, (const pw_bf16 *)g.dfc, g.fc, NG, 0);
}
static void gelu16_bwd_one(void)
{
    pw_gelu_backward_bf16_cuda(g.fc16 + 1, (const pw_bf16 *)g.dfc + 1, g.fc + 1, NG, 0);
}
/* GPT-2's MLP at bf16 as the model runs it (pw_matmul_gelu_forward_bf16_cuda and the
 * down-projection's backward through GELU), GELU as kernels of its own or in cuBLASLt's
 * epilogues (pw_cuda_set_lt_gelu): out in dfc's first half (as bfloat16), GELU's input kept in
 * fc16; the backward's dout x16, its input (GELU's output) dfc's second half, dpre its first */
static void mlp_fwd(int gelu)
{
    pw_cuda_set_lt_gelu(gelu);
    pw_matmul_gelu_forward_bf16_cuda((pw_bf16 *)g.dfc, g.fc16, NULL, g.x16, g.w16, g.bias, N, C,
                                     4 * C, 0);
    pw_cuda_set_lt_gelu(1); /* the default */
}
static void mlp_bwd(int gelu)
{
    pw_cuda_set_lt_gelu(gelu);
    pw_matmul_backward_gelu_bf16_cuda((pw_bf16 *)g.dfc, g.fc16, g.fc, g.dw, g.dbias, g.x16, C,
                                      (pw_bf16 *)g.dfc + (size_t)N * 4 * C, g.w16, N, 4 * C, C, 0);
    pw_cuda_set_lt_gelu(1); /* the default */
}
static void mlp_fwd_kernels(void) { mlp_fwd(0); }
static void mlp_fwd_epilogue(void) { mlp_fwd(1); }
static void mlp_bwd_kernels(void) { mlp_bwd(0); }
static void mlp_bwd_epilogue(void) { mlp_bwd(1); }
/* the bias gradient's column sum alone (a backward product with neither dinp nor dweight): over
 * the (N, 4C) bfloat16 dout of GPT-2's MLP up-projection and the (N, C) of a projection back,
 * the scalar kernel's 2 bytes a thread a row and the 8 columns a thread of
 * pw_cuda_set_colsum_vec */
static void colsum_at(int OC, int vec)
{
    pw_cuda_set_colsum_vec(vec);
    pw_matmul_backward_bf16_cuda(NULL, NULL, g.dbias, g.dy16, OC, g.x16, g.w16, N, C, OC, 0, 0);
    pw_cuda_set_colsum_vec(1);
}
static void colsum_fc(void) { colsum_at(4 * C, 0); }
static void colsum_fc_vec(void) { colsum_at(4 * C, 1); }
static void colsum_proj(void) { colsum_at(C, 0); }
static void colsum_proj_vec(void) { colsum_at(C, 1); }
static void to16(void) { pw_f32_to_bf16_cuda((pw_bf16 *)g.grads, g.params, NPARAMS - 8, 0); }
static void to16_one(void)
{
    pw_f32_to_bf16_cuda((pw_bf16 *)g.grads + 1, g.params + 1, NPARAMS - 8, 0);
}
/* A decode step's products at DR rows as a cache pass makes them, bf16 operands and float32
 * results: GPT-2's four a layer with their biases, and Qwen2.5-0.5B's down-projection (no bias;
 * 14 tiles of 128 x 128 walking K = 4864); as the heuristic picks, with K split in 4
 * (pw_cuda_set_lt_split) and with the algorithms timed, split forms among them
 * (pw_cuda_set_lt_tune, which takes the product without a bias through cuBLASLt too). Counted
 * against the copy: the bytes of weights, inputs and outputs. */
enum { DR = 256, QC = 896, QF = 4864 };
static void dec_products(void)
{
    pw_matmul_forward_bf16_cuda(g.fc, g.x16, g.w16, g.bias, DR, C, 3 * C, 0);
    pw_matmul_forward_bf16_cuda(g.fc, g.x16, g.w16, g.bias, DR, C, C, 0);
    pw_matmul_forward_bf16_cuda(g.fc, g.x16, g.w16, g.bias, DR, C, 4 * C, 0);
    pw_matmul_forward_bf16_cuda(g.fc, g.qkv16, g.w16, g.bias, DR, 4 * C, C, 0);
}
static void dec_down(void)
{
    pw_matmul_forward_bf16_cuda(g.fc, g.qkv16, g.w16, NULL, DR, QF, QC, 0);
}
/* fn with the products timed (tune) or split in `split` parts, then the defaults again */
static void under(int tune, int split, void (*fn)(void))
{
    pw_cuda_set_lt_tune(tune);
    pw_cuda_set_lt_split(split);
    fn();
    pw_cuda_set_lt_tune(0);
    pw_cuda_set_lt_split(0);
}
static void dec_products_split(void) { under(0, 4, dec_products); }
static void dec_products_timed(void) { under(1, 0, dec_products); }
static void dec_down_split(void) { under(0, 4, dec_down); }
static void dec_down_timed(void) { under(1, 0, dec_down); }
/* the same through the few-row kernel of our own (pw_cuda_set_skinny: K split in parts summed
 * in the same launch, skinny_kernels.cuh) */
static void skinny(void (*fn)(void))
{
    pw_cuda_set_skinny(1);
    fn();
    pw_cuda_set_skinny(0);
}
static void dec_products_skinny(void) { skinny(dec_products); }
static void dec_down_skinny(void) { skinny(dec_down); }
/* and with its grid aimed at 1 and 4 blocks an SM instead of 2 (pw_cuda_set_skinny_blocks) */
static void dec_products_skinny_aim(int per_sm)
{
    pw_cuda_set_skinny_blocks(per_sm);
    skinny(dec_products);
    pw_cuda_set_skinny_blocks(0);
}
/* GPT-2's MLP up-projection of a decode step with its GELU (a cache pass's call: no
 * pre-activation kept, g.fc the float32 scratch): cuBLAS's product and GELU's kernel; the
 * few-row kernel's product and GELU's kernel; the few-row kernel with GELU in its epilogue */
static void dec_up_gelu(void)
{
    pw_matmul_gelu_forward_bf16_cuda(g.fc16, NULL, g.fc, g.x16, g.w16, g.bias, DR, C, 4 * C, 0);
}
static void dec_up_gelu_apart(void)
{
    pw_cuda_set_skinny(1);
    pw_matmul_forward_bf16_cuda(g.fc, g.x16, g.w16, g.bias, DR, C, 4 * C, 0);
    pw_cuda_set_skinny(0);
    pw_gelu_forward_bf16_cuda(g.fc16, NULL, g.fc, (size_t)DR * 4 * C, 0);
}
static void dec_up_gelu_fused(void) { skinny(dec_up_gelu); }
/* the Qwen shape's [gate | up] product of a decode step with its SwiGLU (a cache pass's call,
 * g.fc the float32 scratch) the same three ways */
static void dec_gu_swiglu(void)
{
    pw_matmul_swiglu_forward_bf16_cuda(g.fc16, g.fc, g.x16, g.w16, DR, QC, QF, 0);
}
static void dec_gu_swiglu_apart(void)
{
    pw_cuda_set_skinny(1);
    pw_matmul_forward_bf16_cuda(g.fc, g.x16, g.w16, NULL, DR, QC, 2 * QF, 0);
    pw_cuda_set_skinny(0);
    pw_swiglu_forward_bf16_cuda(g.fc16, NULL, g.fc, DR, QF, 0);
}
static void dec_gu_swiglu_fused(void) { skinny(dec_gu_swiglu); }
static void dec_products_skinny1(void) { dec_products_skinny_aim(1); }
static void dec_products_skinny4(void) { dec_products_skinny_aim(4); }
/* A weight gradient (768 x 768) summed over the batch's rows: 10240 (a multiple of 64: cuBLAS's
 * own choice, split or not) and 10248 (8 past: the 10240 so, then the tail of 8 rows through
 * cuBLASLt asked for no split, matmul.cu's gemm; an H200 took 0.230 ms to 0.028 when the whole
 * product went unsplit), the price of that guard */
enum { WG_ROWS = 10240 };
static void wgrad_rows(int rows)
{
    pw_matmul_backward_bf16_cuda(NULL, g.dw, NULL, g.x16, C, g.x16, g.w16, rows, C, C, 0, 0);
}
static void wgrad_whole(void) { wgrad_rows(WG_ROWS); }
static void wgrad_tail(void) { wgrad_rows(WG_ROWS + 8); }
static void res_fwd(void) { pw_residual_forward_cuda(g.y, g.x, g.dx, (size_t)N * C, 0); }
static void res_bwd(void) { pw_residual_backward_cuda(g.dx, g.x, g.dy, (size_t)N * C, 0); }
static void lp_fwd(void)
{
    pw_logprobs_forward_cuda(g.rowv, g.rowg, NULL, g.logits, g.targets, N, V, V, 0);
}
static void lp_bwd(void)
{
    pw_logprobs_backward_cuda(g.dlogits, g.logits, NULL, g.targets, g.rowv, g.rowg, N, V, V, 0);
}
static void ce_fwd(void) { pw_crossentropy_forward_cuda(g.rowv, g.logits, g.targets, N, V, 0); }
/* the model's form: rows VP apart, the forward keeping its statistics, the bf16 backward (a bf16
 * LM head's) reading them, or making them again (the second pass over the logits it saves) */
static void lp_fwd_pad(void)
{
    pw_logprobs_forward_cuda(g.rowv, g.rowg, g.lpst, g.logits, g.targets, N, V, VP, 0);
}
static void lp_bwd16_kept(void)
{
    pw_logprobs_backward_bf16_cuda((pw_bf16 *)g.dlogits, g.logits, g.lpst, g.targets, g.rowv,
                                   g.rowg, N, V, VP, 1.0f, 0);
}
static void lp_bwd16_made(void)
{
    pw_logprobs_backward_bf16_cuda((pw_bf16 *)g.dlogits, g.logits, NULL, g.targets, g.rowv,
                                   g.rowg, N, V, VP, 1.0f, 0);
}
/* GPT-2 124M's weights payload at bf16 (pw_model_weights_out, src/model/payload.c): its 16
 * tensors (the matrices in bfloat16, the rest in float32; 12 layers) and the zeros after the
 * float32 part, packed from g.logits into g.dlogits, a copy each or one batch */
enum { PAY_N = 17 };
static void *pay_dst[PAY_N];
static const void *pay_src[PAY_N];
static size_t pay_bytes[PAY_N], pay_total;
static void payload_setup(void)
{
    const size_t L = 12, c = C, s[PAY_N] = {
        VP * c * 2, (size_t)T * c * 4, L * c * 4, L * c * 4, L * c * 3 * c * 2, L * 3 * c * 4,
        L * c * c * 2, L * c * 4, L * c * 4, L * c * 4, L * c * 4 * c * 2, L * 4 * c * 4,
        L * 4 * c * c * 2, L * c * 4, c * 4, c * 4, 48};
    size_t at = 0;
    for (int i = 0; i < PAY_N; i++) {
        pay_src[i] = i == PAY_N - 1 ? NULL : (const char *)g.logits + at;
        pay_dst[i] = (char *)g.dlogits + at;
        pay_bytes[i] = s[i];
        pay_total += s[i];
        at += (s[i] + 255) / 256 * 256;
    }
}
static void pack_each(void)
{
    for (int i = 0; i < PAY_N; i++) {
        if (pay_src[i])
            PW_CUDA_CHECK(cudaMemcpyAsync(pay_dst[i], pay_src[i], pay_bytes[i],
                                          cudaMemcpyDeviceToDevice, 0));
        else
            PW_CUDA_CHECK(cudaMemsetAsync(pay_dst[i], 0, pay_bytes[i], 0));
    }
}
static void pack_batch(void) { pw_copy_batch_cuda(pay_dst, pay_src, pay_bytes, PAY_N, 0); }

static void adamw(void)
{
    pw_adamw_update_cuda(g.params, NULL, g.grads, 1.0f, g.m, g.v, NPARAMS, 3e-4f, 0.9f, 0.95f,
                         1e-8f, 0.1f, 10, 0);
}
/* a bf16 model's clipped update: the scaling pass, the update and the conversion into its copy
 * of the weights, against the one update that does all three (pw_adamw_update's gscale and
 * params16). The scale is 1 so that repeated calls leave the gradients as they are. */
static void adamw_apart(void)
{
    pw_scale_cuda(g.grads, 1.0f, NPARAMS, 0);
    pw_adamw_update_cuda(g.params, NULL, g.grads, 1.0f, g.m, g.v, NPARAMS, 3e-4f, 0.9f, 0.95f,
                         1e-8f, 0.1f, 10, 0);
    pw_f32_to_bf16_cuda(g.params16, g.params, NPARAMS, 0);
}
static void adamw_fused(void)
{
    pw_adamw_update_cuda(g.params, g.params16, g.grads, 1.0f, g.m, g.v, NPARAMS, 3e-4f, 0.9f,
                         0.95f, 1e-8f, 0.1f, 10, 0);
}
static double sumsq_result;
static void sumsq(void) { sumsq_result += pw_sumsq_cuda(g.grads, NPARAMS, 0); }
static void scale(void) { pw_scale_cuda(g.grads, 1.0f, NPARAMS, 0); }

/* milliseconds per call: one warm-up call, then reps calls between two events */
static double time_ms(void (*fn)(void), int reps)
{
    cudaEvent_t e0, e1;
    PW_CUDA_CHECK(cudaEventCreate(&e0));
    PW_CUDA_CHECK(cudaEventCreate(&e1));
    fn();
    PW_CUDA_CHECK(cudaEventRecord(e0, 0));
    for (int i = 0; i < reps; i++) fn();
    PW_CUDA_CHECK(cudaEventRecord(e1, 0));
    PW_CUDA_CHECK(cudaEventSynchronize(e1));
    PW_CUDA_CHECK(cudaGetLastError());
    float ms = 0.0f;
    PW_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    PW_CUDA_CHECK(cudaEventDestroy(e0));
    PW_CUDA_CHECK(cudaEventDestroy(e1));
    return ms / reps;
}

/* ---- references: what the GPU does at best, measured here */
static float *copy_src, *copy_dst;
static size_t copy_bytes;
static void copy(void)
{
    PW_CUDA_CHECK(cudaMemcpyAsync(copy_dst, copy_src, copy_bytes, cudaMemcpyDeviceToDevice, 0));
}
enum { G = 8192 };
static float *ga, *gb, *gc;
static pw_bf16 *ga16, *gb16;
static void gemm32(void) { pw_matmul_forward_cuda(gc, ga, gb, NULL, G, G, G, 0); }
static void gemm16(void) { pw_matmul_forward_bf16_cuda(gc, ga16, gb16, NULL, G, G, G, 0); }

/* what a row measures against: memory traffic, fp32 GEMM flops or bf16 GEMM flops */
enum Ref { BW, F32, BF16 };

typedef struct Row {
    const char *name;
    void (*fn)(void);
    double bytes, flops; /* the traffic or work one call needs at least */
    enum Ref ref;
} Row;

int main(int argc, char **argv)
{
    if (pw_device_count() == 0) {
        printf("bench_kernels_cuda: no CUDA device, skipped\n");
        return 77;
    }
    int reps = argc > 1 ? atoi(argv[1]) : 10;
    if (reps < 1) reps = 1;
    PW_CUDA_CHECK(cudaSetDevice(0));
    struct cudaDeviceProp prop;
    PW_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    srand(1);

    copy_bytes = 1ul << 30;
    copy_src = devf(copy_bytes / 4, 1.0f);
    copy_dst = dev(copy_bytes);
    double copy_gbs = 2.0 * copy_bytes / (time_ms(copy, reps) * 1e-3) / 1e9; /* read + write */
    PW_CUDA_CHECK(cudaFree(copy_src));
    PW_CUDA_CHECK(cudaFree(copy_dst));
    ga = devf((size_t)G * G, 1.0f);
    gb = devf((size_t)G * G, 1.0f);
    gc = dev(sizeof(float) * G * G);
    ga16 = dev16(ga, (size_t)G * G);
    gb16 = dev16(gb, (size_t)G * G);
    double gflop = 2.0 * G * G * (double)G;
    double f32_tflops = gflop / (time_ms(gemm32, reps) * 1e-3) / 1e12;
    double bf16_tflops = gflop / (time_ms(gemm16, reps) * 1e-3) / 1e12;
    PW_CUDA_CHECK(cudaFree(ga));
    PW_CUDA_CHECK(cudaFree(gb));
    PW_CUDA_CHECK(cudaFree(gc));
    PW_CUDA_CHECK(cudaFree(ga16));
    PW_CUDA_CHECK(cudaFree(gb16));

    setup(&g);
    decode_setup();
    payload_setup();
    const double f = 4.0, NC = (double)N * C, NV = (double)N * V, NP = (double)NPARAMS;
    const double TT = (double)B * NH * T * T, hs = C / NH;
    /* a decode step's products: bf16 weights (12 C^2 a GPT-2 layer) and inputs (7 C a row),
     * float32 outputs (9 C a row) */
    const double dec_bytes = 2.0 * (12.0 * C * C + DR * 7.0 * C) + 4.0 * DR * 9.0 * C;
    const double down_bytes = 2.0 * ((double)QF * QC + DR * (double)QF) + 4.0 * DR * QC;
    /* the up-projection's weights, input and bfloat16 activation: what the fused form moves */
    const double up_bytes = 2.0 * (4.0 * C * C + DR * 5.0 * C);
    /* the same of Qwen's [gate | up] product and SwiGLU */
    const double gu_bytes = 2.0 * (2.0 * QF * QC + DR * (double)(QC + QF));
    Row rows[] = {
        {"encoder forward", encoder_fwd, 3 * NC * f, 0, BW},
        {"encoder backward (row groups)", encoder_bwd, 5 * NC * f, 0, BW},
        {"layernorm forward", ln_fwd, 2 * NC * f, 0, BW},
        {"layernorm forward (float4)", ln_fwd_vec, 2 * NC * f, 0, BW},
        /* a and b read, the sum written, the result in bfloat16 */
        {"residual layernorm, bf16 out", res_ln_all, 14 * NC, 0, BW},
        {"residual layernorm, bf16, float4", res_ln_all_vec, 14 * NC, 0, BW},
        {"residual layernorm, 256 rows", res_ln_dec, 14.0 * LN_DEC * C, 0, BW},
        {"residual layernorm, 256, float4", res_ln_dec_vec, 14.0 * LN_DEC * C, 0, BW},
        {"layernorm backward", ln_bwd, 6 * NC * f, 0, BW},
        {"layernorm backward, 2472 rows", ln_bwd_ppo, 6.0 * LN_PPO * C * f, 0, BW},
        {"layernorm backward, 4096 rows", ln_bwd_mid, 6.0 * LN_MID * C * f, 0, BW},
        {"matmul qkv C->3C forward", qkv_fwd, 0, 2 * NC * 3 * C, F32},
        {"matmul qkv C->3C backward", qkv_bwd, 0, 4 * NC * 3 * C, F32},
        {"matmul fc C->4C forward", fc_fwd, 0, 2 * NC * 4 * C, F32},
        {"matmul fcproj 4C->C forward", fcproj_fwd, 0, 2 * NC * 4 * C, F32},
        {"matmul LM head C->V forward", lm_fwd, 0, 2 * NC * V, F32},
        {"matmul LM head C->V backward", lm_bwd, 0, 4 * NC * V, F32},
        {"bf16 matmul qkv forward", qkv16_fwd, 0, 2 * NC * 3 * C, BF16},
        {"bf16 matmul fc forward", fc16_fwd, 0, 2 * NC * 4 * C, BF16},
        {"bf16 matmul fc fwd, bias seeded", fc16_fwd_seeded, 0, 2 * NC * 4 * C, BF16},
        {"bf16 matmul fc fwd, out16 b32", fc16_out16, 0, 2 * NC * 4 * C, BF16},
        {"bf16 matmul fc fwd, out16 b16", fc16_out16_b16, 0, 2 * NC * 4 * C, BF16},
        {"bf16 matmul fc fwd + to_bf16", fc16_convert, 0, 2 * NC * 4 * C, BF16},
        {"bf16 matmul LM head forward", lm16_fwd, 0, 2 * NC * V, BF16},
        {"bf16 matmul LM head backward", lm16_bwd, 0, 4 * NC * V, BF16},
        /* counted as full T x T tiles, 2 products forward and 4 backward, for both paths (the
         * fused kernels skip the upper triangle and do more products in backward): compare ms */
        {"attention forward (fused)", att_fwd, 0, 2 * 2 * TT * hs, F32},
        {"attention backward (fused)", att_bwd, 0, 4 * 2 * TT * hs, F32},
        {"attention forward (bf16 tensor)", att_fwd_tc, 0, 2 * 2 * TT * hs, BF16},
        {"attention backward (bf16 tensor)", att_bwd_tc, 0, 4 * 2 * TT * hs, BF16},
        {"attention fwd (bf16, 3 blocks/SM)", att_fwd_tc3, 0, 2 * 2 * TT * hs, BF16},
        {"attention fwd (bf16, wgmma)", att_fwd_wg, 0, 2 * 2 * TT * hs, BF16},
        {"attention bwd (bf16, wgmma)", att_bwd_wg, 0, 4 * 2 * TT * hs, BF16},
        {"attention fwd (wgmma, serial)", att_fwd_wg_serial, 0, 2 * 2 * TT * hs, BF16},
        {"attention bwd (wgmma, serial)", att_bwd_wg_serial, 0, 4 * 2 * TT * hs, BF16},
        {"attention fwd (wgmma, one group)", att_fwd_wg_one, 0, 2 * 2 * TT * hs, BF16},
        {"attention bwd (wgmma, one group)", att_bwd_wg_one, 0, 4 * 2 * TT * hs, BF16},
        {"attention fwd (wgmma, batch each)", att_fwd_wg_each, 0, 2 * 2 * TT * hs, BF16},
        {"attention bwd (wgmma, batch each)", att_bwd_wg_each, 0, 4 * 2 * TT * hs, BF16},
        {"attention fwd (wgmma, fresh sums)", att_fwd_wg_fresh, 0, 2 * 2 * TT * hs, BF16},
        {"attention bwd (wgmma, fresh sums)", att_bwd_wg_fresh, 0, 4 * 2 * TT * hs, BF16},
        {"attention bwd (bf16, 3 blocks/SM)", att_bwd_tc3, 0, 4 * 2 * TT * hs, BF16},
        {"attention bwd (bf16, fused dq)", att_bwd_fused, 0, 4 * 2 * TT * hs, BF16},
        {"attention bwd (bf16, fused dq, 3/SM)", att_bwd_fused3, 0, 4 * 2 * TT * hs, BF16},
        {"attention forward (GEMMs)", att_fwd_gemm, 0, 2 * 2 * TT * hs, F32},
        {"attention backward (GEMMs)", att_bwd_gemm, 0, 4 * 2 * TT * hs, F32},
        /* the keys and values every row reads: what a decode step's attention waits for */
        {"decode attention, fp32 cache", decode32, 2.0 * DB * DK * C * 4, 0, BW},
        {"decode attention, bf16 cache", decode16, 2.0 * DB * DK * C * 2, 0, BW},
        {"decode attention, fp32, tiles", decode32_tiles, 2.0 * DB * DK * C * 4, 0, BW},
        {"decode attention, bf16, tiles", decode16_tiles, 2.0 * DB * DK * C * 2, 0, BW},
        {"bf16 MLP up + GELU, kernels", mlp_fwd_kernels, 0, 2 * NC * 4 * C, BF16},
        {"bf16 MLP up + GELU, epilogue", mlp_fwd_epilogue, 0, 2 * NC * 4 * C, BF16},
        {"bf16 MLP down bwd + dGELU, kernels", mlp_bwd_kernels, 0, 4 * NC * 4 * C, BF16},
        {"bf16 MLP down bwd + dGELU, epilogue", mlp_bwd_epilogue, 0, 4 * NC * 4 * C, BF16},
        {"decode products (GPT-2, 256 rows)", dec_products, dec_bytes, 0, BW},
        {"decode products, K split in 4", dec_products_split, dec_bytes, 0, BW},
        {"decode products, timed", dec_products_timed, dec_bytes, 0, BW},
        {"decode products, few-row kernel", dec_products_skinny, dec_bytes, 0, BW},
        {"decode products, few-row, 1/SM", dec_products_skinny1, dec_bytes, 0, BW},
        {"decode products, few-row, 4/SM", dec_products_skinny4, dec_bytes, 0, BW},
        {"decode MLP up + GELU (GPT-2, 256)", dec_up_gelu, up_bytes, 0, BW},
        {"decode up + GELU, few-row + kernel", dec_up_gelu_apart, up_bytes, 0, BW},
        {"decode up + GELU, few-row epilogue", dec_up_gelu_fused, up_bytes, 0, BW},
        {"decode gate/up + SwiGLU (Qwen, 256)", dec_gu_swiglu, gu_bytes, 0, BW},
        {"decode gu + SwiGLU, few-row + kernel", dec_gu_swiglu_apart, gu_bytes, 0, BW},
        {"decode gu + SwiGLU, few-row epilogue", dec_gu_swiglu_fused, gu_bytes, 0, BW},
        {"decode down-proj (Qwen, 256 rows)", dec_down, down_bytes, 0, BW},
        {"decode down-proj, K split in 4", dec_down_split, down_bytes, 0, BW},
        {"decode down-proj, timed", dec_down_timed, down_bytes, 0, BW},
        {"decode down-proj, few-row kernel", dec_down_skinny, down_bytes, 0, BW},
        {"weight grad C x C, 10240 rows", wgrad_whole, 0, 2.0 * WG_ROWS * C * C, BF16},
        {"weight grad C x C, 10248 rows", wgrad_tail, 0, 2.0 * (WG_ROWS + 8) * C * C, BF16},
        {"gelu forward (N x 4C)", gelu_fwd, 2 * 4 * NC * f, 0, BW},
        {"gelu backward", gelu_bwd, 4 * 4 * NC * f, 0, BW},
        {"gelu fwd bf16 (8 a thread)", gelu16_fwd, 4.0 * NG, 0, BW},
        {"gelu fwd bf16 (1 a thread)", gelu16_fwd_one, 4.0 * NG, 0, BW},
        {"gelu bwd bf16 (8 a thread)", gelu16_bwd, 8.0 * NG, 0, BW},
        {"gelu bwd bf16 (1 a thread)", gelu16_bwd_one, 8.0 * NG, 0, BW},
        {"column sum bf16 (N x 4C)", colsum_fc, 2.0 * 4 * NC, 0, BW},
        {"column sum bf16 (N x 4C), 8 a thread", colsum_fc_vec, 2.0 * 4 * NC, 0, BW},
        {"column sum bf16 (N x C)", colsum_proj, 2.0 * NC, 0, BW},
        {"column sum bf16 (N x C), 8 a thread", colsum_proj_vec, 2.0 * NC, 0, BW},
        {"to_bf16 124M (8 a thread)", to16, 6.0 * (NPARAMS - 8), 0, BW},
        {"to_bf16 124M (1 a thread)", to16_one, 6.0 * (NPARAMS - 8), 0, BW},
        {"residual forward", res_fwd, 3 * NC * f, 0, BW},
        {"residual backward (both)", res_bwd, 5 * NC * f, 0, BW},
        {"logprobs+entropy forward (V)", lp_fwd, NV * f, 0, BW},
        {"logprobs backward", lp_bwd, 3 * NV * f, 0, BW},
        {"crossentropy forward", ce_fwd, NV * f, 0, BW},
        {"logprobs fwd, rows VP, kept", lp_fwd_pad, NV * f, 0, BW},
        {"logprobs bwd bf16, rows VP, kept", lp_bwd16_kept, 1.5 * N * (double)VP * f, 0, BW},
        {"logprobs bwd bf16, rows VP, made", lp_bwd16_made, 1.5 * N * (double)VP * f, 0, BW},
        {"weights pack: a copy each (17)", pack_each, 2.0 * (double)pay_total, 0, BW},
        {"weights pack: one batch", pack_batch, 2.0 * (double)pay_total, 0, BW},
        {"adamw 124M", adamw, 7 * NP * f, 0, BW},
        {"adamw, clip, bf16 copy: 3 passes", adamw_apart, 7 * NP * f + NP * 2, 0, BW},
        {"adamw, clip, bf16 copy: fused", adamw_fused, 7 * NP * f + NP * 2, 0, BW},
        {"sumsq 124M (waits)", sumsq, NP * f, 0, BW},
        {"scale 124M", scale, 2 * NP * f, 0, BW},
    };
    int nrows = (int)(sizeof rows / sizeof rows[0]);

    printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount,
           prop.l2CacheSize >> 20);
    printf("shape: B=%d T=%d C=%d NH=%d V=%d, %d reps per kernel, fp32 GEMMs %s\n", B, T, C, NH, V,
           reps, pw_cuda_get_tf32() ? "tf32" : "pure fp32");
    printf("reference: copy %.0f GB/s (D2D, read+write), fp32 GEMM %.1f TFLOP/s, bf16 GEMM %.1f "
           "TFLOP/s (%dx%dx%d)\n\n",
           copy_gbs, f32_tflops, bf16_tflops, G, G, G);
    printf("%-32s %10s %12s %12s %8s\n", "kernel", "ms", "GB/s", "TFLOP/s", "of ref");
    double total = 0.0, att_f = 0.0, att_b = 0.0, lp_f = 0.0, qkv_tf = 0.0;
    double dec[4] = {0, 0, 0, 0};
    double gatt_f = 0.0, gatt_b = 0.0, tatt_f = 0.0, tatt_b = 0.0, fc16[4] = {0, 0, 0, 0};
    double tatt3_f = 0.0, tatt3_b = 0.0, lp16[3] = {0, 0, 0}, fc16b = 0.0, pack[2] = {0, 0};
    double vec[6] = {0, 0, 0, 0, 0, 0}; /* gelu fwd, bwd, to_bf16: 8 a thread, then 1 */
    double mlp[4] = {0, 0, 0, 0}; /* MLP fwd, bwd: GELU as kernels, then in the epilogues */
    double fused_b[2] = {0, 0};   /* the attention's backward with dq fused: 2, 3 blocks an SM */
    double wg_f = 0.0, wg_b = 0.0; /* the attention on the warpgroup products */
    double wgm[8] = {0}; /* its modes: serial, one group, batch each, fresh; fwd, bwd */
    unsigned long wg_calls0 = pw_cuda_flash_wgmma_calls();
    /* decode products: plain, split 4, timed, few-row kernel; the down-projection alike */
    double decp[8] = {0, 0, 0, 0, 0, 0, 0, 0}, aim[2] = {0, 0}; /* aim: 1 and 4 blocks an SM */
    double wgrad[2] = {0, 0}; /* the weight gradient over 10240 and 10248 rows */
    /* LayerNorm forward: scalar, float4; residual bf16 at N rows, at 256: scalar, float4 */
    double lnf[6] = {0, 0, 0, 0, 0, 0};
    double opt[3] = {0, 0, 0}; /* AdamW alone, a clipped bf16 update in 3 passes, fused */
    double csum[4] = {0, 0, 0, 0}; /* column sums: (N, 4C) scalar, 8 a thread; (N, C) both */
    unsigned long ln_vec0 = pw_cuda_ln_vec_calls();
    double upg[3] = {0, 0, 0}; /* decode up + GELU: cuBLAS, few-row apart, few-row fused */
    double gus[3] = {0, 0, 0}; /* decode gate/up + SwiGLU likewise */
    unsigned long plans0 = 0, split0 = 0, plans1 = 0, split1 = 0;
    pw_cuda_lt_plans(&plans0, &split0);
    unsigned long gelu0 = 0, gelu1 = 0;
    pw_cuda_gelu_epilogue_calls(&gelu0, NULL);
    unsigned long out_fused[2] = {0, 0}; /* the bf16-output rows' calls the epilogue took */
    for (int i = 0; i < nrows; i++) {
        Row *r = &rows[i];
        unsigned long f0 = 0, f1 = 0, u = 0;
        pw_cuda_epilogue_calls(&f0, &u);
        double ms = time_ms(r->fn, reps), s = ms * 1e-3;
        pw_cuda_epilogue_calls(&f1, &u);
        if (r->fn == fc16_out16) out_fused[0] = f1 - f0;
        if (r->fn == fc16_out16_b16) out_fused[1] = f1 - f0;
        double gbs = r->bytes / s / 1e9, tf = r->flops / s / 1e12;
        double ref =
            r->ref == BW ? gbs / copy_gbs : tf / (r->ref == F32 ? f32_tflops : bf16_tflops);
        printf("%-32s %10.3f ", r->name, ms);
        if (r->ref == BW)
            printf("%12.0f %12s %7.0f%%\n", gbs, "-", 100.0 * ref);
        else
            printf("%12s %12.2f %7.0f%%\n", "-", tf, 100.0 * ref);
        total += ms;
        if (r->fn == att_fwd) att_f = ms;
        if (r->fn == att_bwd) att_b = ms;
        if (r->fn == att_fwd_tc) tatt_f = ms;
        if (r->fn == att_bwd_tc) tatt_b = ms;
        if (r->fn == att_fwd_tc3) tatt3_f = ms;
        if (r->fn == att_fwd_wg) wg_f = ms;
        if (r->fn == att_bwd_wg) wg_b = ms;
        void (*const wg_modes[8])(void) = {att_fwd_wg_serial, att_bwd_wg_serial, att_fwd_wg_one,
                                           att_bwd_wg_one,    att_fwd_wg_each,   att_bwd_wg_each,
                                           att_fwd_wg_fresh,  att_bwd_wg_fresh};
        for (int k = 0; k < 8; k++)
            if (r->fn == wg_modes[k]) wgm[k] = ms;
        if (r->fn == att_bwd_tc3) tatt3_b = ms;
        if (r->fn == att_fwd_gemm) gatt_f = ms;
        if (r->fn == att_bwd_gemm) gatt_b = ms;
        if (r->fn == lp_fwd) lp_f = ms;
        if (r->fn == lp_fwd_pad) lp16[0] = ms;
        if (r->fn == lp_bwd16_kept) lp16[1] = ms;
        if (r->fn == lp_bwd16_made) lp16[2] = ms;
        if (r->fn == fc16_fwd) fc16[0] = ms;
        if (r->fn == fc16_fwd_seeded) fc16[1] = ms;
        if (r->fn == fc16_out16) fc16[2] = ms;
        if (r->fn == fc16_convert) fc16[3] = ms;
        if (r->fn == fc16_out16_b16) fc16b = ms;
        if (r->fn == pack_each) pack[0] = ms;
        if (r->fn == gelu16_fwd) vec[0] = ms;
        if (r->fn == gelu16_fwd_one) vec[1] = ms;
        if (r->fn == gelu16_bwd) vec[2] = ms;
        if (r->fn == gelu16_bwd_one) vec[3] = ms;
        if (r->fn == att_bwd_fused) fused_b[0] = ms;
        if (r->fn == att_bwd_fused3) fused_b[1] = ms;
        if (r->fn == mlp_fwd_kernels) mlp[0] = ms;
        if (r->fn == mlp_fwd_epilogue) mlp[1] = ms;
        if (r->fn == mlp_bwd_kernels) mlp[2] = ms;
        if (r->fn == mlp_bwd_epilogue) mlp[3] = ms;
        if (r->fn == to16) vec[4] = ms;
        if (r->fn == wgrad_whole) wgrad[0] = ms;
        if (r->fn == ln_fwd) lnf[0] = ms;
        if (r->fn == ln_fwd_vec) lnf[1] = ms;
        if (r->fn == res_ln_all) lnf[2] = ms;
        if (r->fn == res_ln_all_vec) lnf[3] = ms;
        if (r->fn == res_ln_dec) lnf[4] = ms;
        if (r->fn == res_ln_dec_vec) lnf[5] = ms;
        if (r->fn == wgrad_tail) wgrad[1] = ms;
        if (r->fn == dec_products) decp[0] = ms;
        if (r->fn == dec_products_split) decp[1] = ms;
        if (r->fn == dec_products_timed) decp[2] = ms;
        if (r->fn == dec_products_skinny) decp[3] = ms;
        if (r->fn == dec_products_skinny1) aim[0] = ms;
        if (r->fn == dec_products_skinny4) aim[1] = ms;
        if (r->fn == dec_up_gelu) upg[0] = ms;
        if (r->fn == dec_up_gelu_apart) upg[1] = ms;
        if (r->fn == dec_up_gelu_fused) upg[2] = ms;
        if (r->fn == dec_gu_swiglu) gus[0] = ms;
        if (r->fn == dec_gu_swiglu_apart) gus[1] = ms;
        if (r->fn == dec_gu_swiglu_fused) gus[2] = ms;
        if (r->fn == dec_down) decp[4] = ms;
        if (r->fn == dec_down_split) decp[5] = ms;
        if (r->fn == dec_down_timed) decp[6] = ms;
        if (r->fn == dec_down_skinny) decp[7] = ms;
        if (r->fn == to16_one) vec[5] = ms;
        if (r->fn == colsum_fc) csum[0] = ms;
        if (r->fn == colsum_fc_vec) csum[1] = ms;
        if (r->fn == colsum_proj) csum[2] = ms;
        if (r->fn == colsum_proj_vec) csum[3] = ms;
        if (r->fn == adamw) opt[0] = ms;
        if (r->fn == adamw_apart) opt[1] = ms;
        if (r->fn == adamw_fused) opt[2] = ms;
        if (r->fn == pack_batch) pack[1] = ms;
        if (r->fn == qkv_fwd) qkv_tf = tf;
        if (r->fn == decode32) dec[0] = ref;
        if (r->fn == decode16) dec[1] = ref;
        if (r->fn == decode32_tiles) dec[2] = ref;
        if (r->fn == decode16_tiles) dec[3] = ref;
    }
    unsigned long fused = 0, seeded = 0;
    pw_cuda_epilogue_calls(&fused, &seeded);
    printf("\nbias epilogue: %lu forwards fused in cuBLASLt, %lu seeded; of the bf16-output fc "
           "rows' calls, %lu (float32 bias) and %lu (bf16 bias) fused\n", fused, seeded,
           out_fused[0], out_fused[1]);
    pw_cuda_gelu_epilogue_calls(&gelu1, NULL);
    printf("GELU epilogues: %lu of the MLP rows' calls fused in cuBLASLt\n", gelu1 - gelu0);
    pw_cuda_lt_plans(&plans1, &split1);
    printf("cuBLASLt plans: %lu made, %lu of them split K\n", plans1 - plans0, split1 - split0);
    pw_cuda_release();
    printf("\nRESULT copy_gbs=%.0f fp32_gemm_tflops=%.1f bf16_gemm_tflops=%.1f qkv_fwd_tflops=%.2f "
           "attention_fwd_ms=%.3f attention_bwd_ms=%.3f attention_gemm_fwd_ms=%.3f "
           "attention_gemm_bwd_ms=%.3f attention_bf16_fwd_ms=%.3f attention_bf16_bwd_ms=%.3f "
           "attention_bf16_3blocks_fwd_ms=%.3f attention_bf16_3blocks_bwd_ms=%.3f "
           "logprobs_fwd_ms=%.3f decode_fp32_of_copy=%.2f decode_bf16_of_copy=%.2f "
           "decode_fp32_tiles_of_copy=%.2f decode_bf16_tiles_of_copy=%.2f "
           "fc_bf16_fwd_ms=%.3f fc_bf16_seeded_ms=%.3f fc_bf16_out_ms=%.3f "
           "fc_bf16_convert_ms=%.3f fc_bf16_out_bias16_ms=%.3f fc_bf16_out_fused=%lu "
           "fc_bf16_out_bias16_fused=%lu logprobs_fwd_padded_ms=%.3f logprobs_bwd16_kept_ms=%.3f "
           "logprobs_bwd16_made_ms=%.3f pack_each_ms=%.4f pack_batch_ms=%.4f "
           "gelu16_fwd_ms=%.3f gelu16_fwd_one_ms=%.3f gelu16_bwd_ms=%.3f gelu16_bwd_one_ms=%.3f "
           "to_bf16_ms=%.3f to_bf16_one_ms=%.3f mlp_fwd_kernels_ms=%.3f "
           "mlp_fwd_epilogue_ms=%.3f mlp_bwd_kernels_ms=%.3f mlp_bwd_epilogue_ms=%.3f "
           "gelu_epilogue_fused=%lu attention_bf16_fused_bwd_ms=%.3f "
           "attention_bf16_fused_bwd_3blocks_ms=%.3f decode_products_ms=%.4f "
           "decode_products_split4_ms=%.4f decode_products_timed_ms=%.4f "
           "decode_products_skinny_ms=%.4f decode_products_skinny_1sm_ms=%.4f "
           "decode_products_skinny_4sm_ms=%.4f decode_down_ms=%.4f decode_down_split4_ms=%.4f "
           "decode_down_timed_ms=%.4f decode_down_skinny_ms=%.4f decode_up_gelu_ms=%.4f "
           "decode_up_gelu_skinny_apart_ms=%.4f decode_up_gelu_skinny_fused_ms=%.4f "
           "skinny_calls=%lu skinny_gelu_calls=%lu lt_plans=%lu "
           "lt_plans_split=%lu wgrad_10240_ms=%.4f wgrad_10248_ms=%.4f "
           "attention_bf16_wgmma_fwd_ms=%.3f attention_bf16_wgmma_bwd_ms=%.3f wgmma_calls=%lu "
           "decode_gu_swiglu_ms=%.4f decode_gu_swiglu_skinny_apart_ms=%.4f "
           "decode_gu_swiglu_skinny_fused_ms=%.4f skinny_swiglu_calls=%lu ln_fwd_ms=%.4f "
           "ln_fwd_vec_ms=%.4f res_ln_ms=%.4f res_ln_vec_ms=%.4f res_ln_256_ms=%.4f "
           "res_ln_256_vec_ms=%.4f ln_vec_calls=%lu adamw_ms=%.4f adamw_apart_ms=%.4f "
           "adamw_fused_ms=%.4f colsum_fc_ms=%.4f colsum_fc_vec_ms=%.4f colsum_proj_ms=%.4f "
           "colsum_proj_vec_ms=%.4f wgmma_serial_fwd_ms=%.3f wgmma_serial_bwd_ms=%.3f "
           "wgmma_one_group_fwd_ms=%.3f wgmma_one_group_bwd_ms=%.3f wgmma_each_fwd_ms=%.3f "
           "wgmma_each_bwd_ms=%.3f wgmma_fresh_fwd_ms=%.3f wgmma_fresh_bwd_ms=%.3f "
           "total_ms=%.2f\n",
           copy_gbs, f32_tflops, bf16_tflops, qkv_tf, att_f, att_b, gatt_f, gatt_b, tatt_f,
           tatt_b, tatt3_f, tatt3_b, lp_f, dec[0], dec[1], dec[2], dec[3], fc16[0], fc16[1],
           fc16[2], fc16[3], fc16b, out_fused[0], out_fused[1], lp16[0], lp16[1], lp16[2],
           pack[0], pack[1], vec[0], vec[1], vec[2], vec[3], vec[4], vec[5], mlp[0], mlp[1],
           mlp[2], mlp[3], gelu1 - gelu0, fused_b[0], fused_b[1], decp[0], decp[1], decp[2],
           decp[3], aim[0], aim[1], decp[4], decp[5], decp[6], decp[7], upg[0], upg[1], upg[2],
           pw_cuda_skinny_calls(), pw_cuda_skinny_gelu_calls(), plans1 - plans0,
           split1 - split0, wgrad[0], wgrad[1], wg_f, wg_b, pw_cuda_flash_wgmma_calls() - wg_calls0,
           gus[0], gus[1], gus[2], pw_cuda_skinny_swiglu_calls(), lnf[0], lnf[1], lnf[2], lnf[3],
           lnf[4], lnf[5], pw_cuda_ln_vec_calls() - ln_vec0, opt[0], opt[1], opt[2], csum[0],
           csum[1], csum[2], csum[3], wgm[0], wgm[1], wgm[2], wgm[3], wgm[4], wgm[5], wgm[6],
           wgm[7], total);
    return 0;
}
