/* context.cu: the cuBLAS handles of the CUDA kernels, one per (device, stream), made on first
 * use and kept until pw_cuda_release(); and the fp32 GEMM mode (pure fp32 or TF32). */
#include <pthread.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"

/* A rank drives a handful of streams; a fixed table keeps the lookup a short scan. */
#define PW_MAX_HANDLES 64

typedef struct HandleEntry {
    int device;
    cudaStream_t stream;
    cublasHandle_t handle;
} HandleEntry;

static HandleEntry handles[PW_MAX_HANDLES];
static int nhandles = 0;
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static int use_tf32 = 0;
static int use_flash = 1;
static int use_cache_split = 1;
static int use_cache_group = 1; /* an H200: 1.04x at Qwen2.5-0.5B's decode */
static int flash_blocks = 2;
static int flash_fused_bwd = 0;
static int ln_vec = 0;
static int colsum_vec = 1; /* the same bits as the scalar sums */
static int flash_wgmma = 0;
/* devices whose default memory pool already keeps freed scratch (see pw_cuda_scratch) */
#define PW_MAX_DEVICES 64
static int pool_kept[PW_MAX_DEVICES];

extern "C" void pw_cuda_set_tf32(int enable) { use_tf32 = enable != 0; }
extern "C" int pw_cuda_get_tf32(void) { return use_tf32; }
extern "C" void pw_cuda_set_flash(int enable) { use_flash = enable != 0; }
extern "C" int pw_cuda_get_flash(void) { return use_flash; }
extern "C" void pw_cuda_set_cache_split(int enable) { use_cache_split = enable != 0; }
extern "C" int pw_cuda_get_cache_split(void) { return use_cache_split; }
extern "C" void pw_cuda_set_cache_group(int enable) { use_cache_group = enable != 0; }
extern "C" int pw_cuda_get_cache_group(void) { return use_cache_group; }
extern "C" void pw_cuda_set_flash_blocks(int per_sm) { flash_blocks = per_sm == 3 ? 3 : 2; }
extern "C" int pw_cuda_get_flash_blocks(void) { return flash_blocks; }
extern "C" void pw_cuda_set_flash_fused_bwd(int enable) { flash_fused_bwd = enable != 0; }
extern "C" int pw_cuda_get_flash_fused_bwd(void) { return flash_fused_bwd; }
extern "C" void pw_cuda_set_ln_vec(int enable) { ln_vec = enable != 0; }
extern "C" int pw_cuda_get_ln_vec(void) { return ln_vec; }
extern "C" void pw_cuda_set_colsum_vec(int enable) { colsum_vec = enable != 0; }
extern "C" int pw_cuda_get_colsum_vec(void) { return colsum_vec; }
extern "C" void pw_cuda_set_flash_wgmma(int enable) { flash_wgmma = enable != 0; }
extern "C" int pw_cuda_get_flash_wgmma(void) { return flash_wgmma; }

cublasComputeType_t pw_cuda_f32_compute(void)
{
    return use_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

cublasHandle_t pw_cuda_cublas(cudaStream_t stream)
{
    int device = 0;
    PW_CUDA_CHECK(cudaGetDevice(&device));
    pthread_mutex_lock(&handles_lock);
    cublasHandle_t h = NULL;
    for (int i = 0; i < nhandles; i++)
        if (handles[i].device == device && handles[i].stream == stream) h = handles[i].handle;
    if (!h) {
        if (nhandles == PW_MAX_HANDLES)
            pw_cuda_fail(__FILE__, __LINE__, "pw_cuda_cublas: more than %d (device, stream) pairs",
                         PW_MAX_HANDLES);
        PW_CUBLAS_CHECK(cublasCreate(&h));
        /* the TF32 choice is made per call through the compute type, not by the math mode */
        PW_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
        handles[nhandles].device = device;
        handles[nhandles].stream = stream;
        handles[nhandles].handle = h;
        nhandles++;
    }
    pthread_mutex_unlock(&handles_lock);
    /* re-bound on every use: cheap, and correct even if a stream's address was recycled */
    PW_CUBLAS_CHECK(cublasSetStream(h, stream));
    /* scalars (alpha, beta) are host values in every call of this layer */
    PW_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    return h;
}

extern "C" void pw_cuda_release(void)
{
    pthread_mutex_lock(&handles_lock);
    int current = 0;
    PW_CUDA_CHECK(cudaGetDevice(&current));
    for (int i = 0; i < nhandles; i++) {
        /* a handle must be destroyed on the device it was created on */
        PW_CUDA_CHECK(cudaSetDevice(handles[i].device));
        PW_CUBLAS_CHECK(cublasDestroy(handles[i].handle));
    }
    nhandles = 0;
    PW_CUDA_CHECK(cudaSetDevice(current));
    pthread_mutex_unlock(&handles_lock);
    pw_lt_release();
    pw_skinny_release();
}

int pw_cuda_capturing(cudaStream_t stream)
{
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &cs) != cudaSuccess) {
        (void)cudaGetLastError();
        return 1;
    }
    return cs != cudaStreamCaptureStatusNone;
}

/* Scratch comes from the device's default pool in stream order. The pool's release threshold
 * is raised once per device so that freed scratch stays in the pool: with the default (0) it
 * would go back to the driver at every synchronisation and be mapped again on the next call. */
void *pw_cuda_scratch(size_t bytes, cudaStream_t stream)
{
    int device = 0;
    PW_CUDA_CHECK(cudaGetDevice(&device));
    pthread_mutex_lock(&handles_lock);
    if (device < PW_MAX_DEVICES && !pool_kept[device]) {
        cudaMemPool_t pool;
        unsigned long long keep = ~0ull; /* the attribute is a 64-bit unsigned integer */
        PW_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
        PW_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
        pool_kept[device] = 1;
    }
    pthread_mutex_unlock(&handles_lock);
    void *p = NULL;
    PW_CUDA_CHECK(cudaMallocAsync(&p, bytes ? bytes : 1, stream));
    return p;
}

void pw_cuda_scratch_free(void *p, cudaStream_t stream)
{
    PW_CUDA_CHECK(cudaFreeAsync(p, stream));
}

/* The most memory the default pools of the devices this process gave scratch to ever reserved
 * (their high-water marks: the pools keep what they reserved, see pw_cuda_scratch). */
extern "C" size_t pw_cuda_scratch_peak_bytes(void)
{
    size_t total = 0;
    pthread_mutex_lock(&handles_lock);
    for (int d = 0; d < PW_MAX_DEVICES; d++) {
        if (!pool_kept[d]) continue;
        cudaMemPool_t pool;
        unsigned long long high = 0;
        PW_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, d));
        PW_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &high));
        total += (size_t)high;
    }
    pthread_mutex_unlock(&handles_lock);
    return total;
}
