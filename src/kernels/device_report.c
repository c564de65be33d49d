/* device_report.c: `ppo_world devices`: what this build can run on and what this machine has,
 * in a few lines: the build's CUDA runtime, gpu_arch and NCCL, the driver, and each GPU with
 * whether it runs the build's code (docs/cuda.md, The architectures). The first thing to run
 * where a GPU placement is refused. */
#include "pw_device.h"

#include <stdio.h>

#include "pw_blas_core.h"
#include "pw_gpu_arch.h"

#ifdef PW_HAVE_CUDA
#include <cuda_runtime_api.h>
#ifdef PW_HAVE_NCCL
#include <nccl.h>
#endif

/* a CUDA version as the runtime gives it (12040) in words (12.4) */
static void cuda_version(char *buf, size_t n, int v)
{
    snprintf(buf, n, "%d.%d", v / 1000, v % 1000 / 10);
}

static void build_line(FILE *f)
{
    int runtime = 0;
    char rt[16] = "?", archs[128];
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) cuda_version(rt, sizeof rt, runtime);
    pw_gpu_arch_describe(pw_gpu_archs(), archs, sizeof archs);
    fprintf(f, "build: CUDA runtime %s, gpu_arch %s (%s)", rt, pw_gpu_archs(), archs);
#ifdef PW_HAVE_NCCL
    int nccl = 0;
    if (ncclGetVersion(&nccl) == ncclSuccess)
        fprintf(f, ", NCCL %d.%d.%d", nccl / 10000, nccl % 10000 / 100, nccl % 100);
#else
    fprintf(f, ", no NCCL (gradients and weights go over MPI)");
#endif
    fprintf(f, "\n");
}

/* one GPU: what it is, and whether it runs the build's code (the startup's check,
 * pw_device_fits, whose notice of a PTX-only fit also goes to stderr) */
static void gpu_line(FILE *f, int id)
{
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, id) != cudaSuccess) {
        fprintf(f, "GPU %d: not described: %s\n", id, cudaGetErrorString(cudaGetLastError()));
        return;
    }
    fprintf(f, "GPU %d: %s, compute capability %d.%d, %d SMs, %.1f GiB: ", id, p.name, p.major,
            p.minor, p.multiProcessorCount, (double)p.totalGlobalMem / (1024.0 * 1024 * 1024));
    PwErr err = {{0}};
    if (pw_device_fits(id, &err)) {
        fprintf(f, "does not run this build: %s\n", err.msg);
        return;
    }
    int code = 0;
    if (pw_gpu_arch_fit(pw_gpu_archs(), p.major, p.minor, &code) == PW_ARCH_NATIVE)
        fprintf(f, "runs this build's machine code (sm_%d%s)\n", code, code == 90 ? "a" : "");
    else
        fprintf(f, "runs this build's PTX (compute_%d), which the driver compiles at first use; "
                   "-Dgpu_arch=%d%d builds machine code for it\n",
                code, p.major, p.minor);
}

void pw_device_report(FILE *f)
{
    build_line(f);
    pw_blas_core_report(f);
    int driver = 0;
    char dv[16];
    if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) {
        cuda_version(dv, sizeof dv, driver);
        fprintf(f, "driver: supports CUDA up to %s\n", dv);
    } else {
        fprintf(f, "driver: none found\n");
    }
    int n = pw_device_count();
    if (n == 0) {
        char why[256];
        pw_device_why_none(why, sizeof why);
        fprintf(f, "GPUs: 0 (%s)\n", why);
        return;
    }
    fprintf(f, "GPUs: %d\n", n);
    for (int i = 0; i < n; i++) gpu_line(f, i);
}
#else
void pw_device_report(FILE *f)
{
    fprintf(f, "build: CPU only (ppo_world built without CUDA: nvcc was not found, or "
               "-Dcuda=disabled)\n");
    pw_blas_core_report(f);
    fprintf(f, "GPUs: 0 (ppo_world built without CUDA)\n");
}
#endif
