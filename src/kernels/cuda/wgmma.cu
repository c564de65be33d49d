/* wgmma.cu: what the code this device loaded was built for, and from it whether the device runs
 * the warpgroup products (wgmma.cuh); and the probe of their layouts (wgmma_probe_kernels.cuh)
 * that tests/cuda/test_cuda_wgmma.c runs. The products exist only in code built for sm_90a
 * (meson.build builds the device code so where gpu_arch is 90) and run only on a device of
 * compute capability 9.0; what the driver loaded is asked of the device itself, once per device,
 * by a one-thread kernel (which also says the code's architecture: pdl.cuh needs 9.0). */
#include <math.h>
#include <pthread.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"

#include "cp_async.cuh"
#include "wgmma.cuh"
#define PW_DYN_SMEM(type, name) extern __shared__ __align__(16) type name[]
#include "wgmma_probe_kernels.cuh"

#define WG_MAX_DEVICES 64

/* What the code this device loaded was built for, asked once per device: __CUDA_ARCH__ of the
 * code the driver chose (900 and up: Hopper's griddepcontrol, pdl.cuh) and whether it has the
 * warpgroup products (sm_90a); 0 while not asked. */
typedef struct CodeArch {
    int arch, wgmma;
} CodeArch;

static pthread_mutex_t wg_lock = PTHREAD_MUTEX_INITIALIZER;
static CodeArch wg_code[WG_MAX_DEVICES];

/* the loaded code of the current device, asked of it where not known yet (a one-thread kernel
 * and a copy back: never while a stream is being captured, `ask` 0) */
static CodeArch code_arch(int ask)
{
    int device = 0;
    CodeArch c = {0, 0};
    PW_CUDA_CHECK(cudaGetDevice(&device));
    if (device < 0 || device >= WG_MAX_DEVICES) return c;
    pthread_mutex_lock(&wg_lock);
    if (!wg_code[device].arch && ask) {
        int *flag = NULL, got[2] = {0, 0};
        PW_CUDA_CHECK(cudaMalloc((void **)&flag, sizeof got));
        pw_wgmma_arch_kernel<<<1, 1>>>(flag);
        PW_CUDA_CHECK(cudaGetLastError());
        PW_CUDA_CHECK(cudaMemcpy(got, flag, sizeof got, cudaMemcpyDeviceToHost));
        PW_CUDA_CHECK(cudaFree(flag));
        int major = 0, minor = 0;
        PW_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
        PW_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
        wg_code[device].arch = got[0] > 0 ? got[0] : -1;
        wg_code[device].wgmma = got[1] && major == 9 && minor == 0;
    }
    c = wg_code[device];
    pthread_mutex_unlock(&wg_lock);
    return c;
}

extern "C" int pw_cuda_wgmma_ok(void) { return code_arch(1).wgmma; }

extern "C" int pw_cuda_device_code_arch(void)
{
    CodeArch c = code_arch(1);
    return c.arch > 0 ? c.arch : 0;
}

extern "C" const char *pw_cuda_code_refused(void)
{
    cudaFuncAttributes attr;
    cudaError_t e = cudaFuncGetAttributes(&attr, (const void *)pw_wgmma_arch_kernel);
    if (e == cudaSuccess) return NULL;
    (void)cudaGetLastError();
    return cudaGetErrorString(e);
}

/* during a capture of stream, a device not asked yet is asked later, outside it */
int pw_cuda_code_arch(cudaStream_t stream)
{
    CodeArch c = code_arch(!pw_cuda_capturing(stream));
    return c.arch > 0 ? c.arch : 0;
}

int pw_wgmma_usable(cudaStream_t stream) { return code_arch(!pw_cuda_capturing(stream)).wgmma; }

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
