/* device.cu: the CUDA runtime's view of the GPUs; a machine without a driver or a GPU has 0. */
#include <cuda_runtime.h>

extern "C" int pw_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky "no driver" error */
        return 0;
    }
    return n;
}

extern "C" size_t pw_cuda_device_total_bytes(int id)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, id) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return p.totalGlobalMem;
}
