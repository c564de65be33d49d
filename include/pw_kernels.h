/* pw_kernels.h: math on one device, forward and backward, for the GPT-2 and Llama families.
 * The CPU versions live in src/kernels/cpu; CUDA twins keep these names with a _cuda suffix
 * and a trailing stream argument (docs/kernels.md). No MPI, no files, no YAML here.
 *
 * Conventions (as llm.c):
 *   shapes are B (batch), T (time), C (channels), NH (heads), V (vocabulary), OC (out channels),
 *   N is a count of rows (usually B*T); tensors are dense, row-major, float32;
 *   every *_backward ACCUMULATES (+=) into its gradient outputs, so callers zero gradients once
 *   per step; a NULL gradient pointer means "not needed" and is skipped.
 *   mask (B,T) holds 1 for a real token and 0 for padding; batches are LEFT-padded, so each
 *   sequence starts at its own column. A NULL mask means every token is real. */
#ifndef PW_KERNELS_H
#define PW_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* ---- embeddings: out(B,T,C) = wte[inp[b,t]] + wpe[pos[b,t]] (pos from the mask, see pw_positions) */
void pw_positions_from_mask(int *pos, const int *mask, int B, int T);
void pw_encoder_forward(float *out, const int *inp, const int *pos, const float *wte,
                        const float *wpe, int B, int T, int C);
void pw_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp,
                         const int *pos, int B, int T, int C);
/* The rows of a batch grouped by the embedding row each adds its gradient into (its token, or
 * its position): group g adds rows order[start[g]] .. order[start[g + 1] - 1], in ascending
 * order, into row key[g]; n groups. The loop above adds them so, row after row; the GPU's
 * backward takes a group a block and sums it in that order too, for the same bits on every run
 * (atomic adds into a shared row come in any order). */
typedef struct PwRowGroups {
    const int *order, *start, *key;
    int n;
} PwRowGroups;
/* Rows 0 .. n-1 grouped by keys[r] in [0, nkeys): order and key hold n ints, start n + 1,
 * count (scratch) nkeys + 1; returns the number of groups, -1 for a key out of range. */
int pw_row_groups(const int *keys, int n, int nkeys, int *order, int *start, int *key,
                  int *count);

/* ---- LayerNorm over the last dimension, eps = 1e-5; mean and rstd (N) saved for backward */
void pw_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                          const float *weight, const float *bias, int N, int C);
void pw_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                           const float *inp, const float *weight, const float *mean,
                           const float *rstd, int N, int C);

/* ---- matmul (OpenBLAS sgemm): out(N,OC) = inp(N,C) . weight(OC,C)^T + bias(OC)
 * weight is stored (OC,C) as torch.nn.Linear; bias may be NULL. */
void pw_matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                       int N, int C, int OC);
void pw_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, int N, int C, int OC);

/* ---- the same products with bfloat16 operands and float32 accumulation and results (the
 * precision bf16 of docs/model.md): each operand is rounded to the nearest bfloat16 (ties to
 * even) and the float32 product is taken of the rounded values, dbias summing the rounded dout,
 * as the GPU's tensor-core path does. Rounded copies are made per call: on the CPU this is the
 * reference the GPU is checked against, not a way to go faster. */
void pw_matmul_forward_bf16(float *out, const float *inp, const float *weight, const float *bias,
                            int N, int C, int OC);
void pw_matmul_backward_bf16(float *dinp, float *dweight, float *dbias, const float *dout,
                             const float *inp, const float *weight, int N, int C, int OC);

/* ---- causal multi-head self-attention with a key padding mask.
 * qkv (B,T,3C) holds q, k, v side by side; out (B,T,C); lse (B,NH,T) keeps for backward the
 * log-sum-exp of each query's scaled scores over its real keys s <= t (the softmax's
 * normaliser: backward recomputes the scores and the probabilities exp(score - lse) from q and
 * k, so no (B,NH,T,T) matrix outlives a call). Query rows of padding tokens attend to nothing:
 * their output is 0 and their lse 0. Scale 1/sqrt(C/NH). */
void pw_attention_forward(float *out, float *lse, const float *qkv, const int *mask,
                          int B, int T, int C, int NH);
void pw_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *lse,
                           const int *mask, int B, int T, int C, int NH);

/* ---- attention of N new tokens over a KV cache (generation). The tokens come in nseg
 * segments: segment s is tokens seg_off[s] .. seg_off[s+1]-1 (seg_off[nseg] = N) of cache row
 * seg_row[s], and they take that row's slots seg_slot0[s], seg_slot0[s] + 1, ... (a slot is the
 * token's position: a row's real tokens fill its slots from 0, whatever the padding of its
 * batch). Each token's k and v (from qkv (N,3C)) are written to its slots of one layer's
 * kcache and vcache (maxB, NH, maxT, hs) first; then its query attends to slots 0 .. its own.
 * No slot below that is padding, so no mask is needed. out (N,C). scores: (nseg, NH, maxT)
 * floats of scratch (the CUDA twin needs none and accepts NULL). */
void pw_attention_cache_forward(float *out, float *kcache, float *vcache, float *scores,
                                const float *qkv, const int *seg_row, const int *seg_off,
                                const int *seg_slot0, int nseg, int N, int maxT, int C, int NH);

/* ---- dst (n,C) = rows rows[0..n) of src (.,C) */
void pw_gather_rows(float *dst, const float *src, const int *rows, int n, int C);

/* ---- GELU, tanh approximation (GPT-2's "gelu_new") */
void pw_gelu_forward(float *out, const float *inp, size_t N);
void pw_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N);

/* ---- residual: out = a + b */
void pw_residual_forward(float *out, const float *a, const float *b, size_t N);
void pw_residual_backward(float *da, float *db, const float *dout, size_t N);

/* ---- log-probabilities and entropies of chosen tokens, one softmax row at a time.
 * logits (N,ld): row i's V real logits at logits + i ld, then ld - V padding columns that
 * nothing reads (the padded vocabulary; ld = V when unpadded); targets (N) in [0, V) (a negative
 * target skips the row: logp = entropy = 0); logp[i] = log softmax(logits[i][0..V))[targets[i]],
 * entropy[i] = -sum_v p log p (entropy may be NULL). Backward writes (does not accumulate)
 * dlogits (N,ld) from dlogp and dentropy (either may be NULL = zero), 0 in the padding columns;
 * dlogits may alias logits, which lets the caller reuse the logits buffer.
 * stats (N, PW_LP_STATS), or NULL: the forward writes each row's max, log Z and entropy there
 * (0 on a skipped row), and the backward given them reads them instead of passing over the row
 * again: one read of the logits, where the statistics cost a second (the largest tensor of a
 * step: 3.3 GB at GPT-2's vocabulary, 16384 rows). They must be the forward's of the same
 * logits; they are the very bits the backward would compute, so its output is unchanged. */
#define PW_LP_STATS 3
void pw_logprobs_forward(float *logp, float *entropy, float *stats, const float *logits,
                         const int *targets, int N, int V, int ld);
void pw_logprobs_backward(float *dlogits, const float *logits, const float *stats,
                          const int *targets, const float *dlogp, const float *dentropy, int N,
                          int V, int ld);
/* The backward for a bf16 LM head, whose product rounds dlogits anyway: mul * dlogits (mul: 1 /
 * temperature) rounded to bfloat16, the bits of pw_logprobs_backward's output scaled and
 * rounded; row i at dlogits16 + 2 i ld halves, where row i of logits starts, so dlogits16 may
 * alias logits (no float32 gradient written and read back, no buffer of its own). */
void pw_logprobs_backward_bf16(uint16_t *dlogits16, const float *logits, const float *stats,
                               const int *targets, const float *dlogp, const float *dentropy,
                               int N, int V, int ld, float mul);

/* ---- softmax cross-entropy: losses[i] = -logp[i]; the same row-at-a-time rules as above.
 * dlosses (N) are the per-row weights of the loss (e.g. mask / count); dlogits written. */
void pw_crossentropy_forward(float *losses, const float *logits, const int *targets, int N, int V);
void pw_crossentropy_backward(float *dlogits, const float *logits, const int *targets,
                              const float *dlosses, int N, int V);

/* ---- optimiser: AdamW with decoupled weight decay (Loshchilov & Hutter), step t >= 1,
 * bias-corrected. Applied to one contiguous group of n parameters. Each gradient is multiplied
 * by gscale first (a clipping's factor, 1 for none: the bits of pw_scale then the update, the
 * gradients left as they were), and the new weights are also rounded into params16 when it is
 * not NULL (a bf16 model's copy: the bits of pw_bf16_from_f32 after the update). */
void pw_adamw_update(float *params, uint16_t *params16, const float *grads, float gscale,
                     float *m, float *v, size_t n, float lr, float beta1, float beta2, float eps,
                     float weight_decay, int t);

/* ---- global-norm gradient clipping: sum of squares (in double) of a buffer, and scaling. */
double pw_sumsq(const float *x, size_t n);
void pw_scale(float *x, float s, size_t n);

/* ======== the Llama family (Llama 3, Qwen2, Mistral, SmolLM) ======== */

/* ---- RMSNorm over the last dimension: out = inp * rstd * weight with
 * rstd = 1 / sqrt(mean(inp^2) + eps) per row; rstd (N) is saved for backward and may be NULL
 * when none follows. */
void pw_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int N,
                        int C, float eps);
void pw_rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp,
                         const float *weight, const float *rstd, int N, int C);

/* ---- Qwen3's q/k norm: RMSNorm over each head of hs floats of the first NH + NKV heads of
 * each of the N rows of x (row n starts at n * stride floats), IN PLACE: heads 0..NH-1 (the
 * queries) with wq (hs), heads NH..NH+NKV-1 (the keys) with wk (hs); the rest of the row (the
 * values) is left alone. raw (N, NH + NKV, hs) receives the heads as they were and rstd
 * (N, NH + NKV) their statistics, for the backward; both NULL when none follows. The backward
 * turns the gradient of the normed heads in dx into that of the raw ones, in place, and adds
 * the weights' gradients into dwq and dwk (NULL: not wanted). */
void pw_head_rmsnorm_forward(float *x, float *raw, float *rstd, const float *wq, const float *wk,
                             int N, int NH, int NKV, int hs, int stride, float eps);
void pw_head_rmsnorm_backward(float *dx, float *dwq, float *dwk, const float *raw,
                              const float *rstd, const float *wq, const float *wk, int N, int NH,
                              int NKV, int hs, int stride);

/* ---- rotary position embeddings, Hugging Face's rotate_half convention: in each head of hs
 * floats, the pair (i, i + hs/2) turns by the angle pos[n] * inv_freq[i], i < hs/2. The first
 * nheads heads of each of the N rows (row n starts at n * stride floats) are rotated IN PLACE,
 * so nothing is kept for backward: the backward turns the gradient in place by the opposite
 * angle (the rotation is orthogonal). pos NULL means pos[n] = n; packed tokens pass their own
 * positions. The angle is the fp32 product pos * inv_freq, as transformers computes it. */
void pw_rope_forward(float *x, const int *pos, const float *inv_freq, int N, int nheads, int hs,
                     int stride);
void pw_rope_backward(float *dx, const int *pos, const float *inv_freq, int N, int nheads, int hs,
                      int stride);

/* rope_scaling of a config: type 0 none (transformers' "default"), 1 "llama3" */
typedef struct PwRopeScaling {
    int type;
    double factor, low_freq_factor, high_freq_factor;
    int original_max_position_embeddings;
} PwRopeScaling;
/* Host helper: inv_freq (hs/2) = theta^(-2i/hs), then the scaling (NULL = none); computed in
 * double, stored in float. */
void pw_rope_inv_freq(float *inv_freq, int hs, double theta, const PwRopeScaling *s);

/* ---- SwiGLU: gate_up (N, 2F) holds [gate | up] per row; out (N, F) = silu(gate) * up.
 * The backward accumulates into dgate_up (N, 2F). */
void pw_swiglu_forward(float *out, const float *gate_up, int N, int F);
void pw_swiglu_backward(float *dgate_up, const float *gate_up, const float *dout, int N, int F);

/* ---- grouped-query causal attention with a key padding mask: pw_attention_* with NKV key and
 * value heads, each shared by NH / NKV consecutive query heads (NH % NKV == 0). qkv (B, T,
 * (NH + 2 NKV) hs) = [q heads | k heads | v heads]; out (B, T, NH hs); lse (B, NH, T) as above;
 * padding queries give 0. Scale 1/sqrt(hs). NKV == NH is pw_attention_* with C = NH hs. */
void pw_attention_gqa_forward(float *out, float *lse, const float *qkv, const int *mask, int B,
                              int T, int NH, int NKV, int hs);
void pw_attention_gqa_backward(float *dqkv, const float *dout, const float *qkv, const float *lse,
                               const int *mask, int B, int T, int NH, int NKV, int hs);
/* The same in bfloat16 with float32 accumulation: the twin of the GPU's tensor-core attention
 * (what the model runs at precision bf16). Forward: q, k and v rounded to bfloat16, the scores
 * and the softmax in float32, each exp(score - row max) rounded to bfloat16 for the P v
 * product; lse as above (of the unrounded probabilities). Backward: P recomputed from lse in
 * float32, dP = dout v^T from rounded operands, D = rowsum(dout * out) in float32 from the
 * forward's out rounded to bfloat16 (out16, (B, T, NH hs): what a bf16 model keeps, as
 * flash-attention does) and the float32 dout, dS = scale P (dP - D); P and dS rounded to bfloat16 before
 * dv += P^T dout, dk += dS^T q and dq += dS k. q, k and v come in bfloat16 (their bits); the
 * backward SETS dqkv (the GPU's kernels write every element once). */
void pw_attention_gqa_forward_bf16(float *out, float *lse, const uint16_t *qkv, const int *mask,
                                   int B, int T, int NH, int NKV, int hs);
void pw_attention_gqa_backward_bf16(float *dqkv, const float *dout, const uint16_t *qkv,
                                    const uint16_t *out16, const float *lse, const int *mask,
                                    int B, int T, int NH, int NKV, int hs);

/* ---- grouped-query attention over a KV cache (generation): pw_attention_cache_forward with
 * qkv rows of (NH + 2 NKV) hs, caches (maxB, NKV, maxT, hs), out (N, NH hs) and scores
 * (nseg, NH, maxT) floats of scratch. */
void pw_attention_cache_gqa_forward(float *out, float *kcache, float *vcache, float *scores,
                                    const float *qkv, const int *seg_row, const int *seg_off,
                                    const int *seg_slot0, int nseg, int N, int maxT, int NH,
                                    int NKV, int hs);
/* the same over a bfloat16 cache: each token's k and v are rounded to nearest even as they are
 * stored (pw_bf16.h) and widened as they are read; the scores and the output stay float32, so
 * the output is the float32 kernel's over a cache holding the rounded values */
void pw_attention_cache_gqa_forward_bf16(float *out, uint16_t *kcache, uint16_t *vcache,
                                         float *scores, const float *qkv, const int *seg_row,
                                         const int *seg_off, const int *seg_slot0, int nseg,
                                         int N, int maxT, int NH, int NKV, int hs);

#endif
