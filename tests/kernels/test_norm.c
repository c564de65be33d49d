/* test_norm.c: the pieces of global-norm clipping: a sum of squares accurate to double over
 * many values of mixed size, and a scale that is the float product exactly. */
#include "kref.h"
#include "pw_kernels.h"

int main(void)
{
    enum { N = 100003 };
    unsigned long long rng = 13;
    float *x = kref_randn(N, 1.0, &rng);
    for (int i = 0; i < N; i += 7) x[i] *= 1e-4f; /* small gradients a float sum would drop */
    double want = 0.0;
    for (int i = 0; i < N; i++) want += (double)x[i] * x[i];
    double got = pw_sumsq(x, N);
    double e = fabs(got - want) / want;
    CHECK(e < 1e-12, "sumsq rel err %.3g (double accumulation)", e);
    CHECK(pw_sumsq(x, 0) == 0.0, "sumsq of nothing is 0");

    float *y = kref_copy(x, N);
    const float s = 0.3f;
    pw_scale(y, s, N);
    int exact = 1;
    for (int i = 0; i < N; i++) exact &= y[i] == (float)((double)x[i] * s);
    CHECK(exact, "scale differs from the rounded product");
    printf("sumsq rel err %.2g\n", e);
    free(x); free(y);
    return pw_test_done("test_norm");
}
