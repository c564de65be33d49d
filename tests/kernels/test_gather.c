/* test_gather.c: the row gather copies exactly the rows named, in the order named (repeats
 * allowed), and nothing else. */
#include "kref.h"
#include "pw_kernels.h"

int main(void)
{
    enum { R = 9, C = 37, N = 6 };
    unsigned long long rng = 3;
    float *src = kref_randn((size_t)R * C, 1.0, &rng);
    float *dst = kref_alloc((size_t)(N + 1) * C * sizeof *dst);
    const int rows[N] = {8, 0, 3, 3, 7, 1};
    for (int c = 0; c < C; c++) dst[N * C + c] = 42.0f; /* a row past the end stays as it was */
    pw_gather_rows(dst, src, rows, N, C);
    int bad = 0;
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) bad += dst[i * C + c] != src[rows[i] * C + c];
    for (int c = 0; c < C; c++) bad += dst[N * C + c] != 42.0f;
    CHECK(bad == 0, "%d values differ", bad);
    free(src);
    free(dst);
    return pw_test_done("test_gather");
}
