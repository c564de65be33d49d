/* pw_device.h: which accelerators this process can see. Answers 0 when the CUDA backend was
 * not built, so callers (placement checks, tests that exit 77) need no #ifdef of their own. */
#ifndef PW_DEVICE_H
#define PW_DEVICE_H

#include <stddef.h>
#include <stdio.h>

#include "pw_common.h"

int pw_device_count(void);
/* Why pw_device_count() is 0, in words for an error message ("no GPU found", "no NVIDIA driver
 * found", the driver's and the runtime's CUDA versions where the driver is too old for this
 * build, "ppo_world built without CUDA"). */
void pw_device_why_none(char *buf, size_t n);
/* Whether GPU `id` runs this build's device code (docs/cuda.md, The architectures): 0 where it
 * does (a GPU newer than the build's code gets a one-line notice on stderr, once a process: the
 * driver compiles the PTX at first use); -1 with err naming the GPU, its compute capability, the
 * build's gpu_arch and the option to build with where it does not. Said where a GPU is opened
 * and, for a job, at startup, before any rank reads anything; GPU id is then the process's
 * current device. 0 without the CUDA backend. */
int pw_device_fits(int id, PwErr *err);
/* The PCI address of CUDA device `ordinal` (as the runtime numbers them: after
 * CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER); 0, or -1 where it cannot be asked (no CUDA
 * backend, no driver, no such device). */
int pw_device_pci_id(int ordinal, unsigned *domain, unsigned *bus, unsigned *dev);
/* `ppo_world devices`: the build (CUDA runtime, gpu_arch, NCCL), the driver, and each GPU with
 * whether it runs the build's code, a line each, to f. */
void pw_device_report(FILE *f);
/* The most device memory this process has held (pw_cuda_peak_bytes: the kernel tables' buffers
 * and the scratch pools' high-water marks); 0 without the CUDA backend or before any use. */
size_t pw_device_peak_bytes(void);
/* The memory of GPU `id` in bytes; 0 without the CUDA backend or such a GPU. */
size_t pw_device_total_bytes(int id);
/* The memory of GPU `id` free now, in bytes (what other processes and this one hold taken
 * away); 0 without the CUDA backend or such a GPU. */
size_t pw_device_free_bytes(int id);

#endif
