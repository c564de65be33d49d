/* device.cu: the CUDA runtime's view of the GPUs; a machine without a driver or a GPU has 0. */
#include <cuda_runtime.h>
#include <stdio.h>

extern "C" int pw_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky "no driver" error */
        return 0;
    }
    return n;
}

/* Why the count is 0, in words for an error message: no driver, a driver older than this build's
 * runtime (the same error from the runtime: the versions tell them apart), no GPU, or the
 * runtime's own reason. */
extern "C" void pw_cuda_why_none(char *buf, size_t n)
{
    int count = 0, driver = 0, runtime = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    (void)cudaGetLastError();
    if (e == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess &&
        driver > 0 && cudaRuntimeGetVersion(&runtime) == cudaSuccess)
        snprintf(buf, n, "the NVIDIA driver supports CUDA up to %d.%d and this build's CUDA "
                         "runtime is %d.%d: update the driver, or build with CUDA %d.%d or older",
                 driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10,
                 driver / 1000, driver % 1000 / 10);
    else if (e == cudaErrorInsufficientDriver)
        snprintf(buf, n, "no NVIDIA driver found");
    else if (e == cudaSuccess || e == cudaErrorNoDevice)
        snprintf(buf, n, "no GPU found");
    else
        snprintf(buf, n, "%s", cudaGetErrorString(e));
}

/* "0000:3b:00.0" (domain:bus:device.function, hex) of device `ordinal` */
extern "C" int pw_cuda_pci_id(int ordinal, unsigned *domain, unsigned *bus, unsigned *dev)
{
    char id[32];
    unsigned fn = 0;
    if (cudaDeviceGetPCIBusId(id, (int)sizeof id, ordinal) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return sscanf(id, "%x:%x:%x.%x", domain, bus, dev, &fn) == 4 ? 0 : -1;
}

extern "C" size_t pw_cuda_device_total_bytes(int id)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, id) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return p.totalGlobalMem;
}

/* The memory of GPU `id` free now (after this process's context, which the query makes if there
 * was none); 0 where it cannot be asked. The scratch pool keeps what it freed (context.cu): that
 * memory is trimmed back to the driver first, so that what an earlier run in this process left
 * there counts as free (bench_ppo_gpu runs several in one process). */
extern "C" size_t pw_cuda_device_free_bytes(int id)
{
    size_t free_b = 0, total_b = 0;
    int prev = 0;
    cudaMemPool_t pool;
    if (cudaGetDevice(&prev) != cudaSuccess || cudaSetDevice(id) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess ||
        cudaDeviceGetDefaultMemPool(&pool, id) != cudaSuccess ||
        cudaMemPoolTrimTo(pool, 0) != cudaSuccess ||
        cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        (void)cudaGetLastError();
        free_b = 0;
    }
    (void)cudaSetDevice(prev);
    return free_b;
}
