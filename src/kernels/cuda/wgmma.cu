/* wgmma.cu: whether this device runs the warpgroup products (wgmma.cuh), and the probe of
 * their layouts (wgmma_probe_kernels.cuh) that tests/cuda/test_cuda_wgmma.c runs. The products
 * exist only in code built for sm_90a (meson.build builds the device code so where gpu_arch is
 * 90) and run only on a device of compute capability 9.0; what the driver loaded is asked of
 * the device itself, once per device, by a one-thread kernel. */
#include <math.h>
#include <pthread.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"

#include "cp_async.cuh"
#include "wgmma.cuh"
#define PW_DYN_SMEM(type, name) extern __shared__ __align__(16) type name[]
#include "wgmma_probe_kernels.cuh"

#define WG_MAX_DEVICES 64

static pthread_mutex_t wg_lock = PTHREAD_MUTEX_INITIALIZER;
static signed char wg_known[WG_MAX_DEVICES]; /* 0 not asked, 1 yes, -1 no */

extern "C" int pw_cuda_wgmma_ok(void)
{
    int device = 0;
    PW_CUDA_CHECK(cudaGetDevice(&device));
    if (device < 0 || device >= WG_MAX_DEVICES) return 0;
    pthread_mutex_lock(&wg_lock);
    if (!wg_known[device]) {
        int major = 0, minor = 0, yes = 0;
        PW_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
        PW_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
        if (major == 9 && minor == 0) {
            int *flag = NULL;
            PW_CUDA_CHECK(cudaMalloc((void **)&flag, sizeof(int)));
            pw_wgmma_arch_kernel<<<1, 1>>>(flag);
            PW_CUDA_CHECK(cudaGetLastError());
            PW_CUDA_CHECK(cudaMemcpy(&yes, flag, sizeof(int), cudaMemcpyDeviceToHost));
            PW_CUDA_CHECK(cudaFree(flag));
        }
        wg_known[device] = yes ? 1 : -1;
    }
    int ok = wg_known[device] > 0;
    pthread_mutex_unlock(&wg_lock);
    return ok;
}

int pw_wgmma_usable(cudaStream_t stream)
{
    int device = 0, known = 0;
    PW_CUDA_CHECK(cudaGetDevice(&device));
    if (device >= 0 && device < WG_MAX_DEVICES) {
        pthread_mutex_lock(&wg_lock);
        known = wg_known[device];
        pthread_mutex_unlock(&wg_lock);
    }
    if (!known && pw_cuda_capturing(stream)) return 0; /* asked later, outside the capture */
    return known ? known > 0 : pw_cuda_wgmma_ok();
}

extern "C" int pw_cuda_wgmma_probe(float *out, const uint16_t *a, const uint16_t *x, int form,
                                   cudaStream_t stream)
{
    return pw_cuda_wgmma_probe_at(out, a, x, form, PW_WG_LBO, PW_WG_SBO,
                                  form >= 0 ? PW_WG_PROBE_STEP(form) : 0, stream);
}

extern "C" int pw_cuda_wgmma_probe_at(float *out, const uint16_t *a, const uint16_t *x, int form,
                                      int lbo, int sbo, int step, cudaStream_t stream)
{
    if (form < 0 || form >= PW_WG_PROBE_FORMS || !pw_cuda_wgmma_ok()) return 0;
    PW_CUDA_CHECK(cudaFuncSetAttribute((const void *)pw_wgmma_probe_kernel,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       PW_WG_PROBE_SMEM));
    pw_wgmma_probe_kernel<<<1, PW_WG_PROBE_THREADS, PW_WG_PROBE_SMEM, stream>>>(out, a, x, form,
                                                                               lbo, sbo, step);
    PW_CUDA_CHECK(cudaGetLastError());
    return 1;
}
