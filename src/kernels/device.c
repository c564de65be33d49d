/* device.c: the CPU side of pw_device_count() and pw_device_fits(): with the CUDA backend they
 * ask the CUDA runtime, without it there is nothing to count or fit. */
#include "pw_device.h"

#include <stdio.h>

#ifdef PW_HAVE_CUDA
#include "pw_kernels_cuda.h"

size_t pw_cuda_device_total_bytes(int id);
size_t pw_cuda_device_free_bytes(int id);
int pw_device_count(void) { return pw_cuda_device_count(); }
int pw_device_pci_id(int ordinal, unsigned *domain, unsigned *bus, unsigned *dev)
{
    return pw_cuda_pci_id(ordinal, domain, bus, dev);
}
void pw_device_why_none(char *buf, size_t n) { pw_cuda_why_none(buf, n); }

int pw_device_fits(int id, PwErr *err) { return pw_cuda_device_fits(id, err); }
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
