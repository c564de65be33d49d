/* test_cuda_rope.c: the CUDA rotary embeddings against the CPU twin: in place over the q and k
 * heads of qkv rows (v left alone), positions from the row or packed, llama3 inv_freq; the
 * bf16 forms of both (whole rows rounded, bit for bit the in-place result's rounding). */
#include "cutest.h"

static void run(int N, int nheads, int hs, int stride, const int *pos, int llama3,
                unsigned long long *rng)
{
    printf("N=%d nheads=%d hs=%d stride=%d pos=%s llama3=%d\n", N, nheads, hs, stride,
           pos ? "packed" : "row", llama3);
    size_t n = (size_t)N * stride;
    float *inv = cu_host(sizeof(float) * (hs / 2));
    PwRopeScaling s = {1, 8.0, 1.0, 4.0, 8192};
    pw_rope_inv_freq(inv, hs, llama3 ? 500000.0 : 10000.0, llama3 ? &s : NULL);
    float *x = cu_randn(n, 1.0, rng), *g = cu_randn(n, 1.0, rng);
    float *d_x = cu_upload(x, sizeof(float) * n), *d_g = cu_upload(g, sizeof(float) * n);
    float *d_inv = cu_upload(inv, sizeof(float) * (hs / 2));
    int *d_pos = pos ? cu_upload(pos, sizeof(int) * N) : NULL;
    float *d_x0 = cu_upload(x, sizeof(float) * n); /* the unrotated rows, for the bf16 form */
    pw_rope_forward(x, pos, inv, N, nheads, hs, stride);
    pw_rope_forward_cuda(d_x, d_pos, d_inv, N, nheads, hs, stride, 0);
    cu_compare("forward (in place)", d_x, x, n, CU_TOL_F32);
    uint16_t *d_x16 = cu_dev(sizeof(uint16_t) * n);
    cu_poison(d_x16, sizeof(uint16_t) * n);
    pw_rope_forward_bf16_cuda(d_x16, d_x0, d_pos, d_inv, N, nheads, hs, stride, 0);
    cu_compare_bf16("forward (bf16 rows)", d_x16, d_x, n);
    float *d_g0 = cu_upload(g, sizeof(float) * n); /* the untouched gradient, for the bf16 form */
    pw_rope_backward(g, pos, inv, N, nheads, hs, stride);
    pw_rope_backward_cuda(d_g, d_pos, d_inv, N, nheads, hs, stride, 0);
    cu_compare("backward (in place)", d_g, g, n, CU_TOL_F32);
    /* the bf16 form: dx only read, every whole row rounded, bit for bit the in-place result's
     * rounding (the rows' unrotated tail too) */
    uint16_t *d_g16 = cu_dev(sizeof(uint16_t) * n);
    cu_poison(d_g16, sizeof(uint16_t) * n);
    pw_rope_backward_bf16_cuda(d_g16, d_g0, d_pos, d_inv, N, nheads, hs, stride, 0);
    cu_compare_bf16("backward (bf16 rows)", d_g16, d_g, n);
    cu_release();
}

int main(void)
{
    cu_require_gpu("test_cuda_rope");
    unsigned long long rng = 22;
    /* 9 query and 3 key heads of 64 rotated, 3 value heads not */
    run(37, 12, 64, 15 * 64, NULL, 1, &rng);
    int pos[9] = {0, 1, 2, 3, 0, 1, 8191, 8192, 131000};
    run(9, 3, 10, 5 * 10, pos, 0, &rng);
    run(9, 2, 64, 2 * 64 + 3, pos, 1, &rng);
    return pw_test_done("test_cuda_rope");
}
