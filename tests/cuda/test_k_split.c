/* test_k_split.c: k_split.h's offsets (matmul.cu's gemm runs a product whose k is past a
 * multiple of 64 as the multiple and the tail after it) against whole products: the CPU's BLAS
 * takes the same column-major operands as cuBLAS, so d = op(a) op(b) made whole and made as the
 * first k0 steps, then the tail from k_split.h's offsets added (beta 1), must agree within
 * float32 rounding, for each of the four transpositions, k below, at and past a multiple of the
 * step, and leading dimensions wider than the operands. No GPU needed. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "k_split.h"
#include "pw_test.h"

static float *rnd(size_t n, unsigned *seed)
{
    float *x = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) x[i] = (float)rand_r(seed) / RAND_MAX - 0.5f;
    return x;
}

static void check(int ta, int tb, int m, int n, int k, int step, unsigned *seed)
{
    /* leading dimensions 3 past the rows each stored operand has */
    const int lda = (ta ? k : m) + 3, ldb = (tb ? n : k) + 3, ldd = m + 3;
    const size_t na = (size_t)lda * (ta ? m : k), nb = (size_t)ldb * (tb ? k : n);
    float *a = rnd(na, seed), *b = rnd(nb, seed), *d0 = rnd((size_t)ldd * n, seed);
    float *whole = malloc(sizeof(float) * ldd * n), *cut = malloc(sizeof(float) * ldd * n);
    for (size_t i = 0; i < (size_t)ldd * n; i++) whole[i] = cut[i] = d0[i];
    const CBLAS_TRANSPOSE A = ta ? CblasTrans : CblasNoTrans, B = tb ? CblasTrans : CblasNoTrans;
    cblas_sgemm(CblasColMajor, A, B, m, n, k, 1.0f, a, lda, b, ldb, 1.0f, whole, ldd);
    PwKSplit s = pw_k_split(ta, tb, k, lda, ldb, step);
    CHECK(s.k0 + s.tail == k && s.tail < step && s.k0 % step == 0,
          "k = %d, step %d: k0 %d and tail %d", k, step, s.k0, s.tail);
    if (s.k0) cblas_sgemm(CblasColMajor, A, B, m, n, s.k0, 1.0f, a, lda, b, ldb, 1.0f, cut, ldd);
    if (s.tail)
        cblas_sgemm(CblasColMajor, A, B, m, n, s.tail, 1.0f, a + s.a_off, lda, b + s.b_off, ldb,
                    1.0f, cut, ldd);
    double worst = 0.0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double e = fabs((double)whole[(size_t)j * ldd + i] - cut[(size_t)j * ldd + i]);
            worst = e > worst ? e : worst;
        }
    /* k terms of size below 1/4 each, summed in two orders */
    double tol = 1e-6 * k;
    printf("  %c%c m=%d n=%d k=%d: k0 %d + tail %d, largest difference %.2g\n", ta ? 'T' : 'N',
           tb ? 'T' : 'N', m, n, k, s.k0, s.tail, worst);
    CHECK(worst <= tol, "%c%c k=%d: the cut product differs from the whole by %g", ta ? 'T' : 'N',
          tb ? 'T' : 'N', k, worst);
    free(a), free(b), free(d0), free(whole), free(cut);
}

int main(void)
{
    unsigned seed = 20261130;
    const int ks[4] = {37, 64, 129, 200};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int i = 0; i < 4; i++) check(ta, tb, 13, 9, ks[i], 64, &seed);
    return pw_test_done("k_split");
}
