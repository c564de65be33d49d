/* skinny.cu: the few-row products of a decode step through a kernel of our own
 * (skinny_kernels.cuh, which says why), where pw_cuda_set_skinny asks for it: the bf16 forward
 * with a float32 output (matmul.cu's linear_forward), or with GELU in its epilogue and a bfloat16
 * output (matmul.cu's GPT-2 MLP entry in a cache pass), or SwiGLU of a [gate | up] product the
 * same way (its Llama-family MLP entry), of at most PW_SK_MAX_ROWS rows and at most
 * PW_SK_PER_TILE_SM of its tiles an SM (launch.cuh's pw_sk_parts: an LM head has more). Each
 * (device, stream) keeps its own workspace for the parts' sums and its own tile counters, made on
 * its first call and zeroed then; the kernel's last block of each tile sets its counter back to
 * zero, so no call needs a memset, and a decode step captured as a CUDA graph replays as it ran. A
 * first call on a stream being captured finds no buffers and goes to cuBLAS (the generator
 * launches each pass's first decode step before it captures one: generate.c). */
#include <pthread.h>
#include <stdint.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"

#include "cp_async.cuh"
#include "mma.cuh"
#include "skinny_kernels.cuh"

#define SK_MAX_STREAMS 64

typedef struct SkStream {
    int device, sms;
    cudaStream_t stream;
    float *ws;     /* PW_SK_WS_TILES partial tiles */
    int *counters; /* PW_SK_MAX_TILES, zero between launches */
} SkStream;

static pthread_mutex_t sk_lock = PTHREAD_MUTEX_INITIALIZER;
static SkStream sk_streams[SK_MAX_STREAMS];
static int sk_nstreams;
static int sk_enabled; /* off until a GPU has timed it against cuBLAS (bench_generate) */
static int sk_per_sm = PW_SK_PER_SM;
static unsigned long sk_calls, sk_gelu_calls, sk_swiglu_calls;

extern "C" void pw_cuda_set_skinny(int enable) { sk_enabled = enable != 0; }
extern "C" int pw_cuda_get_skinny(void) { return sk_enabled; }
extern "C" void pw_cuda_set_skinny_blocks(int per_sm)
{
    sk_per_sm = per_sm < 1 ? PW_SK_PER_SM : per_sm > 8 ? 8 : per_sm;
}
extern "C" int pw_cuda_get_skinny_blocks(void) { return sk_per_sm; }
extern "C" unsigned long pw_cuda_skinny_calls(void)
{
    pthread_mutex_lock(&sk_lock);
    unsigned long n = sk_calls;
    pthread_mutex_unlock(&sk_lock);
    return n;
}
extern "C" unsigned long pw_cuda_skinny_gelu_calls(void)
{
    pthread_mutex_lock(&sk_lock);
    unsigned long n = sk_gelu_calls;
    pthread_mutex_unlock(&sk_lock);
    return n;
}
extern "C" unsigned long pw_cuda_skinny_swiglu_calls(void)
{
    pthread_mutex_lock(&sk_lock);
    unsigned long n = sk_swiglu_calls;
    pthread_mutex_unlock(&sk_lock);
    return n;
}

/* this stream's buffers, made on its first call; NULL when they cannot be (the stream is being
 * captured, the table is full, or the device is short of memory): the caller goes to cuBLAS.
 * Under sk_lock. */
static const SkStream *stream_state(cudaStream_t stream)
{
    int device = 0;
    PW_CUDA_CHECK(cudaGetDevice(&device));
    for (int i = 0; i < sk_nstreams; i++)
        if (sk_streams[i].device == device && sk_streams[i].stream == stream)
            return &sk_streams[i];
    if (pw_cuda_capturing(stream) || sk_nstreams == SK_MAX_STREAMS) return NULL;
    SkStream s = {device, 0, stream, NULL, NULL};
    PW_CUDA_CHECK(cudaDeviceGetAttribute(&s.sms, cudaDevAttrMultiProcessorCount, device));
    size_t ws_bytes = sizeof(float) * (size_t)PW_SK_WS_TILES * PW_SK_BM * PW_SK_BN;
    if (cudaMalloc((void **)&s.ws, ws_bytes) != cudaSuccess ||
        cudaMalloc((void **)&s.counters, sizeof(int) * PW_SK_MAX_TILES) != cudaSuccess) {
        (void)cudaGetLastError(); /* short of memory: cuBLAS takes these products */
        if (s.ws) PW_CUDA_CHECK(cudaFree(s.ws));
        return NULL;
    }
    PW_CUDA_CHECK(cudaMemsetAsync(s.counters, 0, sizeof(int) * PW_SK_MAX_TILES, stream));
    sk_streams[sk_nstreams] = s;
    return &sk_streams[sk_nstreams++];
}

static int aligned(const void *p, uintptr_t bytes) { return (uintptr_t)p % bytes == 0; }

/* the launch behind both entries below; act a PW_SK_* epilogue */
static int skinny(float *out, pw_bf16 *act16, const pw_bf16 *inp, const pw_bf16 *weight,
                  const float *bias, int N, int C, int OC, int act, cudaStream_t stream)
{
    /* what the kernel needs of its operands; the rows and C looked at first too (pw_sk_parts
     * decides), so that a training product never takes the lock */
    const void *dst = act ? (const void *)act16 : (const void *)out;
    if (!sk_enabled || N < 1 || N > PW_SK_MAX_ROWS || OC % 4 || C % PW_SK_BK ||
        !aligned(inp, 16) || !aligned(weight, 16) || !aligned(dst, 16) || !aligned(bias, 4))
        return 0;
    pthread_mutex_lock(&sk_lock);
    const SkStream *s = stream_state(stream);
    int parts = s ? pw_sk_parts(N, C, OC, s->sms, sk_per_sm) : 0;
    sk_calls += parts > 0;
    sk_gelu_calls += parts > 0 && act == PW_SK_GELU;
    sk_swiglu_calls += parts > 0 && act == PW_SK_SWIGLU;
    pthread_mutex_unlock(&sk_lock);
    if (!parts) return 0;
    dim3 grid((N + PW_SK_BM - 1) / PW_SK_BM, (OC + PW_SK_BN - 1) / PW_SK_BN, parts);
    pw_launch(pw_skinny_kernel, grid, PW_SK_THREADS, 0, stream, out, (uint16_t *)act16, s->ws,
              s->counters, (const uint16_t *)inp, (const uint16_t *)weight, bias, N, C, OC, act);
    return 1;
}

int pw_skinny_forward(float *out, pw_bf16 *act16, const pw_bf16 *inp, const pw_bf16 *weight,
                      const float *bias, int N, int C, int OC, cudaStream_t stream)
{
    return skinny(act16 ? NULL : out, act16, inp, weight, bias, N, C, OC,
                  act16 ? PW_SK_GELU : PW_SK_PLAIN, stream);
}

int pw_skinny_swiglu_forward(pw_bf16 *act16, const pw_bf16 *inp, const pw_bf16 *weight, int N,
                             int C, int F, cudaStream_t stream)
{
    if (F % 4) return 0; /* the outputs 4 at a time */
    return skinny(NULL, act16, inp, weight, NULL, N, C, 2 * F, PW_SK_SWIGLU, stream);
}

void pw_skinny_release(void)
{
    pthread_mutex_lock(&sk_lock);
    int current = 0;
    PW_CUDA_CHECK(cudaGetDevice(&current));
    for (int i = 0; i < sk_nstreams; i++) {
        PW_CUDA_CHECK(cudaSetDevice(sk_streams[i].device));
        PW_CUDA_CHECK(cudaFree(sk_streams[i].ws));
        PW_CUDA_CHECK(cudaFree(sk_streams[i].counters));
    }
    sk_nstreams = 0;
    PW_CUDA_CHECK(cudaSetDevice(current));
    pthread_mutex_unlock(&sk_lock);
}
