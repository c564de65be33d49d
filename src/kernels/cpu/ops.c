/* ops.c: the CPU entry of the kernel table (pw_ops.h): host memory, and each kernel of
 * pw_kernels.h behind the table's calling convention (the table argument is not needed here). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pw_bf16.h"
#include "pw_kernels.h"
#include "pw_ops.h"
#include "rounded.h"
#include "../ops_entries.h"

/* What the CPU table holds, as the GPU's counts its buffers (pw_cpu_table_bytes): each buffer
 * carries its size in a header of 64 bytes before it (calloc's 16-byte alignment kept). */
#define CPU_HEADER 64
static size_t cpu_live, cpu_peak, cpu_cap;

static void *cpu_alloc(const PwOps *o, size_t bytes)
{
    (void)o;
    size_t cap = __atomic_load_n(&cpu_cap, __ATOMIC_RELAXED);
    if (cap && __atomic_load_n(&cpu_live, __ATOMIC_RELAXED) + bytes > cap) return NULL;
    char *p = calloc(1, CPU_HEADER + (bytes ? bytes : 1));
    if (!p) return NULL;
    *(size_t *)p = bytes;
    size_t now = __atomic_add_fetch(&cpu_live, bytes, __ATOMIC_RELAXED);
    for (size_t peak = __atomic_load_n(&cpu_peak, __ATOMIC_RELAXED); now > peak;)
        if (__atomic_compare_exchange_n(&cpu_peak, &peak, now, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            break;
    return p + CPU_HEADER;
}
static void cpu_free(const PwOps *o, void *p)
{
    (void)o;
    if (!p) return;
    char *base = (char *)p - CPU_HEADER;
    __atomic_sub_fetch(&cpu_live, *(size_t *)base, __ATOMIC_RELAXED);
    free(base);
}
size_t pw_cpu_table_bytes(void) { return __atomic_load_n(&cpu_live, __ATOMIC_RELAXED); }
size_t pw_cpu_table_peak_bytes(void) { return __atomic_load_n(&cpu_peak, __ATOMIC_RELAXED); }
void pw_cpu_table_cap(size_t bytes) { __atomic_store_n(&cpu_cap, bytes, __ATOMIC_RELAXED); }
void pw_cpu_table_peak_reset(void)
{
    __atomic_store_n(&cpu_peak, __atomic_load_n(&cpu_live, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}
static void cpu_copy(const PwOps *o, void *dst, const void *src, size_t bytes, PwCopyKind kind)
{
    (void)o, (void)kind;
    if (bytes && dst != src) memmove(dst, src, bytes);
}
static void cpu_copy_batch(const PwOps *o, void *const *dst, const void *const *src,
                           const size_t *bytes, int n)
{
    for (int i = 0; i < n; i++) {
        if (src[i]) cpu_copy(o, dst[i], src[i], bytes[i], PW_COPY_D2D);
        else memset(dst[i], 0, bytes[i]);
    }
}
static void cpu_zero(const PwOps *o, void *p, size_t bytes) { (void)o, memset(p, 0, bytes); }
static void cpu_sync(const PwOps *o) { (void)o; }
static void cpu_mem_info(const PwOps *o, size_t *free_bytes, size_t *total_bytes)
{
    (void)o;
    *free_bytes = *total_bytes = 0;
}
/* no graphs on the CPU: every caller runs its work itself */
static void *cpu_graph_capture(const PwOps *o, void (*fn)(void *), void *arg)
{
    (void)o, (void)fn, (void)arg;
    return NULL;
}
static void cpu_graph_run(const PwOps *o, void *graph) { (void)o, (void)graph; }
static void cpu_graph_free(const PwOps *o, void *graph) { (void)o, (void)graph; }
/* the CPU's work is done when its entry returns: a mark is the host clock's reading then */
static void *cpu_mark_new(const PwOps *o) { return (void)o, calloc(1, sizeof(double)); }
static void cpu_mark_record(const PwOps *o, void *mark)
{
    (void)o;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *(double *)mark = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double cpu_mark_ms(const PwOps *o, void *from, void *to)
{
    (void)o;
    return 1e3 * (*(double *)to - *(double *)from);
}
static void cpu_mark_free(const PwOps *o, void *mark) { (void)o, free(mark); }

static void encoder_fwd(const PwOps *o, float *out, const int *inp, const int *pos,
                        const float *wte, const float *wpe, int B, int T, int C)
{
    (void)o, pw_encoder_forward(out, inp, pos, wte, wpe, B, T, C);
}
static void encoder_bwd(const PwOps *o, float *dwte, float *dwpe, const float *dout,
                        const int *inp, const int *pos, const PwRowGroups *groups, int B, int T,
                        int C)
{
    (void)o, (void)groups, pw_encoder_backward(dwte, dwpe, dout, inp, pos, B, T, C);
}
static void layernorm_fwd(const PwOps *o, float *out, float *mean, float *rstd, const float *inp,
                          const float *weight, const float *bias, int N, int C)
{
    (void)o, pw_layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
}
static void layernorm_bwd(const PwOps *o, float *dinp, uint16_t *dinp16, float *dweight,
                          float *dbias, const float *dout, const float *inp, const float *weight,
                          const float *mean, const float *rstd, int N, int C)
{
    pw_layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
    if (dinp && dinp16) o->to_bf16(o, dinp16, dinp, (size_t)N * C);
}
static void matmul_fwd(const PwOps *o, float *out, const float *inp, const float *weight,
                       const float *bias, int N, int C, int OC)
{
    (void)o, pw_matmul_forward(out, inp, weight, bias, N, C, OC);
}
/* A gradient the entry sets rather than adds to (set_dinp, the bf16 GELU and SwiGLU backwards):
 * on the CPU zeroed, then added to, the same bits as the caller zeroing it */
static void set_zero(float *d, int set, size_t n)
{
    if (set && d) memset(d, 0, n * sizeof(float));
}
static void matmul_bwd(const PwOps *o, float *dinp, float *dweight, float *dbias,
                       const float *dout, const float *inp, const float *weight, int N, int C,
                       int OC, int set_dinp)
{
    set_zero(dinp, set_dinp, (size_t)N * C);
    (void)o, pw_matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}
/* n floats of work space for the bf16 entries, which have no way to report an error; calloc:
 * n = 0 leaves nothing unset */
static float *floats_or_die(size_t n)
{
    float *f = calloc(n ? n : 1, sizeof *f);
    if (!f) {
        fprintf(stderr, "ppo_world: out of memory for %zu floats of bfloat16 work space\n", n);
        abort();
    }
    return f;
}
static void to_bf16_entry(const PwOps *o, uint16_t *dst, const float *src, size_t n)
{
    (void)o;
    for (size_t i = 0; i < n; i++) dst[i] = pw_bf16_from_f32(src[i]);
}
static void from_bf16_entry(const PwOps *o, float *dst, const uint16_t *src, size_t n)
{
    (void)o;
    for (size_t i = 0; i < n; i++) dst[i] = pw_bf16_to_f32(src[i]);
}
/* The bf16 producers: the float32 kernel into a buffer of n (floats_or_die), then rounded into
 * dst, which is by definition what the GPU's kernels write (they round the same float32
 * value). */
static void produce_end(uint16_t *dst, float *f, size_t n)
{
    to_bf16_entry(NULL, dst, f, n);
    free(f);
}
/* An entry whose float32 result may be asked for rounded instead (dst16 not NULL): where the
 * kernel writes (out, or a buffer of n then), and after it, the rounding into dst16 */
static float *produce_into(const uint16_t *dst16, float *out, size_t n)
{
    return dst16 ? floats_or_die(n) : out;
}
static void produce_done(uint16_t *dst16, float *f, size_t n)
{
    if (dst16) produce_end(dst16, f, n);
}
/* a bfloat16 weight or kept activation (n values) back in float32 */
static float *widen(const uint16_t *w, size_t n) { return pw_widened_rows(w, 1, n, n, "bf16"); }
/* A bf16 product's operand as the float32 copy its product takes (pw_matmul_forward_bf16's
 * rounded copy, made here so that what is bfloat16 already is not copied twice): widened from
 * its bits (a mirror, a kept activation, rows ld apart) or rounded from float32. Rounding leaves
 * widened values as they are, so a product from the mirror is bit for bit the one from the
 * float32 weight it was made of (and a stale mirror shows). */
static float *operand(const uint16_t *h, size_t ld, const float *f, size_t n, size_t cols)
{
    return h ? pw_widened_rows(h, n, cols, ld, "bf16 matmul")
             : pw_rounded_copy(f, n * cols, "bf16 matmul");
}
static void matmul_fwd_bf16(const PwOps *o, float *out, uint16_t *out_bf16, const float *inp,
                            const uint16_t *inp_bf16, const float *weight,
                            const uint16_t *weight_bf16, const float *bias, int N, int C, int OC)
{
    float *x = operand(inp_bf16, C, inp, N, C), *w = operand(weight_bf16, C, weight, OC, C);
    float *f = produce_into(out_bf16, out, (size_t)N * OC);
    (void)o, pw_matmul_forward(f, x, w, bias, N, C, OC);
    produce_done(out_bf16, f, (size_t)N * OC);
    free(w);
    free(x);
}
static void matmul_bwd_bf16(const PwOps *o, float *dinp, float *dweight, float *dbias,
                            const float *dout, const uint16_t *dout_bf16, size_t dout_ld,
                            const float *inp, const uint16_t *inp_bf16, const float *weight,
                            const uint16_t *weight_bf16, int N, int C, int OC, int set_dinp)
{
    set_zero(dinp, set_dinp, (size_t)N * C);
    float *d = operand(dout_bf16, dout_ld, dout, N, OC);
    float *x = dweight ? operand(inp_bf16, C, inp, N, C) : NULL;
    float *w = dinp ? operand(weight_bf16, C, weight, OC, C) : NULL;
    (void)o, pw_matmul_backward(dinp, dweight, dbias, d, x, w, N, C, OC);
    free(w);
    free(x);
    free(d);
}
static void layernorm_fwd_bf16(const PwOps *o, uint16_t *out, float *mean, float *rstd,
                               const float *inp, const float *weight, const float *bias, int N,
                               int C)
{
    size_t n = (size_t)N * C;
    float *f = floats_or_die(n);
    (void)o, pw_layernorm_forward(f, mean, rstd, inp, weight, bias, N, C);
    produce_end(out, f, n);
}
static void rmsnorm_fwd_bf16(const PwOps *o, uint16_t *out, float *rstd, const float *inp,
                             const float *weight, int N, int C, float eps)
{
    size_t n = (size_t)N * C;
    float *f = floats_or_die(n);
    (void)o, pw_rmsnorm_forward(f, rstd, inp, weight, N, C, eps);
    produce_end(out, f, n);
}
/* the residual add, then the norm of its result: the two entries one after the other (their
 * very calls: nothing on the CPU to fuse that would not change a bit) */
static void residual_layernorm_fwd(const PwOps *o, float *res, float *out, uint16_t *out16,
                                   float *mean, float *rstd, const float *a, const float *b,
                                   const float *weight, const float *bias, int N, int C)
{
    o->residual_forward(o, res, a, b, (size_t)N * C);
    if (out16) o->layernorm_forward_bf16(o, out16, mean, rstd, res, weight, bias, N, C);
    else o->layernorm_forward(o, out, mean, rstd, res, weight, bias, N, C);
}
static void residual_rmsnorm_fwd(const PwOps *o, float *res, float *out, uint16_t *out16,
                                 float *rstd, const float *a, const float *b, const float *weight,
                                 int N, int C, float eps)
{
    o->residual_forward(o, res, a, b, (size_t)N * C);
    if (out16) o->rmsnorm_forward_bf16(o, out16, rstd, res, weight, N, C, eps);
    else o->rmsnorm_forward(o, out, rstd, res, weight, N, C, eps);
}
/* GELU's and SwiGLU's bf16 forms read a bfloat16 input (in16, or x rounded, kept in in16 when
 * given): the float32 kernels on it widened */
static float *bf16_input(uint16_t *in16, const float *x, size_t n)
{
    if (x && in16) { /* the rounding kept, then read as any bfloat16 input */
        to_bf16_entry(NULL, in16, x, n);
        x = NULL;
    }
    return operand(in16, n, x, 1, n);
}
static void gelu_fwd_bf16(const PwOps *o, uint16_t *out, uint16_t *inp16, const float *inp,
                          size_t N)
{
    float *f = floats_or_die(N), *x = bf16_input(inp16, inp, N);
    (void)o, pw_gelu_forward(f, x, N);
    produce_end(out, f, N);
    free(x);
}
static void swiglu_fwd_bf16(const PwOps *o, uint16_t *out, uint16_t *gate_up16,
                            const float *gate_up, int N, int F)
{
    size_t n = (size_t)N * F;
    float *f = floats_or_die(n), *x = bf16_input(gate_up16, gate_up, 2 * n);
    (void)o, pw_swiglu_forward(f, x, N, F);
    produce_end(out, f, n);
    free(x);
}
/* the bf16 backwards: the float32 kernel's gradient from zeros, rounded into the output */
static void gelu_bwd_bf16(const PwOps *o, uint16_t *dinp, const uint16_t *inp, const float *dout,
                          size_t N)
{
    float *x = widen(inp, N), *d = floats_or_die(N);
    set_zero(d, 1, N);
    (void)o, pw_gelu_backward(d, x, dout, N);
    produce_end(dinp, d, N);
    free(x);
}
static void swiglu_bwd_bf16(const PwOps *o, uint16_t *dgate_up, const uint16_t *gate_up,
                            const float *dout, int N, int F)
{
    size_t n = 2 * (size_t)N * F;
    float *x = widen(gate_up, n), *d = floats_or_die(n);
    set_zero(d, 1, n);
    (void)o, pw_swiglu_backward(d, x, dout, N, F);
    produce_end(dgate_up, d, n);
    free(x);
}
/* GPT-2's MLP products with their GELU: the two entries of each pair, one after the other
 * (nothing on the CPU to fuse that would not change a bit) */
static void matmul_gelu_fwd_bf16(const PwOps *o, uint16_t *out16, uint16_t *pre16, float *pre,
                                 const float *inp, const uint16_t *inp_bf16, const float *weight,
                                 const uint16_t *weight_bf16, const float *bias, int N, int C,
                                 int OC)
{
    size_t n = (size_t)N * OC;
    float *f = pre16 ? NULL : pre ? pre : floats_or_die(n);
    matmul_fwd_bf16(o, f, pre16, inp, inp_bf16, weight, weight_bf16, bias, N, C, OC);
    gelu_fwd_bf16(o, out16, pre16, f, n); /* reads pre16 when f is NULL */
    if (!pre16 && !pre) free(f);
}
/* the Llama family's up-projection and SwiGLU in a cache pass: the two entries likewise */
static void matmul_swiglu_fwd_bf16(const PwOps *o, uint16_t *out16, float *pre, const float *inp,
                                   const uint16_t *inp_bf16, const float *weight,
                                   const uint16_t *weight_bf16, int N, int C, int F)
{
    float *f = pre ? pre : floats_or_die((size_t)N * 2 * F);
    matmul_fwd_bf16(o, f, NULL, inp, inp_bf16, weight, weight_bf16, NULL, N, C, 2 * F);
    swiglu_fwd_bf16(o, out16, NULL, f, N, F);
    if (!pre) free(f);
}
static void matmul_bwd_gelu_bf16(const PwOps *o, uint16_t *dpre16, const uint16_t *pre16,
                                 float *dinp_scratch, float *dweight, float *dbias,
                                 const float *dout, const uint16_t *dout_bf16, size_t dout_ld,
                                 const float *inp, const uint16_t *inp_bf16, const float *weight,
                                 const uint16_t *weight_bf16, int N, int C, int OC)
{
    size_t n = (size_t)N * C;
    float *f = dinp_scratch ? dinp_scratch : floats_or_die(n);
    matmul_bwd_bf16(o, f, dweight, dbias, dout, dout_bf16, dout_ld, inp, inp_bf16, weight,
                    weight_bf16, N, C, OC, 1);
    gelu_bwd_bf16(o, dpre16, pre16, f, n);
    if (!dinp_scratch) free(f);
}
static void attention_fwd(const PwOps *o, float *out, float *lse, const float *qkv,
                          const int *mask, int B, int T, int C, int NH)
{
    (void)o, pw_attention_forward(out, lse, qkv, mask, B, T, C, NH);
}
static void attention_bwd(const PwOps *o, float *dqkv, const float *dout, const float *qkv,
                          const float *lse, const int *mask, int B, int T, int C, int NH)
{
    (void)o, pw_attention_backward(dqkv, dout, qkv, lse, mask, B, T, C, NH);
}
static void rmsnorm_fwd(const PwOps *o, float *out, float *rstd, const float *inp,
                        const float *weight, int N, int C, float eps)
{
    (void)o, pw_rmsnorm_forward(out, rstd, inp, weight, N, C, eps);
}
static void rmsnorm_bwd(const PwOps *o, float *dinp, uint16_t *dinp16, float *dweight,
                        const float *dout, const float *inp, const float *weight,
                        const float *rstd, int N, int C)
{
    pw_rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C);
    if (dinp && dinp16) o->to_bf16(o, dinp16, dinp, (size_t)N * C);
}
static void head_rmsnorm_fwd(const PwOps *o, float *x, float *raw, float *rstd,
                             const float *wq, const float *wk, int N, int NH, int NKV, int hs,
                             int stride, float eps)
{
    (void)o, pw_head_rmsnorm_forward(x, raw, rstd, wq, wk, N, NH, NKV, hs, stride, eps);
}
static void head_rmsnorm_bwd(const PwOps *o, float *dx, float *dwq, float *dwk, const float *raw,
                             const float *rstd, const float *wq, const float *wk, int N, int NH,
                             int NKV, int hs, int stride)
{
    (void)o, pw_head_rmsnorm_backward(dx, dwq, dwk, raw, rstd, wq, wk, N, NH, NKV, hs, stride);
}
/* The rotation (forward, or backward: by the opposite angle) in place; with x16, x is only read:
 * the rotation in a copy, rounded into x16 */
static void rope_rotate(float *x, uint16_t *x16, const int *pos, const float *inv_freq, int N,
                        int nheads, int hs, int stride, int backward)
{
    size_t n = (size_t)N * stride;
    float *f = x16 ? floats_or_die(n) : x;
    if (x16) memcpy(f, x, sizeof(float) * n);
    if (backward)
        pw_rope_backward(f, pos, inv_freq, N, nheads, hs, stride);
    else
        pw_rope_forward(f, pos, inv_freq, N, nheads, hs, stride);
    if (x16) produce_end(x16, f, n);
}
static void rope_fwd(const PwOps *o, float *x, uint16_t *x16, const int *pos,
                     const float *inv_freq, int N, int nheads, int hs, int stride)
{
    (void)o, rope_rotate(x, x16, pos, inv_freq, N, nheads, hs, stride, 0);
}
static void rope_bwd(const PwOps *o, float *dx, uint16_t *dx16, const int *pos,
                     const float *inv_freq, int N, int nheads, int hs, int stride)
{
    (void)o, rope_rotate(dx, dx16, pos, inv_freq, N, nheads, hs, stride, 1);
}
static void swiglu_fwd(const PwOps *o, float *out, const float *gate_up, int N, int F)
{
    (void)o, pw_swiglu_forward(out, gate_up, N, F);
}
static void swiglu_bwd(const PwOps *o, float *dgate_up, const float *gate_up, const float *dout,
                       int N, int F)
{
    (void)o, pw_swiglu_backward(dgate_up, gate_up, dout, N, F);
}
static void attention_gqa_fwd(const PwOps *o, float *out, float *lse, const float *qkv,
                              const int *mask, int B, int T, int NH, int NKV, int hs)
{
    (void)o, pw_attention_gqa_forward(out, lse, qkv, mask, B, T, NH, NKV, hs);
}
static void attention_gqa_bwd(const PwOps *o, float *dqkv, const float *dout, const float *qkv,
                              const float *lse, const int *mask, int B, int T, int NH, int NKV,
                              int hs)
{
    (void)o, pw_attention_gqa_backward(dqkv, dout, qkv, lse, mask, B, T, NH, NKV, hs);
}
static void attention_gqa_fwd_bf16(const PwOps *o, float *out, uint16_t *out16, float *lse,
                                   const uint16_t *qkv, const int *mask, int B, int T, int NH,
                                   int NKV, int hs)
{
    size_t n = (size_t)B * T * NH * hs;
    float *f = out ? out : floats_or_die(n);
    (void)o, pw_attention_gqa_forward_bf16(f, lse, qkv, mask, B, T, NH, NKV, hs);
    if (out16) o->to_bf16(o, out16, f, n);
    if (!out) free(f);
}
static void attention_gqa_bwd_bf16(const PwOps *o, float *dqkv, uint16_t *dqkv16,
                                   const float *dout, const uint16_t *qkv,
                                   const uint16_t *out, const float *lse, const int *mask, int B,
                                   int T, int NH, int NKV, int hs)
{
    size_t n = (size_t)B * T * (NH + 2 * NKV) * hs;
    float *d = produce_into(dqkv16, dqkv, n);
    (void)o, pw_attention_gqa_backward_bf16(d, dout, qkv, out, lse, mask, B, T, NH, NKV, hs);
    produce_done(dqkv16, d, n);
}
static void attention_cache_gqa_fwd(const PwOps *o, float *out, float *kcache, float *vcache,
                                    float *scores, const float *qkv, const int *seg_row,
                                    const int *seg_off, const int *seg_slot0, int nseg, int N,
                                    int maxT, int NH, int NKV, int hs)
{
    (void)o, pw_attention_cache_gqa_forward(out, kcache, vcache, scores, qkv, seg_row, seg_off,
                                            seg_slot0, nseg, N, maxT, NH, NKV, hs);
}
static void attention_cache_gqa_fwd_bf16(const PwOps *o, float *out, uint16_t *out16,
                                         uint16_t *kcache, uint16_t *vcache, float *scores,
                                         const float *qkv, const int *seg_row,
                                         const int *seg_off, const int *seg_slot0, int nseg,
                                         int N, int maxT, int NH, int NKV, int hs)
{
    size_t n = (size_t)N * NH * hs;
    float *f = produce_into(out16, out, n);
    (void)o, pw_attention_cache_gqa_forward_bf16(f, kcache, vcache, scores, qkv, seg_row,
                                                 seg_off, seg_slot0, nseg, N, maxT, NH, NKV, hs);
    produce_done(out16, f, n);
}
static void gelu_fwd(const PwOps *o, float *out, const float *inp, size_t N)
{
    (void)o, pw_gelu_forward(out, inp, N);
}
static void gelu_bwd(const PwOps *o, float *dinp, const float *inp, const float *dout, size_t N)
{
    (void)o, pw_gelu_backward(dinp, inp, dout, N);
}
static void residual_fwd(const PwOps *o, float *out, const float *a, const float *b, size_t N)
{
    (void)o, pw_residual_forward(out, a, b, N);
}
static void sample_rows(const PwOps *o, const float *logits, int ld, int n, int V,
                        const int *rows, const PwSampleConfig *sc, uint64_t *rng, int *token,
                        float *logp, float *logp_full)
{
    (void)o, pw_sample_rows(logits, ld, n, V, rows, sc, rng, token, logp, logp_full);
}
static void record_rows(const PwOps *o, const PwGenRows *g, int n, const int *rows,
                        const int *token, const float *logp, const float *logp_full,
                        int *pass_tok, int *pass_pos, int *pass_slot0)
{
    (void)o, pw_sample_record(g, n, rows, token, logp, logp_full, pass_tok, pass_pos,
                              pass_slot0);
}
static void logprobs_fwd(const PwOps *o, float *logp, float *entropy, float *stats,
                         const float *logits, const int *targets, int N, int V, int ld)
{
    (void)o, pw_logprobs_forward(logp, entropy, stats, logits, targets, N, V, ld);
}
static void logprobs_bwd(const PwOps *o, float *dlogits, const float *logits, const float *stats,
                         const int *targets, const float *dlogp, const float *dentropy, int N,
                         int V, int ld)
{
    (void)o, pw_logprobs_backward(dlogits, logits, stats, targets, dlogp, dentropy, N, V, ld);
}
static void logprobs_bwd_bf16(const PwOps *o, uint16_t *dlogits16, const float *logits,
                              const float *stats, const int *targets, const float *dlogp,
                              const float *dentropy, int N, int V, int ld, float mul)
{
    (void)o, pw_logprobs_backward_bf16(dlogits16, logits, stats, targets, dlogp, dentropy, N, V,
                                       ld, mul);
}
static void gather(const PwOps *o, float *dst, const float *src, const int *rows, int n, int C)
{
    (void)o, pw_gather_rows(dst, src, rows, n, C);
}
static void adamw(const PwOps *o, float *params, uint16_t *params16, const float *grads,
                  float gscale, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                  float eps, float weight_decay, int t)
{
    (void)o, pw_adamw_update(params, params16, grads, gscale, m, v, n, lr, beta1, beta2, eps,
                             weight_decay, t);
}
static double sumsq(const PwOps *o, const float *x, size_t n) { return (void)o, pw_sumsq(x, n); }
static void scale(const PwOps *o, float *x, float s, size_t n) { (void)o, pw_scale(x, s, n); }

static const PwOps cpu_ops = {
    .device = PW_DEVICE_CPU,
    .device_id = 0,
    .stream = NULL,
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .copy_batch = cpu_copy_batch,
    .zero = cpu_zero,
    .sync = cpu_sync,
    .mem_info = cpu_mem_info,
    .graph_capture = cpu_graph_capture,
    .graph_run = cpu_graph_run,
    .graph_free = cpu_graph_free,
    .mark_new = cpu_mark_new,
    .mark_record = cpu_mark_record,
    .mark_ms = cpu_mark_ms,
    .mark_free = cpu_mark_free,
    PW_OPS_KERNEL_ENTRIES,
};

const PwOps *pw_ops_cpu(void) { return &cpu_ops; }
