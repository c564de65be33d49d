/* profile_entries.c: the profiled table's entries (pw_ops_profile.h): each runs the wrapped
 * table's entry of the same name inside a span (profile.c), labelled with its sizes. The flops
 * are the products' (2 a multiply-add; the attention counted whole, causal or not, as
 * bench_kernels_cuda counts it); a copy's bytes are the bytes copied. */
#include <string.h>

#include "ops_entries.h"
#include "profile_internal.h"

#define I(o) ((o)->inner)
/* run CALL (which names the wrapped table I(o)) in a span for entry OP, then label it */
#define TIMED(o, CALL, OP, flops, bytes, ...)                                                 \
    do {                                                                                       \
        PwProfSpan s_;                                                                         \
        pw_prof_begin(o, &s_);                                                                 \
        CALL;                                                                                  \
        pw_prof_end(o, &s_, OP, flops, bytes, __VA_ARGS__);                                    \
    } while (0)

/* ---- memory: timed like the kernels; those that wait read the spans while they are at it */
static void *p_alloc(const PwOps *o, size_t bytes)
{
    void *p;
    TIMED(o, p = I(o)->alloc(I(o), bytes), "alloc", 0, 0, "%s", "");
    return p;
}
static void p_free(const PwOps *o, void *p)
{
    TIMED(o, I(o)->free(I(o), p), "free", 0, 0, "%s", "");
    pw_prof_resolve(o);
}
static void p_copy(const PwOps *o, void *dst, const void *src, size_t bytes, PwCopyKind kind)
{
    static const char *const kinds[] = {"H2D", "D2H", "D2D"};
    TIMED(o, I(o)->copy(I(o), dst, src, bytes, kind), "copy", 0, (double)bytes, "%s",
          kinds[kind]);
    pw_prof_resolve(o);
}
static void p_copy_batch(const PwOps *o, void *const *dst, const void *const *src,
                         const size_t *bytes, int n)
{
    double total = 0.0;
    for (int i = 0; i < n; i++) total += (double)bytes[i];
    TIMED(o, I(o)->copy_batch(I(o), dst, src, bytes, n), "copy_batch", 0, total, "n=%d", n);
}
static void p_zero(const PwOps *o, void *p, size_t bytes)
{
    TIMED(o, I(o)->zero(I(o), p, bytes), "zero", 0, (double)bytes, "%s", "");
}
static void p_sync(const PwOps *o)
{
    I(o)->sync(I(o));
    pw_prof_resolve(o);
}
static void p_mem_info(const PwOps *o, size_t *free_bytes, size_t *total_bytes)
{
    I(o)->mem_info(I(o), free_bytes, total_bytes);
}
/* no graphs: the caller runs its work call by call, and each call is timed */
static void *p_graph_capture(const PwOps *o, void (*fn)(void *), void *arg)
{
    (void)o, (void)fn, (void)arg;
    return NULL;
}
static void p_graph_run(const PwOps *o, void *graph) { I(o)->graph_run(I(o), graph); }
static void p_graph_free(const PwOps *o, void *graph) { I(o)->graph_free(I(o), graph); }
static void *p_mark_new(const PwOps *o) { return I(o)->mark_new(I(o)); }
static void p_mark_record(const PwOps *o, void *m) { I(o)->mark_record(I(o), m); }
static double p_mark_ms(const PwOps *o, void *a, void *b) { return I(o)->mark_ms(I(o), a, b); }
static void p_mark_free(const PwOps *o, void *m) { I(o)->mark_free(I(o), m); }

/* ---- kernels, in PW_OPS_KERNEL_ENTRIES's names */
#define MM(N, C, OC) (2.0 * (double)(N) * (double)(C) * (double)(OC))
#define ATT(B, NH, T, hs) (4.0 * (double)(B) * (NH) * (double)(T) * (double)(T) * (hs))

static void encoder_fwd(const PwOps *o, float *out, const int *inp, const int *pos,
                        const float *wte, const float *wpe, int B, int T, int C)
{
    TIMED(o, I(o)->encoder_forward(I(o), out, inp, pos, wte, wpe, B, T, C), "encoder_forward",
          0, 0, "B=%d T=%d C=%d", B, T, C);
}
static void encoder_bwd(const PwOps *o, float *dwte, float *dwpe, const float *dout,
                        const int *inp, const int *pos, const PwRowGroups *groups, int B, int T,
                        int C)
{
    TIMED(o, I(o)->encoder_backward(I(o), dwte, dwpe, dout, inp, pos, groups, B, T, C),
          "encoder_backward", 0, 0, "B=%d T=%d C=%d", B, T, C);
}
static void layernorm_fwd(const PwOps *o, float *out, float *mean, float *rstd, const float *inp,
                          const float *weight, const float *bias, int N, int C)
{
    TIMED(o, I(o)->layernorm_forward(I(o), out, mean, rstd, inp, weight, bias, N, C),
          "layernorm_forward", 0, 0, "N=%d C=%d", N, C);
}
static void layernorm_bwd(const PwOps *o, float *dinp, uint16_t *dinp16, float *dweight,
                          float *dbias, const float *dout, const float *inp, const float *weight,
                          const float *mean, const float *rstd, int N, int C)
{
    TIMED(o,
          I(o)->layernorm_backward(I(o), dinp, dinp16, dweight, dbias, dout, inp, weight, mean,
                                   rstd, N, C),
          "layernorm_backward", 0, 0, "N=%d C=%d", N, C);
}
static void matmul_fwd(const PwOps *o, float *out, const float *inp, const float *weight,
                       const float *bias, int N, int C, int OC)
{
    TIMED(o, I(o)->matmul_forward(I(o), out, inp, weight, bias, N, C, OC), "matmul_forward",
          MM(N, C, OC), 0, "N=%d C=%d OC=%d", N, C, OC);
}
static void matmul_bwd(const PwOps *o, float *dinp, float *dweight, float *dbias,
                       const float *dout, const float *inp, const float *weight, int N, int C,
                       int OC, int set_dinp)
{
    TIMED(o,
          I(o)->matmul_backward(I(o), dinp, dweight, dbias, dout, inp, weight, N, C, OC,
                                set_dinp),
          "matmul_backward", MM(N, C, OC) * ((dinp != NULL) + (dweight != NULL)), 0,
          "N=%d C=%d OC=%d%s%s", N, C, OC, dinp ? " dinp" : "", dweight ? " dweight" : "");
}
static void matmul_fwd_bf16(const PwOps *o, float *out, uint16_t *out_bf16, const float *inp,
                            const uint16_t *inp_bf16, const float *weight,
                            const uint16_t *weight_bf16, const float *bias, int N, int C, int OC)
{
    TIMED(o,
          I(o)->matmul_forward_bf16(I(o), out, out_bf16, inp, inp_bf16, weight, weight_bf16, bias,
                                    N, C, OC),
          "matmul_forward_bf16", MM(N, C, OC), 0, "N=%d C=%d OC=%d", N, C, OC);
}
static void matmul_bwd_bf16(const PwOps *o, float *dinp, float *dweight, float *dbias,
                            const float *dout, const uint16_t *dout_bf16, size_t dout_ld,
                            const float *inp, const uint16_t *inp_bf16, const float *weight,
                            const uint16_t *weight_bf16, int N, int C, int OC, int set_dinp)
{
    TIMED(o,
          I(o)->matmul_backward_bf16(I(o), dinp, dweight, dbias, dout, dout_bf16, dout_ld, inp,
                                     inp_bf16, weight, weight_bf16, N, C, OC, set_dinp),
          "matmul_backward_bf16", MM(N, C, OC) * ((dinp != NULL) + (dweight != NULL)), 0,
          "N=%d C=%d OC=%d%s%s", N, C, OC, dinp ? " dinp" : "", dweight ? " dweight" : "");
}
static void to_bf16_entry(const PwOps *o, uint16_t *dst, const float *src, size_t n)
{
    TIMED(o, I(o)->to_bf16(I(o), dst, src, n), "to_bf16", 0, 0, "n=%zu", n);
}
static void from_bf16_entry(const PwOps *o, float *dst, const uint16_t *src, size_t n)
{
    TIMED(o, I(o)->from_bf16(I(o), dst, src, n), "from_bf16", 0, 0, "n=%zu", n);
}
static void layernorm_fwd_bf16(const PwOps *o, uint16_t *out, float *mean, float *rstd,
                               const float *inp, const float *weight, const float *bias, int N,
                               int C)
{
    TIMED(o, I(o)->layernorm_forward_bf16(I(o), out, mean, rstd, inp, weight, bias, N, C),
          "layernorm_forward_bf16", 0, 0, "N=%d C=%d", N, C);
}
static void rmsnorm_fwd_bf16(const PwOps *o, uint16_t *out, float *rstd, const float *inp,
                             const float *weight, int N, int C, float eps)
{
    TIMED(o, I(o)->rmsnorm_forward_bf16(I(o), out, rstd, inp, weight, N, C, eps),
          "rmsnorm_forward_bf16", 0, 0, "N=%d C=%d", N, C);
}
static void residual_layernorm_fwd(const PwOps *o, float *res, float *out, uint16_t *out16,
                                   float *mean, float *rstd, const float *a, const float *b,
                                   const float *weight, const float *bias, int N, int C)
{
    TIMED(o,
          I(o)->residual_layernorm_forward(I(o), res, out, out16, mean, rstd, a, b, weight, bias,
                                           N, C),
          "residual_layernorm_forward", 0, 0, "N=%d C=%d%s", N, C, out16 ? " bf16" : "");
}
static void residual_rmsnorm_fwd(const PwOps *o, float *res, float *out, uint16_t *out16,
                                 float *rstd, const float *a, const float *b, const float *weight,
                                 int N, int C, float eps)
{
    TIMED(o,
          I(o)->residual_rmsnorm_forward(I(o), res, out, out16, rstd, a, b, weight, N, C, eps),
          "residual_rmsnorm_forward", 0, 0, "N=%d C=%d%s", N, C, out16 ? " bf16" : "");
}
static void gelu_fwd_bf16(const PwOps *o, uint16_t *out, uint16_t *inp16, const float *inp,
                          size_t N)
{
    TIMED(o, I(o)->gelu_forward_bf16(I(o), out, inp16, inp, N), "gelu_forward_bf16", 0, 0,
          "N=%zu", N);
}
static void swiglu_fwd_bf16(const PwOps *o, uint16_t *out, uint16_t *gate_up16,
                            const float *gate_up, int N, int F)
{
    TIMED(o, I(o)->swiglu_forward_bf16(I(o), out, gate_up16, gate_up, N, F),
          "swiglu_forward_bf16", 0, 0, "N=%d F=%d", N, F);
}
static void gelu_bwd_bf16(const PwOps *o, uint16_t *dinp, const uint16_t *inp, const float *dout,
                          size_t N)
{
    TIMED(o, I(o)->gelu_backward_bf16(I(o), dinp, inp, dout, N), "gelu_backward_bf16", 0, 0,
          "N=%zu", N);
}
static void swiglu_bwd_bf16(const PwOps *o, uint16_t *dgate_up, const uint16_t *gate_up,
                            const float *dout, int N, int F)
{
    TIMED(o, I(o)->swiglu_backward_bf16(I(o), dgate_up, gate_up, dout, N, F),
          "swiglu_backward_bf16", 0, 0, "N=%d F=%d", N, F);
}
static void matmul_gelu_fwd_bf16(const PwOps *o, uint16_t *out16, uint16_t *pre16, float *pre,
                                 const float *inp, const uint16_t *inp_bf16, const float *weight,
                                 const uint16_t *weight_bf16, const float *bias, int N, int C,
                                 int OC)
{
    TIMED(o,
          I(o)->matmul_gelu_forward_bf16(I(o), out16, pre16, pre, inp, inp_bf16, weight,
                                         weight_bf16, bias, N, C, OC),
          "matmul_gelu_forward_bf16", MM(N, C, OC), 0, "N=%d C=%d OC=%d", N, C, OC);
}
static void matmul_swiglu_fwd_bf16(const PwOps *o, uint16_t *out16, float *pre, const float *inp,
                                   const uint16_t *inp_bf16, const float *weight,
                                   const uint16_t *weight_bf16, int N, int C, int F)
{
    TIMED(o,
          I(o)->matmul_swiglu_forward_bf16(I(o), out16, pre, inp, inp_bf16, weight, weight_bf16,
                                           N, C, F),
          "matmul_swiglu_forward_bf16", MM(N, C, 2 * F), 0, "N=%d C=%d F=%d", N, C, F);
}
static void matmul_bwd_gelu_bf16(const PwOps *o, uint16_t *dpre16, const uint16_t *pre16,
                                 float *dinp_scratch, float *dweight, float *dbias,
                                 const float *dout, const uint16_t *dout_bf16, size_t dout_ld,
                                 const float *inp, const uint16_t *inp_bf16, const float *weight,
                                 const uint16_t *weight_bf16, int N, int C, int OC)
{
    TIMED(o,
          I(o)->matmul_backward_gelu_bf16(I(o), dpre16, pre16, dinp_scratch, dweight, dbias,
                                          dout, dout_bf16, dout_ld, inp, inp_bf16, weight,
                                          weight_bf16, N, C, OC),
          "matmul_backward_gelu_bf16", MM(N, C, OC) * (1 + (dweight != NULL)), 0,
          "N=%d C=%d OC=%d%s", N, C, OC, dweight ? " dweight" : "");
}
static void attention_fwd(const PwOps *o, float *out, float *lse, const float *qkv,
                          const int *mask, int B, int T, int C, int NH)
{
    TIMED(o, I(o)->attention_forward(I(o), out, lse, qkv, mask, B, T, C, NH),
          "attention_forward", ATT(B, NH, T, C / NH), 0, "B=%d T=%d C=%d NH=%d", B, T, C, NH);
}
static void attention_bwd(const PwOps *o, float *dqkv, const float *dout, const float *qkv,
                          const float *lse, const int *mask, int B, int T, int C, int NH)
{
    TIMED(o, I(o)->attention_backward(I(o), dqkv, dout, qkv, lse, mask, B, T, C, NH),
          "attention_backward", 2 * ATT(B, NH, T, C / NH), 0, "B=%d T=%d C=%d NH=%d", B, T, C,
          NH);
}
static void rmsnorm_fwd(const PwOps *o, float *out, float *rstd, const float *inp,
                        const float *weight, int N, int C, float eps)
{
    TIMED(o, I(o)->rmsnorm_forward(I(o), out, rstd, inp, weight, N, C, eps), "rmsnorm_forward",
          0, 0, "N=%d C=%d", N, C);
}
static void rmsnorm_bwd(const PwOps *o, float *dinp, uint16_t *dinp16, float *dweight,
                        const float *dout, const float *inp, const float *weight,
                        const float *rstd, int N, int C)
{
    TIMED(o, I(o)->rmsnorm_backward(I(o), dinp, dinp16, dweight, dout, inp, weight, rstd, N, C),
          "rmsnorm_backward", 0, 0, "N=%d C=%d", N, C);
}
static void head_rmsnorm_fwd(const PwOps *o, float *x, float *raw, float *rstd,
                             const float *wq, const float *wk, int N, int NH, int NKV, int hs,
                             int stride, float eps)
{
    TIMED(o, I(o)->head_rmsnorm_forward(I(o), x, raw, rstd, wq, wk, N, NH, NKV, hs, stride, eps),
          "head_rmsnorm_forward", 0, 0, "N=%d heads=%d+%d hs=%d", N, NH, NKV, hs);
}
static void head_rmsnorm_bwd(const PwOps *o, float *dx, float *dwq, float *dwk, const float *raw,
                             const float *rstd, const float *wq, const float *wk, int N, int NH,
                             int NKV, int hs, int stride)
{
    TIMED(o,
          I(o)->head_rmsnorm_backward(I(o), dx, dwq, dwk, raw, rstd, wq, wk, N, NH, NKV, hs,
                                      stride),
          "head_rmsnorm_backward", 0, 0, "N=%d heads=%d+%d hs=%d", N, NH, NKV, hs);
}
static void rope_fwd(const PwOps *o, float *x, uint16_t *x16, const int *pos,
                     const float *inv_freq, int N, int nheads, int hs, int stride)
{
    TIMED(o, I(o)->rope_forward(I(o), x, x16, pos, inv_freq, N, nheads, hs, stride),
          "rope_forward", 0, 0, "N=%d heads=%d hs=%d", N, nheads, hs);
}
static void rope_bwd(const PwOps *o, float *dx, uint16_t *dx16, const int *pos,
                     const float *inv_freq, int N, int nheads, int hs, int stride)
{
    TIMED(o, I(o)->rope_backward(I(o), dx, dx16, pos, inv_freq, N, nheads, hs, stride),
          "rope_backward", 0, 0, "N=%d heads=%d hs=%d", N, nheads, hs);
}
static void swiglu_fwd(const PwOps *o, float *out, const float *gate_up, int N, int F)
{
    TIMED(o, I(o)->swiglu_forward(I(o), out, gate_up, N, F), "swiglu_forward", 0, 0,
          "N=%d F=%d", N, F);
}
static void swiglu_bwd(const PwOps *o, float *dgate_up, const float *gate_up, const float *dout,
                       int N, int F)
{
    TIMED(o, I(o)->swiglu_backward(I(o), dgate_up, gate_up, dout, N, F), "swiglu_backward", 0,
          0, "N=%d F=%d", N, F);
}
static void attention_gqa_fwd(const PwOps *o, float *out, float *lse, const float *qkv,
                              const int *mask, int B, int T, int NH, int NKV, int hs)
{
    TIMED(o, I(o)->attention_gqa_forward(I(o), out, lse, qkv, mask, B, T, NH, NKV, hs),
          "attention_gqa_forward", ATT(B, NH, T, hs), 0, "B=%d T=%d NH=%d NKV=%d hs=%d", B, T,
          NH, NKV, hs);
}
static void attention_gqa_bwd(const PwOps *o, float *dqkv, const float *dout, const float *qkv,
                              const float *lse, const int *mask, int B, int T, int NH, int NKV,
                              int hs)
{
    TIMED(o,
          I(o)->attention_gqa_backward(I(o), dqkv, dout, qkv, lse, mask, B, T, NH, NKV, hs),
          "attention_gqa_backward", 2 * ATT(B, NH, T, hs), 0, "B=%d T=%d NH=%d NKV=%d hs=%d", B,
          T, NH, NKV, hs);
}
static void attention_gqa_fwd_bf16(const PwOps *o, float *out, uint16_t *out16, float *lse,
                                   const uint16_t *qkv, const int *mask, int B, int T, int NH,
                                   int NKV, int hs)
{
    TIMED(o,
          I(o)->attention_gqa_forward_bf16(I(o), out, out16, lse, qkv, mask, B, T, NH, NKV, hs),
          "attention_gqa_forward_bf16", ATT(B, NH, T, hs), 0, "B=%d T=%d NH=%d NKV=%d hs=%d", B,
          T, NH, NKV, hs);
}
static void attention_gqa_bwd_bf16(const PwOps *o, float *dqkv, uint16_t *dqkv16,
                                   const float *dout, const uint16_t *qkv,
                                   const uint16_t *out16, const float *lse, const int *mask,
                                   int B, int T, int NH, int NKV, int hs)
{
    TIMED(o,
          I(o)->attention_gqa_backward_bf16(I(o), dqkv, dqkv16, dout, qkv, out16, lse, mask, B,
                                            T, NH, NKV, hs),
          "attention_gqa_backward_bf16", 2 * ATT(B, NH, T, hs), 0,
          "B=%d T=%d NH=%d NKV=%d hs=%d", B, T, NH, NKV, hs);
}
static void attention_cache_gqa_fwd(const PwOps *o, float *out, float *kcache, float *vcache,
                                    float *scores, const float *qkv, const int *seg_row,
                                    const int *seg_off, const int *seg_slot0, int nseg, int N,
                                    int maxT, int NH, int NKV, int hs)
{
    TIMED(o,
          I(o)->attention_cache_gqa_forward(I(o), out, kcache, vcache, scores, qkv, seg_row,
                                            seg_off, seg_slot0, nseg, N, maxT, NH, NKV, hs),
          "attention_cache_gqa_forward", 0, 0, "N=%d maxT=%d NH=%d NKV=%d hs=%d", N, maxT, NH,
          NKV, hs);
}
static void attention_cache_gqa_fwd_bf16(const PwOps *o, float *out, uint16_t *out16,
                                         uint16_t *kcache, uint16_t *vcache, float *scores,
                                         const float *qkv, const int *seg_row,
                                         const int *seg_off, const int *seg_slot0, int nseg,
                                         int N, int maxT, int NH, int NKV, int hs)
{
    TIMED(o,
          I(o)->attention_cache_gqa_forward_bf16(I(o), out, out16, kcache, vcache, scores, qkv,
                                                 seg_row, seg_off, seg_slot0, nseg, N, maxT, NH,
                                                 NKV, hs),
          "attention_cache_gqa_forward_bf16", 0, 0, "N=%d maxT=%d NH=%d NKV=%d hs=%d", N, maxT,
          NH, NKV, hs);
}
static void gelu_fwd(const PwOps *o, float *out, const float *inp, size_t N)
{
    TIMED(o, I(o)->gelu_forward(I(o), out, inp, N), "gelu_forward", 0, 0, "N=%zu", N);
}
static void gelu_bwd(const PwOps *o, float *dinp, const float *inp, const float *dout, size_t N)
{
    TIMED(o, I(o)->gelu_backward(I(o), dinp, inp, dout, N), "gelu_backward", 0, 0, "N=%zu", N);
}
static void residual_fwd(const PwOps *o, float *out, const float *a, const float *b, size_t N)
{
    TIMED(o, I(o)->residual_forward(I(o), out, a, b, N), "residual_forward", 0, 0, "N=%zu", N);
}
static void logprobs_fwd(const PwOps *o, float *logp, float *entropy, float *stats,
                         const float *logits, const int *targets, int N, int V, int ld)
{
    TIMED(o, I(o)->logprobs_forward(I(o), logp, entropy, stats, logits, targets, N, V, ld),
          "logprobs_forward", 0, 0, "N=%d V=%d", N, V);
}
static void logprobs_bwd(const PwOps *o, float *dlogits, const float *logits, const float *stats,
                         const int *targets, const float *dlogp, const float *dentropy, int N,
                         int V, int ld)
{
    TIMED(o,
          I(o)->logprobs_backward(I(o), dlogits, logits, stats, targets, dlogp, dentropy, N, V,
                                  ld),
          "logprobs_backward", 0, 0, "N=%d V=%d", N, V);
}
static void logprobs_bwd_bf16(const PwOps *o, uint16_t *dlogits16, const float *logits,
                              const float *stats, const int *targets, const float *dlogp,
                              const float *dentropy, int N, int V, int ld, float mul)
{
    TIMED(o,
          I(o)->logprobs_backward_bf16(I(o), dlogits16, logits, stats, targets, dlogp, dentropy,
                                       N, V, ld, mul),
          "logprobs_backward_bf16", 0, 0, "N=%d V=%d", N, V);
}
static void gather(const PwOps *o, float *dst, const float *src, const int *rows, int n, int C)
{
    TIMED(o, I(o)->gather_rows(I(o), dst, src, rows, n, C), "gather_rows", 0, 0, "n=%d C=%d", n,
          C);
}
static void adamw(const PwOps *o, float *params, uint16_t *params16, const float *grads,
                  float gscale, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                  float eps, float weight_decay, int t)
{
    TIMED(o,
          I(o)->adamw_update(I(o), params, params16, grads, gscale, m, v, n, lr, beta1, beta2,
                             eps, weight_decay, t),
          "adamw_update", 0, 0, "n=%zu%s", n, params16 ? " bf16" : "");
}
static double sumsq(const PwOps *o, const float *x, size_t n)
{
    double r;
    TIMED(o, r = I(o)->sumsq(I(o), x, n), "sumsq", 0, 0, "n=%zu", n);
    pw_prof_resolve(o); /* it waited for its result */
    return r;
}
static void scale(const PwOps *o, float *x, float s, size_t n)
{
    TIMED(o, I(o)->scale(I(o), x, s, n), "scale", 0, 0, "n=%zu", n);
}
static void sample_rows(const PwOps *o, const float *logits, int ld, int n, int V,
                        const int *rows, const PwSampleConfig *sc, uint64_t *rng, int *token,
                        float *logp, float *logp_full)
{
    TIMED(o, I(o)->sample(I(o), logits, ld, n, V, rows, sc, rng, token, logp, logp_full),
          "sample", 0, 0, "n=%d V=%d", n, V);
}
static void record_rows(const PwOps *o, const PwGenRows *g, int n, const int *rows,
                        const int *token, const float *logp, const float *logp_full,
                        int *pass_tok, int *pass_pos, int *pass_slot0)
{
    TIMED(o,
          I(o)->record(I(o), g, n, rows, token, logp, logp_full, pass_tok, pass_pos, pass_slot0),
          "record", 0, 0, "n=%d", n);
}

void pw_prof_fill(PwOps *o, const PwOps *inner)
{
    *o = (PwOps){
        .device = inner->device,
        .device_id = inner->device_id,
        .stream = inner->stream,
        .alloc = p_alloc,
        .free = p_free,
        .copy = p_copy,
        .copy_batch = p_copy_batch,
        .zero = p_zero,
        .sync = p_sync,
        .mem_info = p_mem_info,
        .graph_capture = p_graph_capture,
        .graph_run = p_graph_run,
        .graph_free = p_graph_free,
        .mark_new = p_mark_new,
        .mark_record = p_mark_record,
        .mark_ms = p_mark_ms,
        .mark_free = p_mark_free,
        .inner = inner,
        PW_OPS_KERNEL_ENTRIES,
    };
    memcpy(o->name, inner->name, sizeof o->name);
}
