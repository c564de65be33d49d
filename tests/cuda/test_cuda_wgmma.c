/* test_cuda_wgmma.c: the warpgroup products on the GPU (src/kernels/cuda/wgmma.cu's probe) bit
 * for bit against the reference of wgmma_case.h, each form: what test_wgmma_emu.c checks of the
 * emulator, checked of the hardware, so that where both pass the layouts of wgmma.cuh are the
 * H100's and the emulated kernels built on them compute what the GPU does. On a mismatch the
 * second case (the identity times a position code) prints where each wrong value came from, and
 * the probe is run again with the descriptor's offsets and the slices' step varied (LBO, SBO:
 * the strides wgmma.cuh holds unused and 1024; the step 32 or 2048 bytes), naming those the
 * hardware reads the tile by, if any: what to change in wg_tile.cuh or the kernels' steps.
 * Exits 77 without a GPU or on one that is not compute capability 9.0; on a 9.0 device the
 * products must be there (device code built for sm_90a). First of all, before anything has asked
 * the device whether it runs them: an attention call with them switched on, made while its stream
 * is being captured into a graph, takes mma.sync and leaves the capture whole (asking would have
 * broken it: pw_wgmma_usable). */
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

/* The attention with the warpgroup kernels on, its first call inside a stream capture: the
 * capture ends cleanly and the call did not take them (the device not asked yet) */
static void first_call_captured(void)
{
    enum { B = 1, T = 64, NH = 1, W = 3 * 64 };
    uint16_t *d_qkv = NULL;
    float *d_lse = NULL;
    pw_bf16 *d_out16 = NULL;
    PW_CUDA_CHECK(cudaMalloc((void **)&d_qkv, sizeof(uint16_t) * B * T * W));
    PW_CUDA_CHECK(cudaMemset(d_qkv, 0, sizeof(uint16_t) * B * T * W));
    PW_CUDA_CHECK(cudaMalloc((void **)&d_lse, sizeof(float) * B * NH * T));
    PW_CUDA_CHECK(cudaMalloc((void **)&d_out16, sizeof(pw_bf16) * B * T * 64));
    cudaStream_t st;
    PW_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    unsigned long c0 = pw_cuda_flash_wgmma_calls();
    pw_cuda_set_flash_wgmma(1);
    PW_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
    pw_attention_gqa_forward_bf16_cuda(NULL, d_out16, d_lse, d_qkv, NULL, B, T, NH, NH, 64, st);
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(st, &graph);
    pw_cuda_set_flash_wgmma(0);
    CHECK(e == cudaSuccess, "a first call in a capture broke it: %s", cudaGetErrorString(e));
    CHECK(pw_cuda_flash_wgmma_calls() == c0, "a first call in a capture took the warpgroup "
          "kernels before the device was asked");
    printf("  first call in a capture: %s, warpgroup kernels taken %lu times\n",
           e == cudaSuccess ? "capture whole" : "capture broken", pw_cuda_flash_wgmma_calls() - c0);
    if (graph) PW_CUDA_CHECK(cudaGraphDestroy(graph));
    PW_CUDA_CHECK(cudaStreamDestroy(st));
    PW_CUDA_CHECK(cudaFree(d_qkv));
    PW_CUDA_CHECK(cudaFree(d_lse));
    PW_CUDA_CHECK(cudaFree(d_out16));
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
    first_call_captured();
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
