/* gather.c: copy chosen rows of a matrix into a dense one on the CPU, e.g. the last token of
 * each sequence before a head that only needs those. */
#include <string.h>

#include "pw_kernels.h"

void pw_gather_rows(float *dst, const float *src, const int *rows, int n, int C)
{
    for (int i = 0; i < n; i++)
        memcpy(dst + (size_t)i * C, src + (size_t)rows[i] * C, (size_t)C * sizeof(float));
}
