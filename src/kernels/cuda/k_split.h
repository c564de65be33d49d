/* k_split.h: a column-major product d (m x n) = op(a) (m x k) . op(b) (k x n) cut along k into
 * its first k0 steps and the rest, for matmul.cu's gemm (which runs the largest multiple of
 * PW_SPLIT_SAFE_K as any product and the tail after it apart: common.cuh says why). Where the
 * rest's operands start, in elements: op(a)'s column k0 is column k0 of a (m x k, lda) when a is
 * not transposed and row k0 of a (k x m) when it is; op(b)'s row k0 is row k0 of b (k x n) when
 * b is not transposed and column k0 of b (n x k, ldb) when it is. Plain C: tests/cuda/
 * test_k_split.c checks it against whole products of the CPU's BLAS, which takes the same
 * column-major operands. */
#ifndef PW_CUDA_K_SPLIT_H
#define PW_CUDA_K_SPLIT_H

#include <stddef.h>

typedef struct PwKSplit {
    int k0, tail;        /* k = k0 + tail, tail < step; k0 0 where k < step */
    size_t a_off, b_off; /* elements from a and b to the tail's operands */
} PwKSplit;

/* trans_a, trans_b: 1 where the operand is transposed (CUBLAS_OP_T) */
static inline PwKSplit pw_k_split(int trans_a, int trans_b, int k, int lda, int ldb, int step)
{
    PwKSplit s;
    s.tail = k % step;
    s.k0 = k - s.tail;
    s.a_off = trans_a ? (size_t)s.k0 : (size_t)s.k0 * (size_t)lda;
    s.b_off = trans_b ? (size_t)s.k0 * (size_t)ldb : (size_t)s.k0;
    return s;
}

#endif
