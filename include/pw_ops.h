/* pw_ops.h: one table of every kernel of pw_kernels.h plus device memory, with a CPU and a CUDA
 * entry, so that the model is written once and runs on either device (docs/model.md). */
#ifndef PW_OPS_H
#define PW_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "pw_common.h"
#include "pw_kernels.h" /* PwRowGroups */
#include "pw_sample.h" /* PwSampleConfig, PwGenRows */
#include "pw_tensor.h"

typedef enum PwCopyKind { PW_COPY_H2D = 0, PW_COPY_D2H, PW_COPY_D2D } PwCopyKind;

/* Each entry has the semantics of the pw_kernels.h function of the same name (backwards
 * accumulate, NULL gradients are skipped, left-padding masks, NULL mask = all real), with the
 * table as a first argument; pointers are device pointers of the table's device (host memory
 * for the CPU table). Work is queued in order on the table's stream: a host that reads device
 * memory goes through `copy`, which waits for everything queued before it. */
typedef struct PwOps PwOps;
struct PwOps {
    PwDevice device;
    int device_id;  /* the GPU of a CUDA table; 0 for the CPU */
    void *stream;   /* cudaStream_t of a CUDA table; NULL for the CPU */
    char name[16];  /* "cpu", "cuda:0" */

    /* ---- memory. alloc returns zeroed memory, or NULL when the device has no room (the
     * caller says how much it needed). copy is complete when it returns, in every direction. */
    void *(*alloc)(const PwOps *o, size_t bytes);
    void (*free)(const PwOps *o, void *p);
    void (*copy)(const PwOps *o, void *dst, const void *src, size_t bytes, PwCopyKind kind);
    /* n copies device to device (zeros where src[i] is NULL), queued on the table's stream like
     * a kernel and not waited for (sync or copy waits): many copies pay one wait, not one each
     * (a weights payload's tensors), and on a GPU one launch for all of them, where a
     * cudaMemcpyAsync each costs a few microseconds however small */
    void (*copy_batch)(const PwOps *o, void *const *dst, const void *const *src,
                       const size_t *bytes, int n);
    void (*zero)(const PwOps *o, void *p, size_t bytes);
    void (*sync)(const PwOps *o);
    /* free and total bytes of the device (the CPU reports 0, 0: no fixed budget) */
    void (*mem_info)(const PwOps *o, size_t *free_bytes, size_t *total_bytes);
    /* graphs: graph_capture records the work fn(arg) queues on the table's stream, without
     * running it, as a graph that graph_run queues again whenever asked, with the same
     * arguments and pointers (whatever the pointed-to memory then holds). NULL when the table
     * has no graphs (the CPU) or the capture failed: the caller then runs fn(arg) itself. */
    void *(*graph_capture)(const PwOps *o, void (*fn)(void *), void *arg);
    void (*graph_run)(const PwOps *o, void *graph);
    void (*graph_free)(const PwOps *o, void *graph); /* NULL is ignored */
    /* marks, for timing the work queued (pw_ops_profile.h): mark_new makes one, mark_record
     * queues it on the stream (on the CPU: reads the clock), mark_ms is the milliseconds from
     * one recorded mark to a later one, waiting for the later to be reached */
    void *(*mark_new)(const PwOps *o);
    void (*mark_record)(const PwOps *o, void *mark);
    double (*mark_ms)(const PwOps *o, void *from, void *to);
    void (*mark_free)(const PwOps *o, void *mark); /* NULL is ignored */
    /* the table a profiled table times (pw_ops_profile.h); NULL for a table of its own */
    const PwOps *inner;

    /* ---- kernels */
    void (*encoder_forward)(const PwOps *o, float *out, const int *inp, const int *pos,
                            const float *wte, const float *wpe, int B, int T, int C);
    /* groups[0] the rows grouped by token, groups[1] by position (pw_row_groups), on the
     * table's device: the GPU's sums go by them (the CPU's loop has their order already) */
    void (*encoder_backward)(const PwOps *o, float *dwte, float *dwpe, const float *dout,
                             const int *inp, const int *pos, const PwRowGroups *groups, int B,
                             int T, int C);
    void (*layernorm_forward)(const PwOps *o, float *out, float *mean, float *rstd,
                              const float *inp, const float *weight, const float *bias, int N,
                              int C);
    /* dinp accumulates; dinp16 (NULL: none) takes the sum rounded to bfloat16 as well (a bf16
     * model's next product reads the residual stream's gradient so: no conversion pass) */
    void (*layernorm_backward)(const PwOps *o, float *dinp, uint16_t *dinp16, float *dweight,
                               float *dbias, const float *dout, const float *inp,
                               const float *weight, const float *mean, const float *rstd, int N,
                               int C);
    void (*matmul_forward)(const PwOps *o, float *out, const float *inp, const float *weight,
                           const float *bias, int N, int C, int OC);
    /* set_dinp: dinp is set to dout . W instead of added to (its old values never read: the
     * model's per-layer input gradients, which would otherwise be zeroed first); dweight and
     * dbias always accumulate */
    void (*matmul_backward)(const PwOps *o, float *dinp, float *dweight, float *dbias,
                            const float *dout, const float *inp, const float *weight, int N,
                            int C, int OC, int set_dinp);
    /* the same with bfloat16 operands, float32 accumulation and results (pw_kernels.h); the
     * CUDA table converts the operands into a workspace of its own on its stream. weight_bf16
     * (NULL: none) is weight already in bfloat16 (the model's mirror of its parameters, made
     * by to_bf16): it is read instead of converting weight again at every product. inp_bf16
     * (NULL: none) is inp already in bfloat16 (an activation the model keeps in bfloat16 for
     * its backward): read instead of inp, which may then be NULL. dout_bf16 (NULL: none), rows
     * dout_ld halves apart, is dout already in bfloat16 (the LM head's, from
     * logprobs_backward_bf16): read instead of dout, which may then be NULL. out_bf16 (NULL:
     * none) takes the forward's result rounded to bfloat16 instead of out (a bf16 model's q, k,
     * v and MLP pre-activation, kept only rounded): the float32 product and bias rounded once,
     * on the GPU by the GEMM's epilogue, no float32 result written and read back. */
    void (*matmul_forward_bf16)(const PwOps *o, float *out, uint16_t *out_bf16, const float *inp,
                                const uint16_t *inp_bf16, const float *weight,
                                const uint16_t *weight_bf16, const float *bias, int N, int C,
                                int OC);
    void (*matmul_backward_bf16)(const PwOps *o, float *dinp, float *dweight, float *dbias,
                                 const float *dout, const uint16_t *dout_bf16, size_t dout_ld,
                                 const float *inp, const uint16_t *inp_bf16, const float *weight,
                                 const uint16_t *weight_bf16, int N, int C, int OC,
                                 int set_dinp);
    /* dst (n) = src rounded to bfloat16, to nearest even (pw_bf16.h), on the table's stream;
     * from_bf16 widens back, exactly */
    void (*to_bf16)(const PwOps *o, uint16_t *dst, const float *src, size_t n);
    void (*from_bf16)(const PwOps *o, float *dst, const uint16_t *src, size_t n);
    /* The producers of a bf16 model's product inputs: layernorm_forward, rmsnorm_forward,
     * gelu_forward and swiglu_forward with their result rounded to bfloat16 (nearest even) in
     * out and no float32 copy: bit for bit to_bf16 of the float32 entry's result (mean and rstd
     * as it writes them), without writing and reading that result. GELU and SwiGLU also read
     * their input in bfloat16 (a bf16 model's MLP pre-activation, kept so for the backward):
     * the float32 entry's result on the widened input; gelu_backward_bf16 and
     * swiglu_backward_bf16 are the backward entries on such an input, and they SET their
     * gradient rounded to bfloat16 (the float32 entry's result added to zeros, then rounded):
     * the product it feeds (matmul_backward_bf16's dout_bf16) would round it anyway, so the
     * model neither zeroes it before nor writes, reads and converts a float32 copy after. */
    void (*layernorm_forward_bf16)(const PwOps *o, uint16_t *out, float *mean, float *rstd,
                                   const float *inp, const float *weight, const float *bias,
                                   int N, int C);
    void (*rmsnorm_forward_bf16)(const PwOps *o, uint16_t *out, float *rstd, const float *inp,
                                 const float *weight, int N, int C, float eps);
    /* The residual add and the norm that reads it: res = a + b (N x C; res may be a), then
     * layernorm_forward (out) or layernorm_forward_bf16 (out16, when not NULL) of res; the
     * same values as those entries one after the other, in one pass over the rows where the
     * device can fuse them (the GPU: one kernel, res not read back from memory). */
    void (*residual_layernorm_forward)(const PwOps *o, float *res, float *out, uint16_t *out16,
                                       float *mean, float *rstd, const float *a, const float *b,
                                       const float *weight, const float *bias, int N, int C);
    void (*residual_rmsnorm_forward)(const PwOps *o, float *res, float *out, uint16_t *out16,
                                     float *rstd, const float *a, const float *b,
                                     const float *weight, int N, int C, float eps);
    /* GELU and SwiGLU in bf16 read inp16 when inp is NULL; else inp rounded to bfloat16 (one
     * kernel where to_bf16 and the activation took two), the rounding kept in inp16 when that
     * is not NULL (the batch forward keeps it for the backward, a cache pass does not) */
    void (*gelu_forward_bf16)(const PwOps *o, uint16_t *out, uint16_t *inp16, const float *inp,
                              size_t N);
    void (*swiglu_forward_bf16)(const PwOps *o, uint16_t *out, uint16_t *gate_up16,
                                const float *gate_up, int N, int F);
    void (*gelu_backward_bf16)(const PwOps *o, uint16_t *dinp, const uint16_t *inp,
                               const float *dout, size_t N);
    void (*swiglu_backward_bf16)(const PwOps *o, uint16_t *dgate_up, const uint16_t *gate_up,
                                 const float *dout, int N, int F);
    /* GPT-2's MLP at bf16, each product with the GELU beside it in one entry, so that the GPU
     * may fuse the two (cuBLASLt's GELU epilogues, pw_cuda_set_lt_gelu). Operands as
     * matmul_forward_bf16's and matmul_backward_bf16's.
     * matmul_gelu_forward_bf16: out16 = GELU(inp . W^T + bias) in bfloat16; pre16 (NULL: none)
     * takes the sum rounded to bfloat16 (what the backward reads); pre (NULL: none) is N x OC
     * floats the table may use for the sum when pre16 is NULL (a cache pass's). The CPU's value
     * is matmul_forward_bf16 into pre16 (or pre), then gelu_forward_bf16 of it: bit for bit the
     * two entries. The GPU's, fused in cuBLASLt's epilogue, is GELU of the float32 sum rounded
     * once (the sum unrounded: within bfloat16's rounding of the CPU's); fused in the few-row
     * kernel's epilogue (a cache pass), or not fused, the CPU's.
     * matmul_backward_gelu_bf16 (the down-projection, whose input is GELU's output): dpre16
     * (N x C) is SET to GELU'(pre16) . (dout . W) rounded to bfloat16, gelu_backward_bf16 of
     * matmul_backward_bf16's dinp (the product's float32 result multiplied once, on the GPU
     * fused); dweight and dbias (NULL: none) accumulate as in matmul_backward_bf16; dinp_scratch
     * (NULL: none) is N x C floats the table may use for dout . W. */
    void (*matmul_gelu_forward_bf16)(const PwOps *o, uint16_t *out16, uint16_t *pre16,
                                     float *pre, const float *inp, const uint16_t *inp_bf16,
                                     const float *weight, const uint16_t *weight_bf16,
                                     const float *bias, int N, int C, int OC);
    /* The Llama family's MLP up-projection with its SwiGLU in a cache pass (nothing kept for a
     * backward): out16 (N x F) = SwiGLU of inp . W^T's [gate | up] halves (W 2F x C, no bias) in
     * bfloat16; pre (NULL: none) is N x 2F floats the table may use for the sum. The CPU's value
     * is matmul_forward_bf16 into pre, then swiglu_forward_bf16 of it (rounding as it reads):
     * bit for bit the two entries; the GPU's the same, in the few-row kernel's epilogue where it
     * takes the product (pw_cuda_set_skinny). */
    void (*matmul_swiglu_forward_bf16)(const PwOps *o, uint16_t *out16, float *pre,
                                       const float *inp, const uint16_t *inp_bf16,
                                       const float *weight, const uint16_t *weight_bf16, int N,
                                       int C, int F);
    void (*matmul_backward_gelu_bf16)(const PwOps *o, uint16_t *dpre16, const uint16_t *pre16,
                                      float *dinp_scratch, float *dweight, float *dbias,
                                      const float *dout, const uint16_t *dout_bf16,
                                      size_t dout_ld, const float *inp, const uint16_t *inp_bf16,
                                      const float *weight, const uint16_t *weight_bf16, int N,
                                      int C, int OC);
    void (*attention_forward)(const PwOps *o, float *out, float *lse, const float *qkv,
                              const int *mask, int B, int T, int C, int NH);
    void (*attention_backward)(const PwOps *o, float *dqkv, const float *dout, const float *qkv,
                               const float *lse, const int *mask, int B, int T, int C, int NH);
    /* the Llama family */
    void (*rmsnorm_forward)(const PwOps *o, float *out, float *rstd, const float *inp,
                            const float *weight, int N, int C, float eps);
    /* as layernorm_backward */
    void (*rmsnorm_backward)(const PwOps *o, float *dinp, uint16_t *dinp16, float *dweight,
                             const float *dout, const float *inp, const float *weight,
                             const float *rstd, int N, int C);
    /* Qwen3's q/k norm over the first NH + NKV heads of x's rows, in place (pw_kernels.h,
     * pw_head_rmsnorm_forward); raw and rstd NULL in a pass no backward follows */
    void (*head_rmsnorm_forward)(const PwOps *o, float *x, float *raw, float *rstd,
                                 const float *wq, const float *wk, int N, int NH, int NKV,
                                 int hs, int stride, float eps);
    void (*head_rmsnorm_backward)(const PwOps *o, float *dx, float *dwq, float *dwk,
                                  const float *raw, const float *rstd, const float *wq,
                                  const float *wk, int N, int NH, int NKV, int hs, int stride);
    /* x16 (NULL: none, x rotated in place): x is only read, and each whole row (stride values:
     * the rotated heads, then the rest unchanged) goes rounded to bfloat16 into x16 (a bf16
     * Llama's q, k, v for the attention) */
    void (*rope_forward)(const PwOps *o, float *x, uint16_t *x16, const int *pos,
                         const float *inv_freq, int N, int nheads, int hs, int stride);
    /* dx16 as rope_forward's x16 (a bf16 Llama's dqkv, the qkv product's dout) */
    void (*rope_backward)(const PwOps *o, float *dx, uint16_t *dx16, const int *pos,
                          const float *inv_freq, int N, int nheads, int hs, int stride);
    void (*swiglu_forward)(const PwOps *o, float *out, const float *gate_up, int N, int F);
    void (*swiglu_backward)(const PwOps *o, float *dgate_up, const float *gate_up,
                            const float *dout, int N, int F);
    void (*attention_gqa_forward)(const PwOps *o, float *out, float *lse, const float *qkv,
                                  const int *mask, int B, int T, int NH, int NKV, int hs);
    void (*attention_gqa_backward)(const PwOps *o, float *dqkv, const float *dout,
                                   const float *qkv, const float *lse, const int *mask, int B,
                                   int T, int NH, int NKV, int hs);
    /* the same in bfloat16 with float32 accumulation (pw_attention_gqa_forward_bf16: the
     * model's attention at precision bf16, on the GPU's tensor cores) on q, k and v kept in
     * bfloat16. The forward writes its output in float32 (out) and / or rounded to bfloat16
     * (out16: what a bf16 model keeps, its projection and this backward read; no float32 copy
     * written and converted), either may be NULL. The backward reads that rounded output and
     * SETS dqkv, or with dqkv16 (NULL: none) sets its rounding to bfloat16 there instead (a
     * bf16 GPT-2's qkv product reads that: no float32 dqkv written, read and converted; dqkv
     * is then not written) */
    void (*attention_gqa_forward_bf16)(const PwOps *o, float *out, uint16_t *out16, float *lse,
                                       const uint16_t *qkv, const int *mask, int B, int T, int NH,
                                       int NKV, int hs);
    void (*attention_gqa_backward_bf16)(const PwOps *o, float *dqkv, uint16_t *dqkv16,
                                        const float *dout, const uint16_t *qkv,
                                        const uint16_t *out16, const float *lse, const int *mask,
                                        int B, int T, int NH, int NKV, int hs);
    /* attention over a KV cache (both families: GPT-2's is NKV = NH), of float32 or bfloat16 */
    void (*attention_cache_gqa_forward)(const PwOps *o, float *out, float *kcache, float *vcache,
                                        float *scores, const float *qkv, const int *seg_row,
                                        const int *seg_off, const int *seg_slot0, int nseg, int N,
                                        int maxT, int NH, int NKV, int hs);
    /* out16 (NULL: none) takes the output rounded to bfloat16 instead of out (a bf16 model's
     * decode, whose projection reads it so): bit for bit to_bf16 of out */
    void (*attention_cache_gqa_forward_bf16)(const PwOps *o, float *out, uint16_t *out16,
                                             uint16_t *kcache, uint16_t *vcache, float *scores,
                                             const float *qkv, const int *seg_row,
                                             const int *seg_off, const int *seg_slot0, int nseg,
                                             int N, int maxT, int NH, int NKV, int hs);
    void (*gelu_forward)(const PwOps *o, float *out, const float *inp, size_t N);
    void (*gelu_backward)(const PwOps *o, float *dinp, const float *inp, const float *dout,
                          size_t N);
    void (*residual_forward)(const PwOps *o, float *out, const float *a, const float *b,
                             size_t N);
    /* stats (N, PW_LP_STATS) or NULL: each row's statistics, kept by the forward for the
     * backward, which then reads the logits once (pw_logprobs_forward) */
    void (*logprobs_forward)(const PwOps *o, float *logp, float *entropy, float *stats,
                             const float *logits, const int *targets, int N, int V, int ld);
    void (*logprobs_backward)(const PwOps *o, float *dlogits, const float *logits,
                              const float *stats, const int *targets, const float *dlogp,
                              const float *dentropy, int N, int V, int ld);
    /* the same times mul, rounded to bfloat16 for a bf16 LM head (pw_logprobs_backward_bf16):
     * rows 2 ld halves apart, so that dlogits16 may alias logits */
    void (*logprobs_backward_bf16)(const PwOps *o, uint16_t *dlogits16, const float *logits,
                                   const float *stats, const int *targets, const float *dlogp,
                                   const float *dentropy, int N, int V, int ld, float mul);
    void (*gather_rows)(const PwOps *o, float *dst, const float *src, const int *rows, int n,
                        int C);
    /* pw_adamw_update's: the gradients times gscale, the new weights rounded into params16
     * too when it is not NULL */
    void (*adamw_update)(const PwOps *o, float *params, uint16_t *params16, const float *grads,
                         float gscale, float *m, float *v, size_t n, float lr, float beta1,
                         float beta2, float eps, float weight_decay, int t);
    /* generation: n rows of logits (row i at logits + i * ld) to token[i], logp[i] and
     * logp_full[i], row i drawing from the stream rng[rows[i]] (pw_sample_rows, pw_sample.h) */
    void (*sample)(const PwOps *o, const float *logits, int ld, int n, int V, const int *rows,
                   const PwSampleConfig *sc, uint64_t *rng, int *token, float *logp,
                   float *logp_full);
    /* after a draw: the rows' bookkeeping where the draws are (pw_sample_record) */
    void (*record)(const PwOps *o, const PwGenRows *g, int n, const int *rows, const int *token,
                   const float *logp, const float *logp_full, int *pass_tok, int *pass_pos,
                   int *pass_slot0);
    double (*sumsq)(const PwOps *o, const float *x, size_t n); /* waits: returns a host value */
    void (*scale)(const PwOps *o, float *x, float s, size_t n);
};

/* The CPU table: static, never freed. */
const PwOps *pw_ops_cpu(void);
/* The bytes the CPU table's alloc has handed out and free not taken back, in this process:
 * what a plan of a model's memory (pw_model_plan) is held to on the CPU. */
size_t pw_cpu_table_bytes(void);
/* the most it has held at once since the process started, or since the last reset (which makes
 * it what is held now) */
size_t pw_cpu_table_peak_bytes(void);
void pw_cpu_table_peak_reset(void);
/* At most this many bytes held at once (0: no cap, the default): an allocation past it fails as
 * one on a full GPU does, so that tests show on the CPU what a model does without room. */
void pw_cpu_table_cap(size_t bytes);

/* A table for `device` (and GPU device_id): the CPU one, or a CUDA one with a stream of its own
 * on that GPU. NULL with a message when the CUDA backend was not built, or there is no such GPU. */
const PwOps *pw_ops_open(PwDevice device, int device_id, PwErr *err);
/* Release a table from pw_ops_open (its stream); the CPU table and NULL are ignored. */
void pw_ops_close(const PwOps *o);

#endif
