/* attention_bf16.cu: causal self-attention with a key padding mask on the tensor cores, in
 * bfloat16 with float32 accumulation, forward and backward, grouped-query (twin of
 * pw_attention_gqa_forward_bf16 / _backward_bf16 in cpu/attention.c): the model's attention at
 * precision bf16. The kernels are flash_tc_kernels.cuh's (no T x T matrix anywhere; for heads of
 * 64 flash_wg_kernels.cuh's where pw_cuda_set_flash_wgmma asks for it); heads
 * larger than 128, and pw_cuda_set_flash(0), take attention.cu's float32 path instead on q, k
 * and v widened (its GEMM path; the tests compare that with the twin to the bfloat16
 * tolerance). q, k and v come in bfloat16; the forward writes its output in float32 and / or
 * rounded to bfloat16 (out16: what the projection and the backward read, as flash-attention
 * keeps it); the backward reads that rounded output and sets dqkv, or its rounding to bfloat16
 * (dqkv16: what the qkv product's backward reads). */
#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"

#include "cp_async.cuh"
#include "mma.cuh"
#include "wgmma.cuh"
#define PW_DYN_SMEM(type, name) extern __shared__ __align__(16) type name[]
#include "flash_tc.cuh"
#include "flash_wg_kernels.cuh"

/* pw_kernels_cuda.h's modes are the kernels' */
static_assert(PW_WGMMA_SERIAL == FWG_SERIAL && PW_WGMMA_ONE_GROUP == FWG_ONE_GROUP &&
                  PW_WGMMA_BATCH_EACH == FWG_BATCH_EACH && PW_WGMMA_SWAP == FWG_SWAP &&
                  PW_WGMMA_ACC_FRESH == FWG_ACC_FRESH,
              "the warpgroup attention's modes differ from pw_kernels_cuda.h's");

/* forwards and backwards the warpgroup kernels took (under wgmma_lock) */
static unsigned long wgmma_calls;
static pthread_mutex_t wgmma_lock = PTHREAD_MUTEX_INITIALIZER;
/* their mode (pw_cuda_set_flash_wgmma_mode; under wgmma_lock): one whose kernels are not built
 * (fwg_kernels) is none */
static int wgmma_mode;

extern "C" void pw_cuda_set_flash_wgmma_mode(int bits)
{
    pthread_mutex_lock(&wgmma_lock);
    wgmma_mode = fwg_kernels(bits).fwd ? bits : 0;
    pthread_mutex_unlock(&wgmma_lock);
}

extern "C" int pw_cuda_get_flash_wgmma_mode(void)
{
    pthread_mutex_lock(&wgmma_lock);
    int m = wgmma_mode;
    pthread_mutex_unlock(&wgmma_lock);
    return m;
}

extern "C" unsigned long pw_cuda_flash_wgmma_calls(void)
{
    pthread_mutex_lock(&wgmma_lock);
    unsigned long n = wgmma_calls;
    pthread_mutex_unlock(&wgmma_lock);
    return n;
}

/* the forward on the warpgroup products (pw_cuda_set_flash_wgmma), where it applies: heads of
 * 64 exactly, 16-byte copies, a device that runs them; 1 when launched */
static int wgmma_forward(float *out, pw_bf16 *out16, float *lse, const uint16_t *qkv,
                         const int *mask, int B, int T, int NH, int NKV, int hs,
                         cudaStream_t stream)
{
    if (!pw_cuda_get_flash_wgmma() || hs != 64 || (uintptr_t)qkv % 16 ||
        !pw_wgmma_usable(stream))
        return 0;
    const int mode = pw_cuda_get_flash_wgmma_mode(), rows = FWG_BLOCK_ROWS(mode);
    dim3 grid((unsigned)((T + rows - 1) / rows), (unsigned)NH, (unsigned)B);
    fwg_kernels(mode).fwd<<<grid, PW_FWG_THREADS, PW_FWG_SMEM, stream>>>(
        out, (uint16_t *)out16, lse, qkv, mask, T, NH, NKV, hs, 1.0f / sqrtf((float)hs));
    PW_CUDA_CHECK(cudaGetLastError());
    pthread_mutex_lock(&wgmma_lock);
    wgmma_calls++;
    pthread_mutex_unlock(&wgmma_lock);
    return 1;
}

#define TC_LAUNCH(name, HS, grid, ...)                                                            \
    do {                                                                                         \
        if ((HS) == 32)                                                                          \
            pw_flash_tc_##name##_32<<<grid, TC_THREADS, 0, stream>>>(__VA_ARGS__);               \
        else if ((HS) == 64 && pw_cuda_get_flash_blocks() == 3)                                  \
            pw_flash_tc_##name##_64x3<<<grid, TC_THREADS, 0, stream>>>(__VA_ARGS__);             \
        else if ((HS) == 64)                                                                     \
            pw_flash_tc_##name##_64<<<grid, TC_THREADS, 0, stream>>>(__VA_ARGS__);               \
        else                                                                                     \
            pw_flash_tc_##name##_128<<<grid, TC_THREADS, 0, stream>>>(__VA_ARGS__);              \
        PW_CUDA_CHECK(cudaGetLastError());                                                       \
    } while (0)

/* The fused backward's kernel for bucket HS (pw_cuda_set_flash_fused_bwd): dynamic shared
 * memory over 48 KiB for heads of 64 and 128, so the build's limit is raised before each launch
 * (a kernel attribute of the current device, set on the host: no stream work) */
typedef void (*DkvqFn)(float *, uint16_t *, float *, const float *, const uint16_t *,
                       const uint16_t *, const float *, const int *, int, int, int, int, float);
static void dkvq_launch(int HS, dim3 grid, cudaStream_t stream, float *dqkv, uint16_t *dqkv16,
                        float *dq32, const float *drow, const uint16_t *dout16,
                        const uint16_t *qkv, const float *lse, const int *mask, int T, int NH,
                        int NKV, int hs, float scale)
{
    int three = HS == 64 && pw_cuda_get_flash_blocks() == 3;
    DkvqFn fn = HS == 32 ? pw_flash_tc_dkvq_32
                : three  ? pw_flash_tc_dkvq_64x3
                : HS == 64 ? pw_flash_tc_dkvq_64
                           : pw_flash_tc_dkvq_128;
    size_t bytes = HS == 32 ? pw_flash_tc_dkvq_bytes_32
                   : three  ? pw_flash_tc_dkvq_bytes_64x3
                   : HS == 64 ? pw_flash_tc_dkvq_bytes_64
                              : pw_flash_tc_dkvq_bytes_128;
    PW_CUDA_CHECK(cudaFuncSetAttribute((const void *)fn,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    fn<<<grid, TC_THREADS, bytes, stream>>>(dqkv, dqkv16, dq32, drow, dout16, qkv, lse, mask, T,
                                            NH, NKV, hs, scale);
    PW_CUDA_CHECK(cudaGetLastError());
}

/* heads the tensor-core kernels do not take: q, k and v widened into float32 scratch, for the
 * float32 path */
static float *widened(const uint16_t *qkv, int B, int T, int NH, int NKV, int hs,
                      cudaStream_t stream)
{
    size_t n = (size_t)B * T * (NH + 2 * NKV) * hs;
    float *w = (float *)pw_cuda_scratch(sizeof(float) * n, stream);
    pw_bf16_to_f32_cuda(w, qkv, n, stream);
    return w;
}

/* the backward's float32 output: dqkv, where dqkv16 is not asked for (one of the two) */
static float *d32_of(float *dqkv, pw_bf16 *dqkv16) { return dqkv16 ? NULL : dqkv; }

/* the backward's dq kernel and dk/dv kernel on the warpgroup products (pw_cuda_set_flash_wgmma)
 * after the prep kernel, where they apply (as wgmma_forward; the fused backward, where it is
 * asked for, is mma.sync's); 1 when launched */
static int wgmma_backward(float *d32, pw_bf16 *dqkv16, const float *drow, const uint16_t *dout16,
                          const uint16_t *qkv, const float *lse, const int *mask, int B, int T,
                          int NH, int NKV, int hs, float scale, cudaStream_t stream)
{
    if (!pw_cuda_get_flash_wgmma() || pw_cuda_get_flash_fused_bwd() || hs != 64 ||
        (uintptr_t)qkv % 16 || !pw_wgmma_usable(stream))
        return 0;
    const int mode = pw_cuda_get_flash_wgmma_mode(), rows = FWG_BLOCK_ROWS(mode);
    unsigned bx = (unsigned)((T + rows - 1) / rows);
    dim3 gq(bx, (unsigned)NH, (unsigned)B), gk(bx, (unsigned)NKV, (unsigned)B);
    const FwgKernels k = fwg_kernels(mode);
    k.dq<<<gq, PW_FWG_THREADS, PW_FWG_SMEM, stream>>>(d32, (uint16_t *)dqkv16, drow, dout16, qkv,
                                                      lse, mask, T, NH, NKV, hs, scale);
    PW_CUDA_CHECK(cudaGetLastError());
    k.dkv<<<gk, PW_FWG_THREADS, PW_FWG_DKV_SMEM, stream>>>(d32, (uint16_t *)dqkv16, drow, dout16,
                                                           qkv, lse, mask, T, NH, NKV, hs, scale);
    PW_CUDA_CHECK(cudaGetLastError());
    pthread_mutex_lock(&wgmma_lock);
    wgmma_calls++;
    pthread_mutex_unlock(&wgmma_lock);
    return 1;
}

extern "C" void pw_attention_gqa_forward_bf16_cuda(float *out, pw_bf16 *out16, float *lse,
                                                   const uint16_t *qkv, const int *mask, int B,
                                                   int T, int NH, int NKV, int hs,
                                                   cudaStream_t stream)
{
    if (B <= 0 || T <= 0) return;
    int HS = pw_flash_bucket(hs); /* 0: the float32 path */
    if (!HS) {
        size_t n = (size_t)B * T * NH * hs;
        float *w = widened(qkv, B, T, NH, NKV, hs, stream);
        float *o = out ? out : (float *)pw_cuda_scratch(sizeof(float) * n, stream);
        pw_attention_gqa_forward_cuda(o, lse, w, mask, B, T, NH, NKV, hs, stream);
        if (out16) pw_f32_to_bf16_cuda(out16, o, n, stream);
        if (!out) pw_cuda_scratch_free(o, stream);
        pw_cuda_scratch_free(w, stream);
        return;
    }
    if (wgmma_forward(out, out16, lse, qkv, mask, B, T, NH, NKV, hs, stream)) return;
    int rows = TC_FWD_ROWS(HS);
    dim3 grid((unsigned)((T + rows - 1) / rows), (unsigned)NH, (unsigned)B);
    TC_LAUNCH(fwd, HS, grid, out, out16, lse, qkv, mask, T, NH, NKV, hs,
              1.0f / sqrtf((float)hs));
}

extern "C" void pw_attention_gqa_backward_bf16_cuda(float *dqkv, pw_bf16 *dqkv16,
                                                    const float *dout, const uint16_t *qkv,
                                                    const pw_bf16 *out16, const float *lse,
                                                    const int *mask, int B, int T, int NH,
                                                    int NKV, int hs, cudaStream_t stream)
{
    if (B <= 0 || T <= 0) return;
    int HS = pw_flash_bucket(hs); /* 0: the float32 path, which adds */
    if (!HS) {
        size_t n = (size_t)B * T * (NH + 2 * NKV) * hs;
        float *w = widened(qkv, B, T, NH, NKV, hs, stream);
        /* rounded into dqkv16: made in float32 scratch first (dqkv may alias dqkv16) */
        float *d = dqkv16 ? (float *)pw_cuda_scratch(sizeof(float) * n, stream) : dqkv;
        PW_CUDA_CHECK(cudaMemsetAsync(d, 0, sizeof(float) * n, stream));
        pw_attention_gqa_backward_cuda(d, dout, w, lse, mask, B, T, NH, NKV, hs, stream);
        if (dqkv16) {
            pw_f32_to_bf16_cuda(dqkv16, d, n, stream);
            pw_cuda_scratch_free(d, stream);
        }
        pw_cuda_scratch_free(w, stream);
        return;
    }
    float scale = 1.0f / sqrtf((float)hs);
    size_t rows = (size_t)B * NH * T;
    float *drow = (float *)pw_cuda_scratch(sizeof(float) * rows, stream);
    uint16_t *dout16 = (uint16_t *)pw_cuda_scratch(sizeof(uint16_t) * rows * hs, stream);
    pw_flash_tc_prep<<<pw_row_blocks(rows), PW_ROW_THREADS, 0, stream>>>(drow, dout16, dout,
                                                                         out16, mask, B, T, NH,
                                                                         hs);
    PW_CUDA_CHECK(cudaGetLastError());
    if (wgmma_backward(d32_of(dqkv, dqkv16), dqkv16, drow, dout16, qkv, lse, mask, B, T, NH, NKV,
                       hs, scale, stream)) {
        pw_cuda_scratch_free(dout16, stream);
        pw_cuda_scratch_free(drow, stream);
        return;
    }
    dim3 gq((unsigned)((T + TC_ROWS - 1) / TC_ROWS), (unsigned)NH, (unsigned)B);
    dim3 gk((unsigned)((T + TC_ROWS - 1) / TC_ROWS), (unsigned)NKV, (unsigned)B);
    float *d32 = d32_of(dqkv, dqkv16);
    if (pw_cuda_get_flash_fused_bwd()) {
        size_t nq = (size_t)B * T * NH * hs;
        float *dq32 = (float *)pw_cuda_scratch(sizeof(float) * nq, stream);
        PW_CUDA_CHECK(cudaMemsetAsync(dq32, 0, sizeof(float) * nq, stream));
        dkvq_launch(HS, gk, stream, d32, dqkv16, dq32, drow, dout16, qkv, lse, mask, T, NH, NKV,
                    hs, scale);
        pw_flash_tc_dq_store<<<pw_ew_blocks(nq), PW_EW_THREADS, 0, stream>>>(d32, dqkv16, dq32,
                                                                             B, T, NH, NKV, hs);
        PW_CUDA_CHECK(cudaGetLastError());
        pw_cuda_scratch_free(dq32, stream);
    } else {
        TC_LAUNCH(dq, HS, gq, d32, dqkv16, drow, dout16, qkv, lse, mask, T, NH, NKV, hs, scale);
        TC_LAUNCH(dkv, HS, gk, d32, dqkv16, drow, dout16, qkv, lse, mask, T, NH, NKV, hs, scale);
    }
    pw_cuda_scratch_free(dout16, stream);
    pw_cuda_scratch_free(drow, stream);
}
