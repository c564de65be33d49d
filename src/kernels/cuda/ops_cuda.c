/* ops_cuda.c: the CUDA entry of the kernel table (pw_ops.h): device memory on one GPU, a stream
 * of the table's own, and each CUDA twin of pw_kernels_cuda.h queued on that stream. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "pw_cuda_check.h"
#include "pw_gpu_arch.h"
#include "pw_kernels_cuda.h"
#include "pw_ops.h"
#include "../ops_entries.h"

#define S(o) ((cudaStream_t)(o)->stream)

/* A CUDA table: the PwOps its users see first, then what only this file touches. */
typedef struct CudaOps {
    PwOps ops;
    pw_bf16 *ws;     /* the bf16 matmuls' operand copies */
    size_t ws_elems;
} CudaOps;

/* A failed runtime call here is a broken device or driver, not bad input. */
#define CHECK(call) PW_CUDA_CHECK(call)

/* What the tables hold, for pw_cuda_peak_bytes: every live allocation of cuda_alloc and the bf16
 * workspaces, across the tables of the process (a rank's roles share its device). The list is
 * short (a model holds a handful of buffers) and touched only by allocations, never by kernels. */
typedef struct LiveBuffer {
    void *p;
    size_t bytes;
} LiveBuffer;
static LiveBuffer *live;
static size_t nlive, live_cap, live_bytes, live_peak;

static void account_alloc(void *p, size_t bytes)
{
    if (nlive == live_cap) {
        size_t cap = live_cap ? 2 * live_cap : 64;
        LiveBuffer *grown = realloc(live, cap * sizeof *grown);
        if (!grown) {
            fprintf(stderr, "ppo_world: out of host memory to account for device buffers\n");
            abort();
        }
        live = grown;
        live_cap = cap;
    }
    live[nlive++] = (LiveBuffer){p, bytes};
    live_bytes += bytes;
    if (live_bytes > live_peak) live_peak = live_bytes;
}

static void account_free(void *p)
{
    for (size_t i = 0; i < nlive; i++)
        if (live[i].p == p) {
            live_bytes -= live[i].bytes;
            live[i] = live[--nlive];
            return;
        }
}

size_t pw_cuda_peak_bytes(void)
{
    return live_peak + pw_cuda_scratch_peak_bytes() + pw_cuda_epilogue_peak_bytes();
}

/* A request larger than the whole device can never succeed: answered without asking
 * cudaMalloc, whose failure a memory checker reports as an API error. */
static int beyond_device(int dev, size_t bytes)
{
    static size_t total[64];
    if (dev < 0 || dev >= 64) return 0;
    if (!total[dev]) {
        size_t free_b = 0;
        if (cudaMemGetInfo(&free_b, &total[dev]) != cudaSuccess) {
            (void)cudaGetLastError();
            total[dev] = 0;
            return 0;
        }
    }
    return bytes > total[dev];
}

static void *cuda_alloc(const PwOps *o, size_t bytes)
{
    void *p = NULL;
    CHECK(cudaSetDevice(o->device_id));
    if (beyond_device(o->device_id, bytes)) return NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
        (void)cudaGetLastError(); /* out of memory is an answer, not a sticky error */
        return NULL;
    }
    CHECK(cudaMemsetAsync(p, 0, bytes, S(o)));
    account_alloc(p, bytes);
    return p;
}
static void cuda_free(const PwOps *o, void *p)
{
    if (!p) return;
    CHECK(cudaStreamSynchronize(S(o))); /* queued work may still read it */
    account_free(p);
    CHECK(cudaFree(p));
}
static void cuda_copy(const PwOps *o, void *dst, const void *src, size_t bytes, PwCopyKind kind)
{
    static const enum cudaMemcpyKind kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                                cudaMemcpyDeviceToDevice};
    if (!bytes) return;
    CHECK(cudaMemcpyAsync(dst, src, bytes, kinds[kind], S(o)));
    CHECK(cudaStreamSynchronize(S(o)));
}
static void cuda_copy_batch(const PwOps *o, void *const *dst, const void *const *src,
                            const size_t *bytes, int n)
{
    pw_copy_batch_cuda(dst, src, bytes, n, S(o));
}
static void cuda_zero(const PwOps *o, void *p, size_t bytes)
{
    if (bytes) CHECK(cudaMemsetAsync(p, 0, bytes, S(o)));
}
static void cuda_sync(const PwOps *o) { CHECK(cudaStreamSynchronize(S(o))); }
static void cuda_mem_info(const PwOps *o, size_t *free_bytes, size_t *total_bytes)
{
    CHECK(cudaSetDevice(o->device_id));
    CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

/* CUDA graphs. The capture is in relaxed mode: a buffer a wrapper makes on its first use (the
 * bf16 workspace) is allocated at once instead of breaking the capture, and the stream-ordered
 * scratch becomes the graph's own allocations. A capture or instantiation the runtime refuses
 * leaves no graph (and no sticky error): the caller runs the work itself. */
static void *cuda_graph_capture(const PwOps *o, void (*fn)(void *), void *arg)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t exec = NULL;
    CHECK(cudaSetDevice(o->device_id));
    if (cudaStreamBeginCapture(S(o), cudaStreamCaptureModeRelaxed) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    fn(arg);
    cudaError_t e = cudaStreamEndCapture(S(o), &g);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, g, 0);
    if (g) (void)cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return exec;
}
static void cuda_graph_run(const PwOps *o, void *graph)
{
    CHECK(cudaGraphLaunch((cudaGraphExec_t)graph, S(o)));
}
static void cuda_graph_free(const PwOps *o, void *graph)
{
    if (!graph) return;
    CHECK(cudaStreamSynchronize(S(o))); /* no launch of it still queued */
    CHECK(cudaGraphExecDestroy((cudaGraphExec_t)graph));
}

/* Marks are CUDA events with timing on, recorded on the table's stream. */
static void *cuda_mark_new(const PwOps *o)
{
    cudaEvent_t e = NULL;
    CHECK(cudaSetDevice(o->device_id));
    CHECK(cudaEventCreate(&e));
    return e;
}
static void cuda_mark_record(const PwOps *o, void *mark)
{
    CHECK(cudaEventRecord((cudaEvent_t)mark, S(o)));
}
static double cuda_mark_ms(const PwOps *o, void *from, void *to)
{
    float ms = 0.0f;
    (void)o;
    CHECK(cudaEventSynchronize((cudaEvent_t)to));
    CHECK(cudaEventElapsedTime(&ms, (cudaEvent_t)from, (cudaEvent_t)to));
    return ms;
}
static void cuda_mark_free(const PwOps *o, void *mark)
{
    (void)o;
    if (mark) CHECK(cudaEventDestroy((cudaEvent_t)mark));
}

/* The workspace of at least `elems` bf16 values. The table is the caller's const view of a
 * CudaOps this file allocated, and the workspace is the one part that changes behind it. Out of
 * device memory here is fatal (PW_CUDA_CHECK): a kernel entry has no error to return, and the
 * model sizes its own buffers before any product, so this is the last few hundred MiB. */
static pw_bf16 *bf16_workspace(const PwOps *o, size_t elems)
{
    CudaOps *co = (CudaOps *)(uintptr_t)o;
    if (elems <= co->ws_elems) return co->ws;
    CHECK(cudaStreamSynchronize(S(o))); /* queued products may still read the old one */
    if (co->ws) {
        account_free(co->ws);
        CHECK(cudaFree(co->ws));
    }
    co->ws = NULL;
    co->ws_elems = 0;
    CHECK(cudaSetDevice(o->device_id));
    CHECK(cudaMalloc((void **)&co->ws, elems * sizeof(pw_bf16)));
    account_alloc(co->ws, elems * sizeof(pw_bf16));
    co->ws_elems = elems;
    return co->ws;
}

static void encoder_fwd(const PwOps *o, float *out, const int *inp, const int *pos,
                        const float *wte, const float *wpe, int B, int T, int C)
{
    pw_encoder_forward_cuda(out, inp, pos, wte, wpe, B, T, C, S(o));
}
static void encoder_bwd(const PwOps *o, float *dwte, float *dwpe, const float *dout,
                        const int *inp, const int *pos, const PwRowGroups *groups, int B, int T,
                        int C)
{
    (void)inp, (void)pos, (void)B, (void)T;
    pw_encoder_backward_cuda(dwte, dwpe, dout, &groups[0], &groups[1], C, S(o));
}
static void layernorm_fwd(const PwOps *o, float *out, float *mean, float *rstd, const float *inp,
                          const float *weight, const float *bias, int N, int C)
{
    pw_layernorm_forward_cuda(out, mean, rstd, inp, weight, bias, N, C, S(o));
}
static void layernorm_bwd(const PwOps *o, float *dinp, uint16_t *dinp16, float *dweight,
                          float *dbias, const float *dout, const float *inp, const float *weight,
                          const float *mean, const float *rstd, int N, int C)
{
    pw_layernorm_backward_cuda(dinp, dinp16, dweight, dbias, dout, inp, weight, mean, rstd, N, C,
                               S(o));
}
static void matmul_fwd(const PwOps *o, float *out, const float *inp, const float *weight,
                       const float *bias, int N, int C, int OC)
{
    pw_matmul_forward_cuda(out, inp, weight, bias, N, C, OC, S(o));
}
static void matmul_bwd(const PwOps *o, float *dinp, float *dweight, float *dbias,
                       const float *dout, const float *inp, const float *weight, int N, int C,
                       int OC, int set_dinp)
{
    pw_matmul_backward_cuda(dinp, dweight, dbias, dout, inp, weight, N, C, OC, set_dinp, S(o));
}

/* The bf16 matmuls convert their float32 operands into bf16 copies in a workspace that the
 * table owns (CudaOps below), grown on demand; the conversions and the product are queued in
 * order on the table's stream, so one workspace serves every call. */
static pw_bf16 *bf16_workspace(const PwOps *o, size_t elems);

/* the operands as bf16 in the workspace, one after the other: n[i] elements of x[i] (NULL: none) */
static void to_bf16(const PwOps *o, pw_bf16 **out, const float *const *x, const size_t *n, int k)
{
    size_t total = 0;
    for (int i = 0; i < k; i++) total += x[i] ? n[i] : 0;
    pw_bf16 *w = bf16_workspace(o, total);
    for (int i = 0; i < k; i++) {
        out[i] = x[i] ? w : NULL;
        if (x[i]) pw_f32_to_bf16_cuda(w, x[i], n[i], S(o));
        w += x[i] ? n[i] : 0;
    }
}

/* A bf16 forward product's operands in bfloat16: what comes so already (a mirror, a kept
 * activation) as it is, the rest converted into the workspace */
static void fwd_operands(const PwOps *o, const float *inp, const uint16_t *inp_bf16,
                         const float *weight, const uint16_t *weight_bf16, int N, int C, int OC,
                         const pw_bf16 **i16, const pw_bf16 **w16)
{
    pw_bf16 *b[2];
    const float *x[2] = {inp_bf16 ? NULL : inp, weight_bf16 ? NULL : weight};
    const size_t n[2] = {(size_t)N * C, (size_t)OC * C};
    to_bf16(o, b, x, n, 2);
    *i16 = inp_bf16 ? inp_bf16 : b[0];
    *w16 = weight_bf16 ? weight_bf16 : b[1];
}

/* The same for a backward: dout (rows *ldo apart), inp where dweight is made, the weight where
 * an input gradient is (need_w) */
static void bwd_operands(const PwOps *o, const float *dout, const uint16_t *dout_bf16,
                         size_t dout_ld, const float *inp, const uint16_t *inp_bf16,
                         const float *weight, const uint16_t *weight_bf16, int need_inp,
                         int need_w, int N, int C, int OC, const pw_bf16 **d16, int *ldo,
                         const pw_bf16 **i16, const pw_bf16 **w16)
{
    pw_bf16 *b[3];
    const float *x[3] = {dout_bf16 ? NULL : dout, need_inp && !inp_bf16 ? inp : NULL,
                         need_w && !weight_bf16 ? weight : NULL};
    const size_t n[3] = {(size_t)N * OC, (size_t)N * C, (size_t)OC * C};
    to_bf16(o, b, x, n, 3);
    *d16 = dout_bf16 ? dout_bf16 : b[0];
    *ldo = dout_bf16 ? (int)dout_ld : OC;
    *i16 = need_inp && inp_bf16 ? inp_bf16 : b[1];
    *w16 = need_w && weight_bf16 ? weight_bf16 : b[2];
}

static void matmul_fwd_bf16(const PwOps *o, float *out, uint16_t *out_bf16, const float *inp,
                            const uint16_t *inp_bf16, const float *weight,
                            const uint16_t *weight_bf16, const float *bias, int N, int C, int OC)
{
    const pw_bf16 *i16, *w16;
    fwd_operands(o, inp, inp_bf16, weight, weight_bf16, N, C, OC, &i16, &w16);
    if (out_bf16)
        pw_matmul_forward_bf16_out_cuda(out_bf16, i16, w16, bias, N, C, OC, S(o));
    else
        pw_matmul_forward_bf16_cuda(out, i16, w16, bias, N, C, OC, S(o));
}
static void matmul_bwd_bf16(const PwOps *o, float *dinp, float *dweight, float *dbias,
                            const float *dout, const uint16_t *dout_bf16, size_t dout_ld,
                            const float *inp, const uint16_t *inp_bf16, const float *weight,
                            const uint16_t *weight_bf16, int N, int C, int OC, int set_dinp)
{
    const pw_bf16 *d16, *i16, *w16;
    int ldo;
    bwd_operands(o, dout, dout_bf16, dout_ld, inp, inp_bf16, weight, weight_bf16,
                 dweight != NULL, dinp != NULL, N, C, OC, &d16, &ldo, &i16, &w16);
    pw_matmul_backward_bf16_cuda(dinp, dweight, dbias, d16, ldo, i16, w16, N, C, OC, set_dinp,
                                 S(o));
}
static void to_bf16_entry(const PwOps *o, uint16_t *dst, const float *src, size_t n)
{
    pw_f32_to_bf16_cuda(dst, src, n, S(o));
}
static void from_bf16_entry(const PwOps *o, float *dst, const uint16_t *src, size_t n)
{
    pw_bf16_to_f32_cuda(dst, src, n, S(o));
}
static void layernorm_fwd_bf16(const PwOps *o, uint16_t *out, float *mean, float *rstd,
                               const float *inp, const float *weight, const float *bias, int N,
                               int C)
{
    pw_layernorm_forward_bf16_cuda(out, mean, rstd, inp, weight, bias, N, C, S(o));
}
static void rmsnorm_fwd_bf16(const PwOps *o, uint16_t *out, float *rstd, const float *inp,
                             const float *weight, int N, int C, float eps)
{
    pw_rmsnorm_forward_bf16_cuda(out, rstd, inp, weight, N, C, eps, S(o));
}
static void residual_layernorm_fwd(const PwOps *o, float *res, float *out, uint16_t *out16,
                                   float *mean, float *rstd, const float *a, const float *b,
                                   const float *weight, const float *bias, int N, int C)
{
    /* the bf16 entry writes no float32 copy: out only without out16 */
    pw_residual_layernorm_forward_cuda(res, out16 ? NULL : out, out16, mean, rstd, a, b, weight,
                                       bias, N, C, S(o));
}
static void residual_rmsnorm_fwd(const PwOps *o, float *res, float *out, uint16_t *out16,
                                 float *rstd, const float *a, const float *b, const float *weight,
                                 int N, int C, float eps)
{
    pw_residual_rmsnorm_forward_cuda(res, out16 ? NULL : out, out16, rstd, a, b, weight, N, C,
                                     eps, S(o));
}
static void gelu_fwd_bf16(const PwOps *o, uint16_t *out, uint16_t *inp16, const float *inp,
                          size_t N)
{
    pw_gelu_forward_bf16_cuda(out, inp16, inp, N, S(o));
}
static void swiglu_fwd_bf16(const PwOps *o, uint16_t *out, uint16_t *gate_up16,
                            const float *gate_up, int N, int F)
{
    pw_swiglu_forward_bf16_cuda(out, gate_up16, gate_up, N, F, S(o));
}
static void gelu_bwd_bf16(const PwOps *o, uint16_t *dinp, const uint16_t *inp, const float *dout,
                          size_t N)
{
    pw_gelu_backward_bf16_cuda(dinp, inp, dout, N, S(o));
}
static void swiglu_bwd_bf16(const PwOps *o, uint16_t *dgate_up, const uint16_t *gate_up,
                            const float *dout, int N, int F)
{
    pw_swiglu_backward_bf16_cuda(dgate_up, gate_up, dout, N, F, S(o));
}
static void matmul_gelu_fwd_bf16(const PwOps *o, uint16_t *out16, uint16_t *pre16, float *pre,
                                 const float *inp, const uint16_t *inp_bf16, const float *weight,
                                 const uint16_t *weight_bf16, const float *bias, int N, int C,
                                 int OC)
{
    const pw_bf16 *i16, *w16;
    fwd_operands(o, inp, inp_bf16, weight, weight_bf16, N, C, OC, &i16, &w16);
    pw_matmul_gelu_forward_bf16_cuda(out16, pre16, pre, i16, w16, bias, N, C, OC, S(o));
}
static void matmul_swiglu_fwd_bf16(const PwOps *o, uint16_t *out16, float *pre, const float *inp,
                                   const uint16_t *inp_bf16, const float *weight,
                                   const uint16_t *weight_bf16, int N, int C, int F)
{
    const pw_bf16 *i16, *w16;
    fwd_operands(o, inp, inp_bf16, weight, weight_bf16, N, C, 2 * F, &i16, &w16);
    pw_matmul_swiglu_forward_bf16_cuda(out16, pre, i16, w16, N, C, F, S(o));
}
static void matmul_bwd_gelu_bf16(const PwOps *o, uint16_t *dpre16, const uint16_t *pre16,
                                 float *dinp_scratch, float *dweight, float *dbias,
                                 const float *dout, const uint16_t *dout_bf16, size_t dout_ld,
                                 const float *inp, const uint16_t *inp_bf16, const float *weight,
                                 const uint16_t *weight_bf16, int N, int C, int OC)
{
    const pw_bf16 *d16, *i16, *w16;
    int ldo;
    bwd_operands(o, dout, dout_bf16, dout_ld, inp, inp_bf16, weight, weight_bf16,
                 dweight != NULL, 1, N, C, OC, &d16, &ldo, &i16, &w16);
    pw_matmul_backward_gelu_bf16_cuda(dpre16, pre16, dinp_scratch, dweight, dbias, d16, ldo, i16,
                                      w16, N, C, OC, S(o));
}
static void attention_fwd(const PwOps *o, float *out, float *lse, const float *qkv,
                          const int *mask, int B, int T, int C, int NH)
{
    pw_attention_forward_cuda(out, lse, qkv, mask, B, T, C, NH, S(o));
}
static void attention_bwd(const PwOps *o, float *dqkv, const float *dout, const float *qkv,
                          const float *lse, const int *mask, int B, int T, int C, int NH)
{
    pw_attention_backward_cuda(dqkv, dout, qkv, lse, mask, B, T, C, NH, S(o));
}
static void rmsnorm_fwd(const PwOps *o, float *out, float *rstd, const float *inp,
                        const float *weight, int N, int C, float eps)
{
    pw_rmsnorm_forward_cuda(out, rstd, inp, weight, N, C, eps, S(o));
}
static void rmsnorm_bwd(const PwOps *o, float *dinp, uint16_t *dinp16, float *dweight,
                        const float *dout, const float *inp, const float *weight,
                        const float *rstd, int N, int C)
{
    pw_rmsnorm_backward_cuda(dinp, dinp16, dweight, dout, inp, weight, rstd, N, C, S(o));
}
static void head_rmsnorm_fwd(const PwOps *o, float *x, float *raw, float *rstd,
                             const float *wq, const float *wk, int N, int NH, int NKV, int hs,
                             int stride, float eps)
{
    pw_head_rmsnorm_forward_cuda(x, raw, rstd, wq, wk, N, NH, NKV, hs, stride, eps, S(o));
}
static void head_rmsnorm_bwd(const PwOps *o, float *dx, float *dwq, float *dwk, const float *raw,
                             const float *rstd, const float *wq, const float *wk, int N, int NH,
                             int NKV, int hs, int stride)
{
    pw_head_rmsnorm_backward_cuda(dx, dwq, dwk, raw, rstd, wq, wk, N, NH, NKV, hs, stride, S(o));
}
/* forward or backward (by the opposite angle), in place or into rounded rows */
static void rope_rotate(const PwOps *o, float *x, uint16_t *x16, const int *pos,
                        const float *inv_freq, int N, int nheads, int hs, int stride, int backward)
{
    if (x16)
        (backward ? pw_rope_backward_bf16_cuda : pw_rope_forward_bf16_cuda)(
            x16, x, pos, inv_freq, N, nheads, hs, stride, S(o));
    else
        (backward ? pw_rope_backward_cuda : pw_rope_forward_cuda)(x, pos, inv_freq, N, nheads, hs,
                                                                   stride, S(o));
}
static void rope_fwd(const PwOps *o, float *x, uint16_t *x16, const int *pos,
                     const float *inv_freq, int N, int nheads, int hs, int stride)
{
    rope_rotate(o, x, x16, pos, inv_freq, N, nheads, hs, stride, 0);
}
static void rope_bwd(const PwOps *o, float *dx, uint16_t *dx16, const int *pos,
                     const float *inv_freq, int N, int nheads, int hs, int stride)
{
    rope_rotate(o, dx, dx16, pos, inv_freq, N, nheads, hs, stride, 1);
}
static void swiglu_fwd(const PwOps *o, float *out, const float *gate_up, int N, int F)
{
    pw_swiglu_forward_cuda(out, gate_up, N, F, S(o));
}
static void swiglu_bwd(const PwOps *o, float *dgate_up, const float *gate_up, const float *dout,
                       int N, int F)
{
    pw_swiglu_backward_cuda(dgate_up, gate_up, dout, N, F, S(o));
}
static void attention_gqa_fwd(const PwOps *o, float *out, float *lse, const float *qkv,
                              const int *mask, int B, int T, int NH, int NKV, int hs)
{
    pw_attention_gqa_forward_cuda(out, lse, qkv, mask, B, T, NH, NKV, hs, S(o));
}
static void attention_gqa_bwd(const PwOps *o, float *dqkv, const float *dout, const float *qkv,
                              const float *lse, const int *mask, int B, int T, int NH, int NKV,
                              int hs)
{
    pw_attention_gqa_backward_cuda(dqkv, dout, qkv, lse, mask, B, T, NH, NKV, hs, S(o));
}
static void attention_gqa_fwd_bf16(const PwOps *o, float *out, uint16_t *out16, float *lse,
                                   const uint16_t *qkv, const int *mask, int B, int T, int NH,
                                   int NKV, int hs)
{
    pw_attention_gqa_forward_bf16_cuda(out, out16, lse, qkv, mask, B, T, NH, NKV, hs, S(o));
}
static void attention_gqa_bwd_bf16(const PwOps *o, float *dqkv, uint16_t *dqkv16,
                                   const float *dout, const uint16_t *qkv,
                                   const uint16_t *out, const float *lse, const int *mask, int B,
                                   int T, int NH, int NKV, int hs)
{
    pw_attention_gqa_backward_bf16_cuda(dqkv, dqkv16, dout, qkv, out, lse, mask, B, T, NH, NKV,
                                        hs, S(o));
}
static void attention_cache_gqa_fwd(const PwOps *o, float *out, float *kcache, float *vcache,
                                    float *scores, const float *qkv, const int *seg_row,
                                    const int *seg_off, const int *seg_slot0, int nseg, int N,
                                    int maxT, int NH, int NKV, int hs)
{
    pw_attention_cache_gqa_forward_cuda(out, kcache, vcache, scores, qkv, seg_row, seg_off,
                                        seg_slot0, nseg, N, maxT, NH, NKV, hs, S(o));
}
static void attention_cache_gqa_fwd_bf16(const PwOps *o, float *out, uint16_t *out16,
                                         uint16_t *kcache, uint16_t *vcache, float *scores,
                                         const float *qkv, const int *seg_row,
                                         const int *seg_off, const int *seg_slot0, int nseg,
                                         int N, int maxT, int NH, int NKV, int hs)
{
    if (out16)
        pw_attention_cache_gqa_forward_bf16_out_cuda(out16, kcache, vcache, qkv, seg_row,
                                                     seg_off, seg_slot0, nseg, N, maxT, NH, NKV,
                                                     hs, S(o));
    else
        pw_attention_cache_gqa_forward_bf16_cuda(out, kcache, vcache, scores, qkv, seg_row,
                                                 seg_off, seg_slot0, nseg, N, maxT, NH, NKV, hs,
                                                 S(o));
}
static void gelu_fwd(const PwOps *o, float *out, const float *inp, size_t N)
{
    pw_gelu_forward_cuda(out, inp, N, S(o));
}
static void gelu_bwd(const PwOps *o, float *dinp, const float *inp, const float *dout, size_t N)
{
    pw_gelu_backward_cuda(dinp, inp, dout, N, S(o));
}
static void residual_fwd(const PwOps *o, float *out, const float *a, const float *b, size_t N)
{
    pw_residual_forward_cuda(out, a, b, N, S(o));
}
static void sample_rows(const PwOps *o, const float *logits, int ld, int n, int V,
                        const int *rows, const PwSampleConfig *sc, uint64_t *rng, int *token,
                        float *logp, float *logp_full)
{
    pw_sample_rows_cuda(logits, ld, n, V, rows, sc, rng, token, logp, logp_full, S(o));
}
static void record_rows(const PwOps *o, const PwGenRows *g, int n, const int *rows,
                        const int *token, const float *logp, const float *logp_full,
                        int *pass_tok, int *pass_pos, int *pass_slot0)
{
    pw_sample_record_cuda(g, n, rows, token, logp, logp_full, pass_tok, pass_pos, pass_slot0,
                          S(o));
}
static void logprobs_fwd(const PwOps *o, float *logp, float *entropy, float *stats,
                         const float *logits, const int *targets, int N, int V, int ld)
{
    pw_logprobs_forward_cuda(logp, entropy, stats, logits, targets, N, V, ld, S(o));
}
static void logprobs_bwd(const PwOps *o, float *dlogits, const float *logits, const float *stats,
                         const int *targets, const float *dlogp, const float *dentropy, int N,
                         int V, int ld)
{
    pw_logprobs_backward_cuda(dlogits, logits, stats, targets, dlogp, dentropy, N, V, ld,
                              S(o));
}
static void logprobs_bwd_bf16(const PwOps *o, uint16_t *dlogits16, const float *logits,
                              const float *stats, const int *targets, const float *dlogp,
                              const float *dentropy, int N, int V, int ld, float mul)
{
    pw_logprobs_backward_bf16_cuda(dlogits16, logits, stats, targets, dlogp, dentropy, N, V, ld,
                                   mul, S(o));
}
static void gather(const PwOps *o, float *dst, const float *src, const int *rows, int n, int C)
{
    pw_gather_rows_cuda(dst, src, rows, n, C, S(o));
}
static void adamw(const PwOps *o, float *params, uint16_t *params16, const float *grads,
                  float gscale, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                  float eps, float weight_decay, int t)
{
    pw_adamw_update_cuda(params, (pw_bf16 *)params16, grads, gscale, m, v, n, lr, beta1, beta2,
                         eps, weight_decay, t, S(o));
}
static double sumsq(const PwOps *o, const float *x, size_t n) { return pw_sumsq_cuda(x, n, S(o)); }
static void scale(const PwOps *o, float *x, float s, size_t n) { pw_scale_cuda(x, s, n, S(o)); }

/* The device's compute capability against the build's gpu_arch (pw_gpu_arch.h), then the driver's
 * own word on loading the code (the attributes of one kernel: no launch); the notice of a
 * PTX-only fit once a process. GPU id is the current device after it (setting it back would
 * make a context on the GPU before: since CUDA 12, cudaSetDevice makes one). */
int pw_cuda_device_fits(int id, PwErr *err)
{
    static int noticed;
    struct cudaDeviceProp p;
    char notice[512], where[32];
    snprintf(where, sizeof where, "cuda:%d", id);
    if (cudaGetDeviceProperties(&p, id) != cudaSuccess) {
        cudaError_t e = cudaGetLastError();
        return pw_errf(err, "%s: the CUDA runtime does not describe it: %s", where,
                       cudaGetErrorString(e));
    }
    if (pw_gpu_arch_check(pw_gpu_archs(), where, p.name, p.major, p.minor, notice, sizeof notice,
                          err))
        return -1;
    if (notice[0] && !__atomic_exchange_n(&noticed, 1, __ATOMIC_RELAXED))
        fprintf(stderr, "ppo_world: %s\n", notice);
    if (cudaSetDevice(id) != cudaSuccess) {
        cudaError_t e = cudaGetLastError();
        return pw_errf(err, "%s (%s): the CUDA runtime does not open it: %s", where, p.name,
                       cudaGetErrorString(e));
    }
    const char *refused = pw_cuda_code_refused();
    if (refused)
        return pw_errf(err, "%s (%s, compute capability %d.%d): the driver does not load this "
                            "build's device code (gpu_arch '%s'): %s",
                       where, p.name, p.major, p.minor, pw_gpu_archs(), refused);
    return 0;
}

PwOps *pw_ops_cuda_open(int device_id, PwErr *err)
{
    int n = pw_cuda_device_count();
    if (device_id < 0 || device_id >= n) {
        char why[256] = "";
        if (n == 0) pw_cuda_why_none(why, sizeof why);
        return pw_errf(err, "cuda:%d: this process sees %d GPU%s%s%s%s", device_id, n,
                       n == 1 ? "" : "s", why[0] ? " (" : "", why, why[0] ? ")" : ""), NULL;
    }
    if (pw_cuda_device_fits(device_id, err)) return NULL;
    CudaOps *co = calloc(1, sizeof *co);
    if (!co) return pw_errf(err, "cuda:%d: out of host memory", device_id), NULL;
    PwOps *o = &co->ops;
    cudaStream_t s;
    CHECK(cudaSetDevice(device_id));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *o = (PwOps){
        .device = PW_DEVICE_CUDA,
        .device_id = device_id,
        .stream = s,
        .alloc = cuda_alloc,
        .free = cuda_free,
        .copy = cuda_copy,
        .copy_batch = cuda_copy_batch,
        .zero = cuda_zero,
        .sync = cuda_sync,
        .mem_info = cuda_mem_info,
        .graph_capture = cuda_graph_capture,
        .graph_run = cuda_graph_run,
        .graph_free = cuda_graph_free,
        .mark_new = cuda_mark_new,
        .mark_record = cuda_mark_record,
        .mark_ms = cuda_mark_ms,
        .mark_free = cuda_mark_free,
        PW_OPS_KERNEL_ENTRIES,
    };
    snprintf(o->name, sizeof o->name, "cuda:%d", device_id);
    return o;
}

void pw_ops_cuda_close(PwOps *o)
{
    if (!o) return;
    CHECK(cudaSetDevice(o->device_id));
    CHECK(cudaStreamSynchronize(S(o)));
    CudaOps *co = (CudaOps *)o;
    if (co->ws) {
        account_free(co->ws);
        CHECK(cudaFree(co->ws));
    }
    pw_cuda_release(); /* cuBLAS handles bound to this stream go before it does */
    CHECK(cudaStreamDestroy(S(o)));
    free(co);
}
