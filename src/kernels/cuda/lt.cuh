/* lt.cuh: what lt.cu (cuBLASLt's products: their descriptions, workspaces and entry points)
 * and lt_plan.cu (the algorithm each product runs: cuBLASLt's heuristic, split-K forms, timing,
 * the plans kept) share. */
#ifndef PW_LT_CUH
#define PW_LT_CUH

#include <stddef.h>
#include <stdint.h>

#include <cublasLt.h>

/* One cuBLASLt product in column-major views (matmul.cu's): D (m x n, ldd) = op(A) (m x k) . B
 * (k x n, ldb), A stored k x m (lda) when transposed, m x k when not; the epilogue adds the bias
 * (bias_type; NULL: none) and / or applies GELU or its gradient with aux (aux_ld; NULL: none) */
typedef struct LtOp {
    int ta; /* cublasOperation_t of A: CUBLAS_OP_T for a forward, CUBLAS_OP_N for an input grad */
    int m, n, k, lda, ldb, ldd;
    int ab, compute, dtype;        /* cudaDataType_t, cublasComputeType_t, D's type */
    int epi;                       /* cublasLtEpilogue_t */
    const void *bias;
    int bias_type;                 /* cudaDataType_t of the bias */
    void *aux;                     /* GELU's input: written by GELU_AUX_BIAS, read by DGELU */
    int64_t aux_ld;
    const void *a, *b;
    void *d;
    int tb;     /* cublasOperation_t of B: CUBLAS_OP_N but for a weight gradient (B stored n x k) */
    float beta; /* 0: D is written; 1: added to (a gradient's accumulation) */
} LtOp;

typedef struct LtKey {
    int device, ta, m, n, k, lda, ldb, ldd;
    int ab, compute, dtype, epi, bias_type;
    int align_a, align_b, align_d, align_aux;
    int tb, accumulate;
    size_t workspace;
    int tune, split; /* the switches a plan was made under: a switch applies to the next call */
} LtKey;

/* The descriptors of one LtOp, made per call: they are cheap host structures and the bias and
 * aux pointers are per call. */
typedef struct LtDescs {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
} LtDescs;

/* The algorithm for op, described by s, on the stream whose workspace is ws (ws_bytes): the
 * plan kept for its key (lt.cu fills the shape, types, alignments and workspace; the switches'
 * fields are filled here), made on the first call by asking cuBLASLt's heuristic (and, with the
 * products timed, by timing its candidates and their split-K forms on op's own operands). 1 with
 * *algo set; 0 when cuBLASLt has no algorithm for it. */
int lt_choose(cublasLtHandle_t h, LtKey *key, const LtDescs *s, const LtOp *op, void *ws,
              size_t ws_bytes, cudaStream_t stream, cublasLtMatmulAlgo_t *algo);
/* forgets every plan: an algorithm belongs to the handles it was found with */
void lt_forget_plans(void);

#endif
