/* device.c: the CPU side of pw_device_count() and pw_device_fits(): with the CUDA backend they
 * ask the CUDA runtime, without it there is nothing to count or fit. */
#include "pw_device.h"

#include <stdio.h>

#ifdef PW_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "pw_gpu_arch.h"

const char *pw_cuda_code_refused(void);
int pw_cuda_device_count(void);
size_t pw_cuda_peak_bytes(void);
size_t pw_cuda_device_total_bytes(int id);
size_t pw_cuda_device_free_bytes(int id);
void pw_cuda_why_none(char *buf, size_t n);
int pw_cuda_pci_id(int ordinal, unsigned *domain, unsigned *bus, unsigned *dev);
int pw_device_count(void) { return pw_cuda_device_count(); }
int pw_device_pci_id(int ordinal, unsigned *domain, unsigned *bus, unsigned *dev)
{
    return pw_cuda_pci_id(ordinal, domain, bus, dev);
}
void pw_device_why_none(char *buf, size_t n) { pw_cuda_why_none(buf, n); }

/* The device's compute capability against the build's gpu_arch (pw_gpu_arch.h), then the driver's
 * own word on loading the code (the attributes of one kernel: no launch); the notice of a
 * PTX-only fit once a process. GPU id is the current device after it (setting it back would
 * make a context on the GPU before: since CUDA 12, cudaSetDevice makes one). */
int pw_device_fits(int id, PwErr *err)
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
size_t pw_device_peak_bytes(void) { return pw_cuda_peak_bytes(); }
size_t pw_device_total_bytes(int id) { return pw_cuda_device_total_bytes(id); }
size_t pw_device_free_bytes(int id) { return pw_cuda_device_free_bytes(id); }
#else
int pw_device_count(void) { return 0; }
void pw_device_why_none(char *buf, size_t n) { snprintf(buf, n, "ppo_world built without CUDA"); }
int pw_device_fits(int id, PwErr *err) { return (void)id, (void)err, 0; }
int pw_device_pci_id(int ordinal, unsigned *domain, unsigned *bus, unsigned *dev)
{
    return (void)ordinal, (void)domain, (void)bus, (void)dev, -1;
}
size_t pw_device_peak_bytes(void) { return 0; }
size_t pw_device_total_bytes(int id) { return (void)id, 0; }
size_t pw_device_free_bytes(int id) { return (void)id, 0; }
#endif
