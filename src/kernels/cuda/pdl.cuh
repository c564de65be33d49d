/* pdl.cuh: programmatic dependent launch (compute capability 9.0), for the kernels of a decode
 * step. Launched so, a kernel is placed on the GPU while the kernel before it in the stream is
 * still running (its blocks take the SMs as the other's finish) and waits, at its first
 * statement, until that kernel is done and its writes are visible: the gap between one kernel's
 * end and the next one's start goes. Why: a decode step at batch 256 is about a hundred kernels
 * of 10 to 30 us (GPT-2 124M took 2.28 ms a step on an H100, performance.md), and each starts a
 * launch latency after its predecessor ends, inside a CUDA graph too.
 *
 * The rule, the whole of it: a kernel that pw_launch launches calls pw_pdl_enter() as its first
 * statement, before any access of global memory (tests/cuda/test_pdl_launches.sh reads every
 * pw_launch of src/kernels/cuda and checks the kernel it names). pw_pdl_enter first lets the next
 * kernel of the stream be launched (its blocks then wait in their own pw_pdl_enter, which waits
 * for this whole kernel), then waits for the kernel before. A kernel launched plainly, or after
 * something that is not a kernel so launched (a cuBLAS product, a copy), waits for nothing there:
 * the instructions are no-ops then, and compiled out below sm_90. tests/cuda/emu.h defines
 * pw_pdl_enter as nothing. pw_launch launches so only where pw_cuda_set_pdl asked for it and the
 * device runs code built for sm_90 or later (code older than that has no wait in its kernels);
 * else with <<<>>>. */
#ifndef PW_CUDA_PDL_CUH
#define PW_CUDA_PDL_CUH

#include <cuda_runtime.h>

#include "pw_cuda_check.h"

static __device__ __forceinline__ void pw_pdl_enter(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* whether a launch on stream goes as a programmatic dependent (pdl.cu); the count of those
 * that did; and a launch so refused (err, outside a capture): the switch off, said once, the
 * launch to be made plainly (1), or inside a capture, where a refusal has broken it, 0 */
int pw_pdl_usable(cudaStream_t stream);
void pw_pdl_launched(void);
int pw_pdl_refused(cudaError_t err, cudaStream_t stream);

/* kernel<<<grid, block, smem, stream>>>(args...), as a programmatic dependent where
 * pw_pdl_usable says (and plainly where the runtime refuses that); the launch's error checked
 * either way */
template <typename... P, typename... A>
static inline void pw_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem,
                             cudaStream_t stream, A... args)
{
    if (!pw_pdl_usable(stream)) {
        kernel<<<grid, block, smem, stream>>>(args...);
        PW_CUDA_CHECK(cudaGetLastError());
        return;
    }
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, args...);
    if (err == cudaSuccess) {
        pw_pdl_launched();
    } else if (pw_pdl_refused(err, stream)) {
        kernel<<<grid, block, smem, stream>>>(args...);
        PW_CUDA_CHECK(cudaGetLastError());
    } else {
        PW_CUDA_CHECK(err);
    }
}

#endif
