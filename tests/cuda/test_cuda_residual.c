/* test_cuda_residual.c: the CUDA residual against the CPU twin: forward into a poisoned output,
 * backward accumulating into both, either or neither gradient. */
#include "cutest.h"

int main(void)
{
    cu_require_gpu("test_cuda_residual");
    unsigned long long rng = 16;
    size_t N = 1000003;
    float *a = cu_randn(N, 1.0, &rng), *b = cu_randn(N, 1.0, &rng), *dout = cu_randn(N, 1.0, &rng);
    float *da0 = cu_randn(N, 1.0, &rng), *db0 = cu_randn(N, 1.0, &rng);
    float *out = cu_host(sizeof(float) * N);
    pw_residual_forward(out, a, b, N);
    float *d_a = cu_upload(a, sizeof(float) * N), *d_b = cu_upload(b, sizeof(float) * N);
    float *d_dout = cu_upload(dout, sizeof(float) * N), *d_out = cu_dev(sizeof(float) * N);
    cu_poison(d_out, sizeof(float) * N);
    pw_residual_forward_cuda(d_out, d_a, d_b, N, 0);
    cu_compare("forward", d_out, out, N, CU_TOL_F32);
    for (int sel = 0; sel < 4; sel++) {
        float *da = cu_copy(da0, N), *db = cu_copy(db0, N);
        float *d_da = cu_upload(da0, sizeof(float) * N), *d_db = cu_upload(db0, sizeof(float) * N);
        pw_residual_backward(sel & 1 ? da : NULL, sel & 2 ? db : NULL, dout, N);
        pw_residual_backward_cuda(sel & 1 ? d_da : NULL, sel & 2 ? d_db : NULL, d_dout, N, 0);
        cu_compare("backward da (+=)", d_da, da, N, CU_TOL_F32);
        cu_compare("backward db (+=)", d_db, db, N, CU_TOL_F32);
    }
    cu_release();
    return pw_test_done("test_cuda_residual");
}
