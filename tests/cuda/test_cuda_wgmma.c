/* test_cuda_wgmma.c: the warpgroup products on the GPU (src/kernels/cuda/wgmma.cu's probe) bit
 * for bit against the reference of wgmma_case.h, each form: what test_wgmma_emu.c checks of the
 * emulator, checked of the hardware, so that where both pass the layouts of wgmma.cuh are the
 * H100's and the emulated kernels built on them compute what the GPU does. On a mismatch the
 * second case (the identity times a position code) prints where each wrong value came from, and
 * the probe is run again with the descriptor's offsets and the slices' step varied (LBO, SBO:
 * the strides wgmma.cuh holds unused and 1024; the step 32 or 2048 bytes), naming those the
 * hardware reads the tile by, if any: what to change in wg_tile.cuh or the kernels' steps.
 * Exits 77 without a GPU or on one that is not compute capability 9.0; on a 9.0 device the
 * products must be there (device code built for sm_90a). */
#include <stdio.h>
#include <stdlib.h>

#include "cutest.h"
#include "pw_test.h"
#include "wgmma_case.h"

/* the probe on the GPU with the given offsets and step, its output on the host */
typedef struct Dev {
    float *d_out;
    const uint16_t *d_a, *d_x;
} Dev;

static void run_at(float *out, int form, int lbo, int sbo, int step, void *ctx)
{
    Dev *d = ctx;
    size_t bytes = sizeof(float) * WG_N * WG_N;
    PW_CUDA_CHECK(cudaMemset(d->d_out, 0xff, bytes));
    pw_cuda_wgmma_probe_at(d->d_out, d->d_a, d->d_x, form, lbo, sbo, step, 0);
    PW_CUDA_CHECK(cudaMemcpy(out, d->d_out, bytes, cudaMemcpyDeviceToHost));
}

int main(void)
{
    cu_require_gpu("cuda_wgmma");
    int major = 0, minor = 0;
    PW_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    PW_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
    if (major != 9 || minor != 0) {
        printf("cuda_wgmma: compute capability %d.%d, the products are 9.0's: skipped\n", major,
               minor);
        return PW_SKIP_CODE;
    }
    CHECK(pw_cuda_wgmma_ok(), "a 9.0 device without the products: device code not sm_90a");
    if (!pw_cuda_wgmma_ok()) return pw_test_done("test_cuda_wgmma");
    static uint16_t a[WG_N * WG_N], x[WG_N * WG_N];
    static float out[WG_N * WG_N], want[WG_N * WG_N];
    size_t nb = sizeof a, nf = sizeof out;
    uint16_t *d_a = NULL, *d_x = NULL;
    float *d_out = NULL;
    PW_CUDA_CHECK(cudaMalloc((void **)&d_a, nb));
    PW_CUDA_CHECK(cudaMalloc((void **)&d_x, nb));
    PW_CUDA_CHECK(cudaMalloc((void **)&d_out, nf));
    for (int where = 0; where < 2; where++) {
        wg_case(a, x, where);
        PW_CUDA_CHECK(cudaMemcpy(d_a, a, nb, cudaMemcpyHostToDevice));
        PW_CUDA_CHECK(cudaMemcpy(d_x, x, nb, cudaMemcpyHostToDevice));
        for (int form = 0; form < 3; form++) {
            PW_CUDA_CHECK(cudaMemset(d_out, 0xff, nf)); /* NaN: a value never written fails */
            CHECK(pw_cuda_wgmma_probe(d_out, d_a, d_x, form, 0), "probe form %d refused", form);
            PW_CUDA_CHECK(cudaMemcpy(out, d_out, nf, cudaMemcpyDeviceToHost));
            wg_reference(want, a, x, form);
            int bad = wg_compare(out, want, form, where);
            CHECK(bad == 0, "probe form %d", form);
            Dev dev = {d_out, d_a, d_x};
            if (bad && !where) wg_search(run_at, &dev, form, want);
        }
    }
    CHECK(!pw_cuda_wgmma_probe(d_out, d_a, d_x, 3, 0), "form 3 taken");
    PW_CUDA_CHECK(cudaFree(d_a));
    PW_CUDA_CHECK(cudaFree(d_x));
    PW_CUDA_CHECK(cudaFree(d_out));
    return pw_test_done("test_cuda_wgmma");
}
