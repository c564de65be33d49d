/* pdl.cu: the switch of programmatic dependent launch (pdl.cuh says what it is and the rule its
 * kernels keep), the count of the launches made so, and what a refusal of one does. */
#include <stdio.h>

#include "common.cuh"
#include "pdl.cuh"
#include "pw_kernels_cuda.h"

static int pdl_on = 0;
static unsigned long pdl_launches = 0;

extern "C" void pw_cuda_set_pdl(int enable) { pdl_on = enable != 0; }
extern "C" int pw_cuda_get_pdl(void) { return pdl_on; }
extern "C" unsigned long pw_cuda_pdl_launches(void)
{
    return __atomic_load_n(&pdl_launches, __ATOMIC_RELAXED);
}

int pw_pdl_usable(cudaStream_t stream) { return pdl_on && pw_cuda_code_arch(stream) >= 900; }

void pw_pdl_launched(void) { __atomic_fetch_add(&pdl_launches, 1, __ATOMIC_RELAXED); }

/* A runtime or driver that refuses the attribute (an error returned by the launch, not one of
 * the kernel's) leaves the decode as it was without it: outside a capture the error is cleared,
 * the switch turned off for the process and the kernel launched plainly; inside one, the refused
 * launch has broken the capture, which the caller's check then reports (a decode launches a step
 * before it captures one, so a refusal is met there first). */
int pw_pdl_refused(cudaError_t err, cudaStream_t stream)
{
    if (pw_cuda_capturing(stream)) return 0;
    (void)cudaGetLastError();
    if (__atomic_exchange_n(&pdl_on, 0, __ATOMIC_RELAXED))
        fprintf(stderr, "ppo_world: programmatic dependent launch refused (%s); launching "
                        "plainly from now on\n", cudaGetErrorString(err));
    return 1;
}
