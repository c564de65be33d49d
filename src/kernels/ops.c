/* ops.c: the choice of kernel table for a device: the CPU table always, a CUDA table when the
 * CUDA backend was built and the GPU exists; either profiled when the environment asks
 * (pw_ops_profile.h). */
#include "pw_ops.h"
#include "pw_ops_profile.h"
#include "profile_internal.h"

#ifdef PW_HAVE_CUDA
PwOps *pw_ops_cuda_open(int device_id, PwErr *err);
void pw_ops_cuda_close(PwOps *o);
#endif

static const PwOps *open_table(PwDevice device, int device_id, PwErr *err)
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

const PwOps *pw_ops_open(PwDevice device, int device_id, PwErr *err)
{
    const PwOps *o = open_table(device, device_id, err);
    if (!o || !pw_ops_profile_wanted()) return o;
    const PwOps *p = pw_ops_profiled(o, err);
    if (!p) pw_ops_close(o);
    return p;
}

void pw_ops_close(const PwOps *o)
{
    if (o && o->inner) { /* a profiled table: its own memory, then the table it timed */
        const PwOps *in = o->inner;
        pw_prof_release(o);
        o = in;
    }
    if (!o || o->device == PW_DEVICE_CPU) return;
#ifdef PW_HAVE_CUDA
    pw_ops_cuda_close((PwOps *)o);
#endif
}
