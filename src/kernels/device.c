/* device.c: the CPU side of pw_device_count(): with the CUDA backend it asks the CUDA runtime,
 * without it there is nothing to count. */
#include "pw_device.h"

#include <stdio.h>

#ifdef PW_HAVE_CUDA
int pw_cuda_device_count(void);
size_t pw_cuda_peak_bytes(void);
size_t pw_cuda_device_total_bytes(int id);
size_t pw_cuda_device_free_bytes(int id);
void pw_cuda_why_none(char *buf, size_t n);
int pw_device_count(void) { return pw_cuda_device_count(); }
void pw_device_why_none(char *buf, size_t n) { pw_cuda_why_none(buf, n); }
size_t pw_device_peak_bytes(void) { return pw_cuda_peak_bytes(); }
size_t pw_device_total_bytes(int id) { return pw_cuda_device_total_bytes(id); }
size_t pw_device_free_bytes(int id) { return pw_cuda_device_free_bytes(id); }
#else
int pw_device_count(void) { return 0; }
void pw_device_why_none(char *buf, size_t n) { snprintf(buf, n, "ppo_world built without CUDA"); }
size_t pw_device_peak_bytes(void) { return 0; }
size_t pw_device_total_bytes(int id) { return (void)id, 0; }
size_t pw_device_free_bytes(int id) { return (void)id, 0; }
#endif
