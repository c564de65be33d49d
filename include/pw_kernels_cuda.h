/* pw_kernels_cuda.h: the CUDA twins of pw_kernels.h, plus a bf16 matmul and its conversions.
 * Only for builds with PW_HAVE_CUDA; every pointer is a device pointer unless said otherwise.
 *
 * Each pw_<name>_cuda has the CPU kernel's name, argument order and semantics (pw_kernels.h:
 * backwards accumulate, NULL gradients are skipped, left-padding masks, NULL mask = all real),
 * with a trailing stream on which all of its work is queued. Nothing here synchronises except
 * pw_sumsq_cuda, which returns a host value. On the attention's GEMM path (pw_cuda_set_flash(0)
 * or heads above 128) inputs must be finite: it multiplies whole T x T tiles, so a NaN in q, k or
 * v at a padding position would reach the output through 0 * NaN, where the CPU twin never reads
 * those positions; the fused kernels never use a padding position's values.
 *
 * cuBLAS handles (matmul, attention) are owned by this layer: one per (device, stream) pair,
 * created on the first call that needs it and bound to that stream, kept until
 * pw_cuda_release(). Call pw_cuda_release() once the streams are idle and before they are
 * destroyed; a stream that is destroyed and re-created may reuse an old handle's entry (the
 * pointer value may repeat), which is harmless because the handle is re-bound on every use.
 * A stream must be used from one host thread at a time (a cuBLAS handle is not thread-safe).
 *
 * Scratch: the attention backward, the column sums (dweight, dbias) and pw_sumsq take their
 * temporary buffers from the stream-ordered allocator (cudaMallocAsync on the same stream). */
#ifndef PW_KERNELS_CUDA_H
#define PW_KERNELS_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* FILE */

#include <cuda_runtime_api.h> /* cudaStream_t; plain C */

#include "pw_kernels.h" /* PwRowGroups */
#include "pw_sample.h"  /* PwSampleConfig */

#ifdef __cplusplus
extern "C" {
#endif

/* bf16 as its 16 storage bits, so that C code can hold and copy it; the .cu files view it as
 * __nv_bfloat16 (same size, same bits). */
typedef uint16_t pw_bf16;

/* ---- context: cuBLAS handles and the fp32 GEMM mode */
/* TF32 tensor cores for the fp32 GEMMs (matmul and attention): off by default, so fp32 twins
 * agree with the CPU to 1e-5; on, expect about 1e-3. Applies to calls made after it. */
void pw_cuda_set_tf32(int enable);
int pw_cuda_get_tf32(void);
/* The fused attention kernels (no T x T matrix, float32 arithmetic; heads of up to 128 floats):
 * on by default; off, the attention runs its GEMM path (NH*T*T floats of scratch per sequence,
 * TF32 tensor cores when pw_cuda_set_tf32 is on). Heads above 128 always take the GEMM path.
 * Applies to calls made after it. */
void pw_cuda_set_flash(int enable);
int pw_cuda_get_flash(void);
/* The KV-cache attention's split kernel (a key's channels across a group of lanes, keys split
 * among the groups; heads whose 16-byte chunks are a power of two up to 32): on by default;
 * off, every head takes the tile kernel (a key a thread, the block a tile of keys at a time).
 * Applies to calls made after it. */
void pw_cuda_set_cache_split(int enable);
int pw_cuda_get_cache_split(void);
/* The KV-cache attention's group kernel (a block per token and key/value head, a warp per each
 * of the 2 to 8 query heads that share it, reading each tile of keys and values into shared
 * memory once; heads the split kernel takes): off by default until a GPU has timed it against
 * the split kernel (bench_generate gpu llama's "group kernel" row); on, it takes grouped-query
 * heads before the split kernel. Applies to calls made after it. */
void pw_cuda_set_cache_group(int enable);
int pw_cuda_get_cache_group(void);
/* cuBLASLt's forward products (lt.cu, lt_plan.cu): off (the default), each shape takes the
 * heuristic's first algorithm; on, a shape's first call times the heuristic's first 8, and forms
 * of its first 2 with K split in 2, 4, 8 and 16 parts, on its own operands and keeps the
 * fastest; the products without a bias go through cuBLASLt too while it is on. The profile by
 * entry found the bf16-output forward products at half the rate of the same shapes' backward,
 * and a decode step's products (64 to 256 rows: a few dozen tiles for 132 SMs) at a third of the
 * bandwidth their weights need; whether another algorithm or a split closes it, and whether the
 * choice then varies between runs (it may: timings decide), a GPU says (bench_generate's "timed"
 * row, bench_model's BENCH_LT_TUNE=1). A plan made under one setting is not used under another:
 * it applies to the next call. A call on a stream being captured into a graph is not timed (it
 * takes the heuristic's first, and the shape's next call outside a capture is timed). A product
 * that adds to its output (a weight gradient, under pw_cuda_set_lt_all) is timed into a scratch
 * of its output's shape, allocated for the timing and freed after it (no room: the heuristic's
 * first). */
void pw_cuda_set_lt_tune(int enable);
int pw_cuda_get_lt_tune(void);
/* The same products with K split in `parts` parts (2 to 16, more taken as 16; 0 or 1: none, the
 * default) on the heuristic's first algorithm, where K is a multiple of 16 (lt_plan.cu says why)
 * and cuBLASLt accepts that form for the shape, the parts summed in float32 in the workspace in
 * a fixed order (a test and benchmark hook; ignored while the algorithms are timed, which try
 * splits of their own). Applies to the next call. */
void pw_cuda_set_lt_split(int parts);
int pw_cuda_get_lt_split(void);
/* the plans (a shape and setting's algorithm) cuBLASLt's products have made in this process, and
 * how many of them split K, whether the heuristic or a timing or a forced split chose it */
void pw_cuda_lt_plans(unsigned long *plans, unsigned long *split);
/* Each plan kept, a line each into f: its shape, kind, algorithm, tile, stages and K parts, and
 * where it was timed, the heuristic's first's time against the kept one's (a benchmark's record
 * of what timing found; bench_model prints it with BENCH_LT_REPORT=1). */
void pw_cuda_lt_plan_report(FILE *f);
/* The products cublasGemmEx makes by default (the backward's input and weight gradients, a
 * forward without a bias, wherever K is a multiple of 64) through cuBLASLt instead: off by
 * default; on, with pw_cuda_set_lt_tune, the weight gradients' plans are timed too, with their
 * split-K forms, into a scratch (lt.cu says why: the weight gradients' few output tiles over
 * K = B x T rows; bench_model's BENCH_LT_ALL=1). Applies to later calls. */
void pw_cuda_set_lt_all(int enable);
int pw_cuda_get_lt_all(void);
/* A decode step's products (bf16 operands, float32 output, at most 256 rows and at most 4 of
 * its tiles an SM, which an LM head exceeds: launch.cuh's pw_sk_parts) through a kernel of our
 * own that splits K in parts and sums them in a fixed order in the same launch
 * (skinny_kernels.cuh): off (the default until a GPU has timed it against cuBLAS:
 * bench_generate's "skinny" rows, bench_kernels_cuda's decode products); on, it takes those
 * products before cuBLASLt and cuBLAS. Applies to later calls; the count is the calls it took
 * (process-wide). */
void pw_cuda_set_skinny(int enable);
int pw_cuda_get_skinny(void);
unsigned long pw_cuda_skinny_calls(void);
/* of those, the calls with GELU in the epilogue (GPT-2's MLP up-projection in a cache pass:
 * GELU of the sum rounded to bfloat16 into the activation, no float32 sum written) */
unsigned long pw_cuda_skinny_gelu_calls(void);
/* and those with SwiGLU in the epilogue (the Llama family's [gate | up] product in a cache pass:
 * SwiGLU of the two halves' sums rounded to bfloat16 into the activation) */
unsigned long pw_cuda_skinny_swiglu_calls(void);
/* the blocks an SM its grid aims at, K split in parts until it has them (2 by default; 1 to 8,
 * 0 and below taken as the default, more as 8): a benchmark hook. Applies to later calls. */
void pw_cuda_set_skinny_blocks(int per_sm);
int pw_cuda_get_skinny_blocks(void);
/* The same products with a bfloat16 output: on (the default), their bias is rounded to
 * bfloat16 on each call, the combination cuBLASLt serves with its fast kernels (2.4x on GPT-2's
 * MLP product, lt.cu); off, it stays float32 (bench_model's BENCH_LT_BIAS16=0). Applies to
 * later calls. */
void pw_cuda_set_lt_bias16(int enable);
int pw_cuda_get_lt_bias16(void);
/* GPT-2's MLP at bf16 with GELU in cuBLASLt's epilogues (pw_matmul_gelu_forward_bf16_cuda,
 * pw_matmul_backward_gelu_bf16_cuda): off (the default until a GPU has timed it against the
 * kernels: bench_model's BENCH_LT_GELU=1), GELU and its gradient are kernels of their own after
 * the products; on, the up-projection writes GELU's output and input in one pass and the
 * down-projection's input gradient comes out multiplied by GELU's derivative, in bfloat16, its
 * float32 form never stored. cuBLASLt's GELU is of the float32 sum, before any rounding: the
 * result differs from the kernels' (GELU of the rounded sum) within bfloat16's rounding. Applies
 * to later calls; the counts are the calls that took each path (process-wide). */
void pw_cuda_set_lt_gelu(int enable);
int pw_cuda_get_lt_gelu(void);
void pw_cuda_gelu_epilogue_calls(unsigned long *fused, unsigned long *unfused);
/* The blocks an SM the tensor-core attention's kernels for heads of 33 to 64 are built for: 2
 * (the default: tiles of 64 rows, 180 to 255 registers as ptxas chooses) or 3 (a second build
 * with tiles of 32 held to 168 registers, a few bytes spilled off their loops' fast path: 12
 * warps an SM where 8 are, for 16% to 29% more instructions a product). Which is faster only a
 * GPU says (bench_kernels_cuda times both). Other values are taken as 2; applies to calls made
 * after it. */
void pw_cuda_set_flash_blocks(int per_sm);
int pw_cuda_get_flash_blocks(void);
/* The tensor-core attention's backward as one kernel over each block of keys that makes dq
 * too (FlashAttention-2's way: dS . K added atomically into a float32 dq, then written out),
 * where two kernels (dq's, dk and dv's) make the scores and dS twice: 5 products a tile pair
 * instead of 7, for 16 KB of atomic adds a pair and a zeroed 4-byte dq of (B,T,NH,hs). Off (the
 * default until a GPU has timed it: bench_kernels_cuda's "fused dq" row, bench_model's
 * BENCH_FLASH_FUSED_BWD=1); on, dq's last bits vary from run to run (the atomics' order).
 * Applies to calls made after it. */
void pw_cuda_set_flash_fused_bwd(int enable);
int pw_cuda_get_flash_fused_bwd(void);
/* LayerNorm's and RMSNorm's forwards (plain, bf16 and residual) with each lane's elements 16
 * bytes at a time and the weights loaded before the sums (layernorm_kernels.cuh,
 * rmsnorm_kernels.cuh), where C is a multiple of 4 up to 1024 and the rows are 16-byte aligned;
 * 2 rows a block below 4096 rows. Off (the default until a GPU has timed it: bench_kernels_cuda's
 * "float4" LayerNorm rows, bench_model's and bench_generate's BENCH_LN_VEC=1); the sums' order
 * differs from the scalar kernel's, the results within rounding. pw_cuda_ln_vec_calls counts
 * the forwards it took. */
void pw_cuda_set_ln_vec(int enable);
int pw_cuda_get_ln_vec(void);
unsigned long pw_cuda_ln_vec_calls(void);
/* The bias gradients' column sums over bfloat16 rows (every bf16 backward product with a bias)
 * 8 columns a thread, a 16-byte load a row, where the columns and the row stride are multiples
 * of 8 and the rows 16-byte aligned (colsum_kernels.cuh): each column summed in the same order
 * as the scalar kernel's, so the same bits. On by default (the scalar kernel reads 2 bytes a
 * thread a row; bench_kernels_cuda's "column sum" rows time both, bench_model's
 * BENCH_COLSUM_VEC=0 the step without it). pw_cuda_colsum_vec_calls counts the sums it took. */
void pw_cuda_set_colsum_vec(int enable);
int pw_cuda_get_colsum_vec(void);
unsigned long pw_cuda_colsum_vec_calls(void);
/* The tensor-core attention for heads of 64 on Hopper's warpgroup products
 * (flash_wg_kernels.cuh: four warps issue each product, its second operand read from swizzled
 * shared tiles), forward and backward (its dq kernel and dk/dv kernel; the fused backward, where
 * it is on, stays mma.sync's), where the device runs them (pw_cuda_wgmma_ok below) and q, k, v
 * are 16-byte aligned: off (the default until a GPU has timed it: bench_kernels_cuda's "wgmma"
 * rows, bench_model's BENCH_FLASH_WGMMA=1); on, those calls take it, the same outputs within the
 * products' order of addition. Applies to calls made after it; the count is the forwards and
 * backwards it took (process-wide). */
void pw_cuda_set_flash_wgmma(int enable);
int pw_cuda_get_flash_wgmma(void);
unsigned long pw_cuda_flash_wgmma_calls(void);
/* The warpgroup attention's schedule, for finding where it goes wrong on a GPU
 * (flash_wg_kernels.cuh's modes; 0, the default, is the schedule as written): PW_WGMMA_SERIAL
 * (no copy in flight while products run, one buffer), PW_WGMMA_ONE_GROUP (blocks of 64 rows, one
 * warpgroup computing), PW_WGMMA_BATCH_EACH (every product waited for before the next),
 * PW_WGMMA_SWAP (the two warpgroups' rows swapped), ONE_GROUP | SWAP (the second warpgroup
 * computing) or PW_WGMMA_ACC_FRESH (the sums carried from tile to tile added by the threads, each
 * tile's products made into fresh accumulators); any other value is 0. Each gives the same
 * outputs (ACC_FRESH within rounding), most slower. Applies to calls made after it
 * (process-wide). */
enum {
    PW_WGMMA_SERIAL = 1,
    PW_WGMMA_ONE_GROUP = 2,
    PW_WGMMA_BATCH_EACH = 4,
    PW_WGMMA_SWAP = 8,
    PW_WGMMA_ACC_FRESH = 16
};
void pw_cuda_set_flash_wgmma_mode(int bits);
int pw_cuda_get_flash_wgmma_mode(void);
/* Programmatic dependent launch for the decode step's kernels of our own (pdl.cuh): each placed
 * on the GPU while the kernel before it runs, waiting at its start for that one's end, so that
 * no launch gap lies between them; where the device runs code built for sm_90 or later. Off
 * (the default until a GPU has timed it: bench_generate's "dependent launch" rows, BENCH_PDL=1);
 * on, the same results. Applies to launches made after it (a CUDA graph keeps how its kernels
 * were captured); the count is the launches made so (process-wide). */
void pw_cuda_set_pdl(int enable);
int pw_cuda_get_pdl(void);
unsigned long pw_cuda_pdl_launches(void);
/* Hopper's warpgroup products (wgmma.cu): 1 where this device runs them (compute capability
 * 9.0 and device code built for sm_90a), asked of the device once. pw_cuda_wgmma_probe: one
 * 64 x 64 product by form (wgmma_probe_kernels.cuh's PW_WG_PROBE_*: 0 A and B from shared
 * memory, 1 A from registers, 2 the same with B stored as it is) of the 64 x 64 bfloat16 a and x
 * into out (64 x 64 float32), queued on stream; 0 (nothing queued) where the device cannot. */
int pw_cuda_wgmma_ok(void);
/* __CUDA_ARCH__ of the code this device runs (900 for sm_90 and sm_90a: what the driver chose
 * from the build's device code), asked of the device once (wgmma.cu) */
int pw_cuda_device_code_arch(void);
/* Whether the current device can load this build's device code, asked of the driver without a
 * launch (the attributes of one kernel): NULL where it can, else the driver's reason */
const char *pw_cuda_code_refused(void);
int pw_cuda_wgmma_probe(float *out, const uint16_t *a, const uint16_t *x, int form,
                        cudaStream_t stream);
/* the same with x's descriptor given other offsets (lbo, sbo) and slices `step` bytes apart: the
 * search test_cuda_wgmma.c makes when the layouts held right fail */
int pw_cuda_wgmma_probe_at(float *out, const uint16_t *a, const uint16_t *x, int form, int lbo,
                           int sbo, int step, cudaStream_t stream);
/* The bias of a matmul forward added in cuBLASLt's epilogue instead of written into the output
 * by a kernel and read back by the GEMM: on by default; where cuBLASLt has no algorithm for the
 * operands (their alignment) or the bias is not 16-byte aligned, that call takes the plain path.
 * Applies to calls made after it. The counts are the forwards with a bias that took each path
 * (process-wide, since the start). */
void pw_cuda_set_epilogue(int enable);
int pw_cuda_get_epilogue(void);
void pw_cuda_epilogue_calls(unsigned long *fused, unsigned long *unfused);
/* the cuBLASLt workspaces' bytes (32 MiB per stream that ran a fused forward), at most held */
size_t pw_cuda_epilogue_peak_bytes(void);
/* destroys every cuBLAS and cuBLASLt handle this layer created, and the cuBLASLt workspaces */
void pw_cuda_release(void);
/* Device memory this process has held: the most the kernel tables (pw_ops.h) held at once, plus
 * the high-water marks of the stream-ordered scratch pools and the cuBLASLt workspaces (an upper
 * bound of the true peak: the peaks may fall at different times). 0 before any allocation. */
size_t pw_cuda_peak_bytes(void);
size_t pw_cuda_scratch_peak_bytes(void);

/* ---- the GPUs (device.cu, ops_cuda.c), behind pw_device.h's functions of the same meaning:
 * the count (0 where the runtime finds none), why it is 0 in words, a device's PCI address, and
 * whether a device runs this build's code (pw_device_fits). */
int pw_cuda_device_count(void);
void pw_cuda_why_none(char *buf, size_t n);
int pw_cuda_pci_id(int ordinal, unsigned *domain, unsigned *bus, unsigned *dev);
int pw_cuda_device_fits(int id, PwErr *err);

/* ---- embeddings. The backward adds into dwte the rows grouped by token (tok, pw_row_groups on
 * the tokens) and into dwpe those grouped by position (pos: on the positions, or on the
 * column where there are none), a group's rows in order: the CPU's sums, bit for bit, every
 * run. tok and pos are host structs whose arrays are on the device; NULL skips that gradient. */
void pw_positions_from_mask_cuda(int *pos, const int *mask, int B, int T, cudaStream_t stream);
void pw_encoder_forward_cuda(float *out, const int *inp, const int *pos, const float *wte,
                             const float *wpe, int B, int T, int C, cudaStream_t stream);
void pw_encoder_backward_cuda(float *dwte, float *dwpe, const float *dout,
                              const PwRowGroups *tok, const PwRowGroups *pos, int C,
                              cudaStream_t stream);

/* ---- LayerNorm (dweight and dbias by a deterministic two-stage column sum) */
void pw_layernorm_forward_cuda(float *out, float *mean, float *rstd, const float *inp,
                               const float *weight, const float *bias, int N, int C,
                               cudaStream_t stream);
/* The producers of a bf16 model's product inputs, writing their result rounded to bfloat16
 * (nearest even, bf16.cuh) and no float32 copy: the same kernels, the same values. GELU's and
 * SwiGLU's read their input in bfloat16 too (a bf16 model keeps its MLP's pre-activation so),
 * as do their backward forms. */
void pw_layernorm_forward_bf16_cuda(pw_bf16 *out, float *mean, float *rstd, const float *inp,
                                    const float *weight, const float *bias, int N, int C,
                                    cudaStream_t stream);
/* res = a + b (N x C; res may be a), then the LayerNorm of res into out (float32) and / or out16
 * (bfloat16): one kernel where residual_forward and layernorm_forward took two, the same values
 * (res as pw_residual_forward_cuda's, the rest as the LayerNorm's of res) */
void pw_residual_layernorm_forward_cuda(float *res, float *out, pw_bf16 *out16, float *mean,
                                        float *rstd, const float *a, const float *b,
                                        const float *weight, const float *bias, int N, int C,
                                        cudaStream_t stream);
/* the backward adds into dinp (and, with dinp16, writes the sum rounded to bfloat16 there too:
 * the next product's dout at bf16) */
void pw_layernorm_backward_cuda(float *dinp, pw_bf16 *dinp16, float *dweight, float *dbias,
                                const float *dout, const float *inp, const float *weight,
                                const float *mean, const float *rstd, int N, int C,
                                cudaStream_t stream);

/* ---- matmul through cuBLAS (fp32, or TF32 when pw_cuda_set_tf32(1)); set_dinp: dinp is set
 * (beta 0: its old values are not read) instead of added to, as pw_ops.h's entry says */
void pw_matmul_forward_cuda(float *out, const float *inp, const float *weight, const float *bias,
                            int N, int C, int OC, cudaStream_t stream);
void pw_matmul_backward_cuda(float *dinp, float *dweight, float *dbias, const float *dout,
                             const float *inp, const float *weight, int N, int C, int OC,
                             int set_dinp, cudaStream_t stream);

/* ---- attention, with pw_attention_forward's lse (B,NH,T) between forward and backward (which
 * recomputes the probabilities from it): fused kernels that write no T x T matrix, or on the
 * GEMM path (pw_cuda_set_flash) one sequence at a time its scores through scratch, NH*T*T
 * floats in forward and twice that in backward. The backward takes B*NH*T floats of scratch. */
void pw_attention_forward_cuda(float *out, float *lse, const float *qkv, const int *mask, int B,
                               int T, int C, int NH, cudaStream_t stream);
void pw_attention_backward_cuda(float *dqkv, const float *dout, const float *qkv, const float *lse,
                                const int *mask, int B, int T, int C, int NH, cudaStream_t stream);

/* ---- attention over a KV cache (generation): one launch stores every token's k and v, a
 * second gives each (token, head) a block that attends with an online softmax, so `scores`
 * (the CPU twin's scratch) is not used and may be NULL. seg_row, seg_off and seg_slot0 are
 * device arrays; N (= seg_off[nseg]) is passed from the host. */
void pw_attention_cache_forward_cuda(float *out, float *kcache, float *vcache, float *scores,
                                     const float *qkv, const int *seg_row, const int *seg_off,
                                     const int *seg_slot0, int nseg, int N, int maxT, int C,
                                     int NH, cudaStream_t stream);
/* ---- dst (n,C) = rows rows[0..n) of src; rows is a device array */
void pw_gather_rows_cuda(float *dst, const float *src, const int *rows, int n, int C,
                         cudaStream_t stream);

/* ---- GELU, residual */
void pw_gelu_forward_cuda(float *out, const float *inp, size_t N, cudaStream_t stream);
/* the bf16 forms: on inp16 (inp NULL), or on inp rounded to bfloat16, the rounding kept in inp16
 * when that is not NULL (pw_ops.h's gelu_forward_bf16) */
void pw_gelu_forward_bf16_cuda(pw_bf16 *out, pw_bf16 *inp16, const float *inp, size_t N,
                               cudaStream_t stream);
/* the bf16 backward forms set their gradient rounded to bfloat16 instead of adding to it
 * (pw_ops.h) */
void pw_gelu_backward_bf16_cuda(pw_bf16 *dinp, const pw_bf16 *inp, const float *dout, size_t N,
                                cudaStream_t stream);
void pw_gelu_backward_cuda(float *dinp, const float *inp, const float *dout, size_t N,
                           cudaStream_t stream);
void pw_residual_forward_cuda(float *out, const float *a, const float *b, size_t N,
                              cudaStream_t stream);
void pw_residual_backward_cuda(float *da, float *db, const float *dout, size_t N,
                               cudaStream_t stream);

/* ---- log-probabilities, entropy, cross-entropy: one block per row (dlogits may alias logits);
 * the log-prob pair reads rows ld apart (the padded vocabulary, as pw_logprobs_forward), and
 * keeps or reads each row's statistics in stats (NULL: none kept, made again) */
void pw_logprobs_forward_cuda(float *logp, float *entropy, float *stats, const float *logits,
                              const int *targets, int N, int V, int ld, cudaStream_t stream);
void pw_logprobs_backward_cuda(float *dlogits, const float *logits, const float *stats,
                               const int *targets, const float *dlogp, const float *dentropy,
                               int N, int V, int ld, cudaStream_t stream);
/* the same backward times mul, rounded to bfloat16: row i at dlogits16 + 2 i ld, where row i of
 * the logits starts, so that dlogits16 may alias logits (pw_logprobs_backward_bf16) */
void pw_logprobs_backward_bf16_cuda(pw_bf16 *dlogits16, const float *logits, const float *stats,
                                    const int *targets, const float *dlogp,
                                    const float *dentropy, int N, int V, int ld, float mul,
                                    cudaStream_t stream);
void pw_crossentropy_forward_cuda(float *losses, const float *logits, const int *targets, int N,
                                  int V, cudaStream_t stream);
void pw_crossentropy_backward_cuda(float *dlogits, const float *logits, const int *targets,
                                   const float *dlosses, int N, int V, cudaStream_t stream);

/* ---- sampling: n rows of logits to tokens, one block per row (pw_sample_rows, pw_sample.h) */
void pw_sample_rows_cuda(const float *logits, int ld, int n, int V, const int *rows,
                         const PwSampleConfig *sc, uint64_t *rng, int *token, float *logp,
                         float *logp_full, cudaStream_t stream);
/* after a draw: the rows' bookkeeping, one thread per row (pw_sample_record, pw_sample.h) */
/* n copies within the device (dst[i] <- bytes[i] of src[i]; zeros where src[i] is NULL),
 * queued in as few launches as PW_COPY_SEGS allows (copy_kernels.cuh), not one each */
void pw_copy_batch_cuda(void *const *dst, const void *const *src, const size_t *bytes, int n,
                        cudaStream_t stream);
void pw_sample_record_cuda(const PwGenRows *g, int n, const int *rows, const int *token,
                           const float *logp, const float *logp_full, int *pass_tok,
                           int *pass_pos, int *pass_slot0, cudaStream_t stream);

/* ---- AdamW, global-norm clipping */
/* pw_adamw_update's twin (pw_kernels.h): the gradients times gscale, the new weights rounded
 * into params16 too when it is not NULL */
void pw_adamw_update_cuda(float *params, pw_bf16 *params16, const float *grads, float gscale,
                          float *m, float *v, size_t n, float lr, float beta1, float beta2,
                          float eps, float weight_decay, int t, cudaStream_t stream);
/* waits for the stream: the sum is returned to the host */
double pw_sumsq_cuda(const float *x, size_t n, cudaStream_t stream);
/* *sum (one device double) += sum of squares of x, without waiting: sum several buffers and
 * copy the total once */
void pw_sumsq_add_cuda(double *sum, const float *x, size_t n, cudaStream_t stream);
void pw_scale_cuda(float *x, float s, size_t n, cudaStream_t stream);

/* ---- the Llama family: RMSNorm (dweight by the deterministic column sum, through N*C floats
 * of scratch), rotary embeddings (pos and inv_freq are device arrays), SwiGLU */
void pw_rmsnorm_forward_cuda(float *out, float *rstd, const float *inp, const float *weight, int N,
                             int C, float eps, cudaStream_t stream);
void pw_rmsnorm_forward_bf16_cuda(pw_bf16 *out, float *rstd, const float *inp,
                                  const float *weight, int N, int C, float eps,
                                  cudaStream_t stream);
/* res = a + b, then the RMSNorm of res: as pw_residual_layernorm_forward_cuda */
void pw_residual_rmsnorm_forward_cuda(float *res, float *out, pw_bf16 *out16, float *rstd,
                                      const float *a, const float *b, const float *weight, int N,
                                      int C, float eps, cudaStream_t stream);
void pw_rmsnorm_backward_cuda(float *dinp, pw_bf16 *dinp16, float *dweight, const float *dout,
                              const float *inp, const float *weight, const float *rstd, int N,
                              int C, cudaStream_t stream);
/* Qwen3's q/k norm (pw_kernels.h, pw_head_rmsnorm_forward / _backward), in place */
void pw_head_rmsnorm_forward_cuda(float *x, float *raw, float *rstd, const float *wq,
                                  const float *wk, int N, int NH, int NKV, int hs, int stride,
                                  float eps, cudaStream_t stream);
void pw_head_rmsnorm_backward_cuda(float *dx, float *dwq, float *dwk, const float *raw,
                                   const float *rstd, const float *wq, const float *wk, int N,
                                   int NH, int NKV, int hs, int stride, cudaStream_t stream);
void pw_rope_forward_cuda(float *x, const int *pos, const float *inv_freq, int N, int nheads,
                          int hs, int stride, cudaStream_t stream);
void pw_rope_backward_cuda(float *dx, const int *pos, const float *inv_freq, int N, int nheads,
                           int hs, int stride, cudaStream_t stream);
/* the forward read from x, each whole row rounded to bfloat16 into x16 (as the backward's bf16
 * form below): a bf16 Llama's q, k, v for the attention, with no float32 rotation written and
 * converted */
void pw_rope_forward_bf16_cuda(pw_bf16 *x16, const float *x, const int *pos,
                               const float *inv_freq, int N, int nheads, int hs, int stride,
                               cudaStream_t stream);
/* the backward read from dx and written, each whole row of stride values (the nheads rotated
 * heads, then the rest unchanged), rounded to bfloat16 into dx16: a bf16 Llama's dqkv for the
 * qkv product, with no float32 result written and converted */
void pw_rope_backward_bf16_cuda(pw_bf16 *dx16, const float *dx, const int *pos,
                                const float *inv_freq, int N, int nheads, int hs, int stride,
                                cudaStream_t stream);
void pw_swiglu_forward_cuda(float *out, const float *gate_up, int N, int F, cudaStream_t stream);
void pw_swiglu_forward_bf16_cuda(pw_bf16 *out, pw_bf16 *gu16, const float *gate_up, int N, int F,
                                 cudaStream_t stream);
void pw_swiglu_backward_bf16_cuda(pw_bf16 *dgate_up, const pw_bf16 *gate_up, const float *dout,
                                  int N, int F, cudaStream_t stream);
void pw_swiglu_backward_cuda(float *dgate_up, const float *gate_up, const float *dout, int N,
                             int F, cudaStream_t stream);

/* ---- grouped-query attention, as the attention above (on the GEMM path one strided-batched
 * GEMM per sequence and member of a group covers the NKV groups); over a KV cache, as
 * pw_attention_cache_forward_cuda (scores unused, may be NULL). */
void pw_attention_gqa_forward_cuda(float *out, float *lse, const float *qkv, const int *mask,
                                   int B, int T, int NH, int NKV, int hs, cudaStream_t stream);
void pw_attention_gqa_backward_cuda(float *dqkv, const float *dout, const float *qkv,
                                    const float *lse, const int *mask, int B, int T, int NH,
                                    int NKV, int hs, cudaStream_t stream);
/* the same in bfloat16 on the tensor cores (pw_attention_gqa_forward_bf16 / _backward_bf16:
 * q, k and v in bfloat16, dout rounded, float32 accumulation); the forward writes its output
 * (B, T, NH hs) in float32 (out) and / or rounded to bfloat16 (out16), either may be NULL; the
 * backward reads the rounded one for D = rowsum(dout * out16) and SETS dqkv. Heads over 128
 * and pw_cuda_set_flash(0) run the float32 path above on q, k and v widened. */
void pw_attention_gqa_forward_bf16_cuda(float *out, pw_bf16 *out16, float *lse,
                                        const pw_bf16 *qkv, const int *mask, int B, int T, int NH,
                                        int NKV, int hs, cudaStream_t stream);
/* the backward sets dqkv, or with dqkv16 (NULL: none) sets its rounding to bfloat16 there
 * instead (the qkv product's dout; dqkv is then not written) */
void pw_attention_gqa_backward_bf16_cuda(float *dqkv, pw_bf16 *dqkv16, const float *dout,
                                         const pw_bf16 *qkv, const pw_bf16 *out16,
                                         const float *lse, const int *mask, int B, int T, int NH,
                                         int NKV, int hs, cudaStream_t stream);
void pw_attention_cache_gqa_forward_cuda(float *out, float *kcache, float *vcache, float *scores,
                                         const float *qkv, const int *seg_row, const int *seg_off,
                                         const int *seg_slot0, int nseg, int N, int maxT, int NH,
                                         int NKV, int hs, cudaStream_t stream);
/* the same over a bfloat16 cache (pw_attention_cache_gqa_forward_bf16): k and v rounded to
 * nearest even as they are stored, widened as they are read; the caches 16-byte aligned */
void pw_attention_cache_gqa_forward_bf16_cuda(float *out, pw_bf16 *kcache, pw_bf16 *vcache,
                                              float *scores, const float *qkv, const int *seg_row,
                                              const int *seg_off, const int *seg_slot0, int nseg,
                                              int N, int maxT, int NH, int NKV, int hs,
                                              cudaStream_t stream);
/* the same with its output rounded to bfloat16 into out16 (a bf16 model's decode: the
 * projection reads it so, and no float32 output is written and converted) */
void pw_attention_cache_gqa_forward_bf16_out_cuda(pw_bf16 *out16, pw_bf16 *kcache,
                                                  pw_bf16 *vcache, const float *qkv,
                                                  const int *seg_row, const int *seg_off,
                                                  const int *seg_slot0, int nseg, int N, int maxT,
                                                  int NH, int NKV, int hs, cudaStream_t stream);

/* ---- bf16: conversions (round to nearest even) and a matmul with bf16 operands, fp32
 * accumulation and fp32 results/gradients; the same semantics as pw_matmul_*. */
void pw_f32_to_bf16_cuda(pw_bf16 *out, const float *inp, size_t n, cudaStream_t stream);
void pw_bf16_to_f32_cuda(float *out, const pw_bf16 *inp, size_t n, cudaStream_t stream);
void pw_matmul_forward_bf16_cuda(float *out, const pw_bf16 *inp, const pw_bf16 *weight,
                                 const float *bias, int N, int C, int OC, cudaStream_t stream);
/* the bf16 forward with its result rounded to bfloat16 into out (float32 product and bias,
 * rounded once) */
void pw_matmul_forward_bf16_out_cuda(pw_bf16 *out, const pw_bf16 *inp, const pw_bf16 *weight,
                                     const float *bias, int N, int C, int OC,
                                     cudaStream_t stream);
/* The MLP's up-projection and GELU (GPT-2, bf16): out = GELU(inp . weight^T + bias) rounded to
 * bfloat16; pre (NULL: none) the sum rounded (what the backward reads); pre32 (NULL: none) N x
 * OC floats the unfused path may use when pre is NULL (else it takes a scratch). Through
 * cuBLASLt's GELU epilogue when pw_cuda_set_lt_gelu is on and it applies, else the product and
 * pw_gelu_forward_bf16_cuda. */
void pw_matmul_gelu_forward_bf16_cuda(pw_bf16 *out, pw_bf16 *pre, float *pre32,
                                      const pw_bf16 *inp, const pw_bf16 *weight,
                                      const float *bias, int N, int C, int OC,
                                      cudaStream_t stream);
/* The Llama family's [gate | up] product and SwiGLU in a cache pass (bf16): out (N x F) =
 * SwiGLU of inp . weight^T's halves (weight 2F x C, no bias) rounded to bfloat16; pre32 (NULL:
 * none) N x 2F floats the unfused path may use (else it takes a scratch). Through the few-row
 * kernel's SwiGLU epilogue where pw_cuda_set_skinny is on and it applies, else the product and
 * pw_swiglu_forward_bf16_cuda: the same bits either way. */
void pw_matmul_swiglu_forward_bf16_cuda(pw_bf16 *out, float *pre32, const pw_bf16 *inp,
                                        const pw_bf16 *weight, int N, int C, int F,
                                        cudaStream_t stream);
/* The down-projection's backward through the GELU before it: dpre (N x C) SET to GELU'(pre) .
 * (dout . weight), rounded to bfloat16; dweight and dbias (NULL: none) accumulate as in
 * pw_matmul_backward_bf16_cuda. dinp32 (NULL: none): N x C floats the unfused path may use for
 * dout . weight (else it takes a scratch). Through cuBLASLt's DGELU epilogue when
 * pw_cuda_set_lt_gelu is on and it applies, else the product and pw_gelu_backward_bf16_cuda. */
void pw_matmul_backward_gelu_bf16_cuda(pw_bf16 *dpre, const pw_bf16 *pre, float *dinp32,
                                       float *dweight, float *dbias, const pw_bf16 *dout, int ldo,
                                       const pw_bf16 *inp, const pw_bf16 *weight, int N, int C,
                                       int OC, cudaStream_t stream);
/* dout's rows ldo apart (OC: dense; the LM head's bf16 dlogits lie over its logits, 2 ld) */
void pw_matmul_backward_bf16_cuda(float *dinp, float *dweight, float *dbias, const pw_bf16 *dout,
                                  int ldo, const pw_bf16 *inp, const pw_bf16 *weight, int N,
                                  int C, int OC, int set_dinp, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
