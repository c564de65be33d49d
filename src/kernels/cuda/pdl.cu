/* pdl.cu: the switch of programmatic dependent launch (pdl.cuh says what it is and the rule its
 * kernels keep) and the count of the launches made so. */
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
