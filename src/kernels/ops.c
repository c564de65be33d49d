/* ops.c: the choice of kernel table for a device: the CPU table always, a CUDA table when the
 * CUDA backend was built and the GPU exists. */
#include "pw_ops.h"

#ifdef PW_HAVE_CUDA
PwOps *pw_ops_cuda_open(int device_id, PwErr *err);
void pw_ops_cuda_close(PwOps *o);
#endif

const PwOps *pw_ops_open(PwDevice device, int device_id, PwErr *err)
{
    if (device == PW_DEVICE_CPU) return pw_ops_cpu();
#ifdef PW_HAVE_CUDA
    return pw_ops_cuda_open(device_id, err);
#else
    pw_errf(err, "cuda:%d: this ppo_world was built without the CUDA backend (nvcc was not "
                 "found at build time)", device_id);
    return NULL;
#endif
}

void pw_ops_close(const PwOps *o)
{
    if (!o || o->device == PW_DEVICE_CPU) return;
#ifdef PW_HAVE_CUDA
    pw_ops_cuda_close((PwOps *)o);
#endif
}
