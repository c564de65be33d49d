/* pw_gpu_arch.h: whether this build's device code runs on a GPU of a given compute capability,
 * said before any kernel is launched (docs/cuda.md, Build: the architectures). Plain C with no
 * CUDA in it, so that the CPU suite tests every case (tests/kernels/test_gpu_arch.c). */
#ifndef PW_GPU_ARCH_H
#define PW_GPU_ARCH_H

#include <stddef.h>

#include "pw_common.h"

/* How a device of compute capability major.minor runs code built for `archs`, meson's gpu_arch
 * as a list ("90", "80,90"): machine code for each (90 built as sm_90a, which runs on 9.0
 * alone; any other for major.y on major.z, z >= y) and PTX for the highest, which the driver
 * compiles at first use for a newer device. */
typedef enum {
    PW_ARCH_NATIVE, /* machine code for this device */
    PW_ARCH_JIT,    /* the PTX only: the driver compiles it at first use */
    PW_ARCH_NONE,   /* nothing of this build runs on the device */
    PW_ARCH_BAD     /* archs is not a list of compute capabilities */
} PwArchFit;

/* The fit of `archs` for major.minor; *code gets the architecture that runs (90, or the PTX's),
 * 0 where none does. */
PwArchFit pw_gpu_arch_fit(const char *archs, int major, int minor, int *code);

/* The check made where a GPU is opened (pw_ops_cuda_open): 0 where the code runs, with a
 * one-line notice in `notice` (empty where there is nothing to say) for the PTX case; -1 with
 * the error in `err` where it does not, naming the device (`where`, e.g. "cuda:0", and `name`),
 * its compute capability, the build's gpu_arch and the option that would build for it. */
int pw_gpu_arch_check(const char *archs, const char *where, const char *name, int major,
                      int minor, char *notice, size_t notice_len, PwErr *err);

/* What a build for `archs` holds, in words: "machine code sm_90a, sm_80; PTX compute_90"; "" where
 * archs is not a list. */
void pw_gpu_arch_describe(const char *archs, char *buf, size_t n);

/* The build's gpu_arch (meson.build passes it to the CUDA backend); "" without CUDA. */
const char *pw_gpu_archs(void);

#endif
