/* lt.cu: the linear layer's forward with its bias added in the GEMM's epilogue, through
 * cuBLASLt (CUBLASLT_EPILOGUE_BIAS). Without it the bias is written into every row of the
 * output by a kernel of its own and the GEMM reads it back (beta = 1): one write and one read
 * of N x OC floats more than the product needs. For GPT-2 124M at B=16, T=1024 that is 11 GB a
 * forward pass, about 3 ms of an H100's bandwidth against a step of about 30 ms at 45% MFU.
 *
 * cuBLASLt asks more of its caller than cublasGemmEx: a workspace (one per stream here, made
 * on the stream's first call), pointer alignments it may rely on (taken from the pointers, so
 * the slices of the model's buffers at any offset are described truly), and an algorithm from
 * its heuristic, which costs host time, so the answer is kept per shape and alignment (the
 * choice and the plans kept: lt_plan.cu). Where
 * it has no algorithm (or the bias is not 16-byte aligned, which its epilogue needs), the
 * caller runs its own path; a cuBLASLt call that fails turns the fused path off for the
 * process and says so once, rather than ending a run that the plain path can finish. The output
 * may be bfloat16 (a bf16 model's q, k, v and MLP pre-activation, which it keeps only rounded):
 * the float32 result with its bias, rounded once, without writing the float32 result and
 * reading it back to convert it; the bias then goes in bfloat16 (lt_bias16, below). The same
 * machinery serves GPT-2's MLP with GELU in the epilogue (lt_gelu, below): the up-projection
 * with GELU_AUX_BIAS, the down-projection's input gradient with DGELU; and the products (or
 * tails of products) whose reduction length is under PW_SPLIT_SAFE_K, asked for no split-K
 * (matmul.cu), or every product where pw_cuda_set_lt_all asks. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <cublasLt.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "lt.cuh"

/* NVIDIA's guidance for Hopper's cuBLASLt workspace */
#define LT_WORKSPACE_BYTES ((size_t)32 << 20)
#define LT_MAX_DEVICES 64
#define LT_MAX_STREAMS 64

/* The bf16 bias of a stream's products is made in a buffer the stream keeps (lt_bias16): a
 * product's conversion and the product are in stream order, so the next conversion cannot
 * overtake them, and no memory is allocated per call, which inside a captured decode step would
 * put allocation nodes in the graph. Biases longer than this keep float32. */
#define LT_BIAS16_MAX 65536

typedef struct LtStream {
    int device;
    cudaStream_t stream;
    void *workspace;
    pw_bf16 *bias16; /* LT_BIAS16_MAX halves, or NULL (no room) */
} LtStream;

static pthread_mutex_t lt_lock = PTHREAD_MUTEX_INITIALIZER;
static cublasLtHandle_t lt_handles[LT_MAX_DEVICES];
static LtStream lt_streams[LT_MAX_STREAMS];
static int lt_nstreams;
static size_t lt_workspace_total, lt_workspace_peak;
/* lt_broken[LT_F32]: a float32-output bias call failed, [LT_BF16]: a bfloat16-output one,
 * [LT_GELU]: a GELU one (each turns off its own kind only) */
enum { LT_F32, LT_BF16, LT_GELU, LT_KINDS };
static int lt_enabled = 1, lt_broken[LT_KINDS];
static unsigned long lt_fused, lt_unfused, lt_gelu_fused, lt_gelu_unfused;

/* 1 (the default): a bfloat16-output product takes its bias in bfloat16, rounded into a scratch
 * on each call (pw_cuda_set_lt_bias16). cuBLASLt takes a float32 bias with a bfloat16 output,
 * but with a slow kernel: on an H100 GPT-2's MLP product (16384 x 768 -> 3072) took 0.283 ms
 * that way, 273 TFLOP/s, the time of a float32 product plus a conversion, and 0.120 ms (644
 * TFLOP/s) with the bias in bfloat16; the training step went from 28.1% to 30.0% MFU
 * (bench_kernels_cuda, bench_model, one call). The bias rounded moves the output by at most
 * 2^-9 of the bias, within the rounding of the output itself. */
static int lt_bias16 = 1;
extern "C" void pw_cuda_set_lt_bias16(int enable) { lt_bias16 = enable != 0; }
extern "C" int pw_cuda_get_lt_bias16(void) { return lt_bias16; }

/* 1 (the default since an H200 timed it: GPT-2 124M's training step 1.025x, its decode at
 * batch 256 1.03x, docs/performance.md): GPT-2's MLP takes GELU and its gradient in the
 * products' epilogues. 0 (pw_cuda_set_lt_gelu(0)): GELU from a kernel of its own after the
 * up-projection, and its gradient from one after the down-projection's input gradient.
 * GELU_AUX_BIAS writes the activation and, beside it, its input (which the backward reads) in
 * one pass; DGELU multiplies the input gradient by GELU's derivative before it is stored, in
 * bfloat16, so the float32 gradient (N x 4C floats) is neither written nor read back. At GPT-2
 * 124M's B = 16, T = 1024 that is about 0.5 GB a layer less traffic, some 2 ms of an H100's
 * bandwidth in a step of 47. */
static int lt_gelu = 1;
extern "C" void pw_cuda_set_lt_gelu(int enable) { lt_gelu = enable != 0; }
extern "C" int pw_cuda_get_lt_gelu(void) { return lt_gelu; }
/* two of the counters read together, under lt_lock (either destination may be NULL) */
static void counters(const unsigned long *a, const unsigned long *b, unsigned long *to_a,
                     unsigned long *to_b)
{
    pthread_mutex_lock(&lt_lock);
    if (to_a) *to_a = *a;
    if (to_b) *to_b = *b;
    pthread_mutex_unlock(&lt_lock);
}
extern "C" void pw_cuda_gelu_epilogue_calls(unsigned long *fused, unsigned long *unfused)
{
    counters(&lt_gelu_fused, &lt_gelu_unfused, fused, unfused);
}

extern "C" void pw_cuda_set_epilogue(int enable) { lt_enabled = enable != 0; }
extern "C" int pw_cuda_get_epilogue(void) { return lt_enabled && !lt_broken[LT_F32]; }
extern "C" void pw_cuda_epilogue_calls(unsigned long *fused, unsigned long *unfused)
{
    counters(&lt_fused, &lt_unfused, fused, unfused);
}

/* the largest power of two up to 256 that divides the address: what cuBLASLt may assume */
static int alignment(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    int k = 256;
    while (k > 1 && a % (uintptr_t)k) k >>= 1;
    return k;
}

/* the handle of the current device, this stream's workspace (NULL while the stream is being
 * captured and has none yet: the graph's products then run without one) and its bf16 bias
 * buffer (NULL likewise, or without room: the bias stays float32). Under lt_lock. */
static cublasLtHandle_t handle_and_workspace(int device, cudaStream_t stream, void **ws,
                                             size_t *ws_bytes, pw_bf16 **bias16)
{
    if (device >= LT_MAX_DEVICES)
        pw_cuda_fail(__FILE__, __LINE__, "cuBLASLt: device %d beyond the %d this layer keeps",
                     device, LT_MAX_DEVICES);
    if (!lt_handles[device]) PW_CUBLAS_CHECK(cublasLtCreate(&lt_handles[device]));
    *ws = NULL;
    *ws_bytes = 0;
    *bias16 = NULL;
    for (int i = 0; i < lt_nstreams; i++)
        if (lt_streams[i].device == device && lt_streams[i].stream == stream) {
            *ws = lt_streams[i].workspace;
            *ws_bytes = LT_WORKSPACE_BYTES;
            *bias16 = lt_streams[i].bias16;
            return lt_handles[device];
        }
    if (lt_nstreams == LT_MAX_STREAMS) return lt_handles[device]; /* no workspace: still works */
    /* relaxed capture (ops_cuda.c) allows cudaMalloc; the workspace outlives any graph */
    void *p = NULL, *b = NULL;
    if (cudaMalloc(&p, LT_WORKSPACE_BYTES) != cudaSuccess) {
        (void)cudaGetLastError(); /* short of memory: run without a workspace */
        return lt_handles[device];
    }
    if (cudaMalloc(&b, sizeof(pw_bf16) * LT_BIAS16_MAX) != cudaSuccess) {
        (void)cudaGetLastError(); /* the bias stays float32 */
        b = NULL;
    }
    lt_streams[lt_nstreams++] = (LtStream){device, stream, p, (pw_bf16 *)b};
    *bias16 = (pw_bf16 *)b;
    lt_workspace_total += LT_WORKSPACE_BYTES + (b ? sizeof(pw_bf16) * LT_BIAS16_MAX : 0);
    if (lt_workspace_total > lt_workspace_peak) lt_workspace_peak = lt_workspace_total;
    *ws = p;
    *ws_bytes = LT_WORKSPACE_BYTES;
    return lt_handles[device];
}

static cublasStatus_t set_attr(cublasStatus_t st, cublasLtMatmulDesc_t op,
                               cublasLtMatmulDescAttributes_t attr, const void *v, size_t n)
{
    return st == CUBLAS_STATUS_SUCCESS ? cublasLtMatmulDescSetAttribute(op, attr, v, n) : st;
}

static cublasStatus_t make_descs(LtDescs *s, const LtOp *p)
{
    cublasStatus_t st = cublasLtMatmulDescCreate(&s->op, (cublasComputeType_t)p->compute,
                                                 CUDA_R_32F);
    cublasOperation_t ta = (cublasOperation_t)p->ta, tb = (cublasOperation_t)p->tb;
    cublasLtEpilogue_t epi = (cublasLtEpilogue_t)p->epi;
    cudaDataType_t bt = (cudaDataType_t)p->bias_type;
    st = set_attr(st, s->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    st = set_attr(st, s->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    st = set_attr(st, s->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    if (p->bias) {
        st = set_attr(st, s->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p->bias, sizeof p->bias);
        /* the bias's own type, float32 unless lt_bias16 rounded it (its default is D's) */
        if (p->dtype != CUDA_R_32F)
            st = set_attr(st, s->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
    }
    if (p->aux) { /* GELU's input, of D's type (the attribute's default) */
        st = set_attr(st, s->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &p->aux,
                      sizeof p->aux);
        st = set_attr(st, s->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &p->aux_ld,
                      sizeof p->aux_ld);
    }
    int ar = p->ta == CUBLAS_OP_T ? p->k : p->m, ac = p->ta == CUBLAS_OP_T ? p->m : p->k;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&s->a, (cudaDataType_t)p->ab, ar, ac, p->lda);
    int br = p->tb == CUBLAS_OP_T ? p->n : p->k, bc = p->tb == CUBLAS_OP_T ? p->k : p->n;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&s->b, (cudaDataType_t)p->ab, br, bc, p->ldb);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&s->d, (cudaDataType_t)p->dtype, p->m, p->n, p->ldd);
    return st;
}

static void free_descs(LtDescs *s)
{
    if (s->d) (void)cublasLtMatrixLayoutDestroy(s->d);
    if (s->b) (void)cublasLtMatrixLayoutDestroy(s->b);
    if (s->a) (void)cublasLtMatrixLayoutDestroy(s->a);
    if (s->op) (void)cublasLtMatmulDescDestroy(s->op);
}

static const char *const lt_kind_off[LT_KINDS] = {
    "the bias epilogue with a float32 output is off for this process, the bias is added by its "
    "own kernel",
    "the bias epilogue with a bfloat16 output is off for this process, the product is made in "
    "float32 and rounded by a kernel",
    "the GELU epilogues are off for this process, GELU and its gradient run as kernels of their "
    "own"};

/* Queues op on stream, the bias rounded to bfloat16 first where the output is bfloat16 and
 * lt_bias16 asks for it; 1 when queued, 0 (nothing queued) when cuBLASLt has no algorithm or
 * the call failed (which turns kind off for the process, said once). */
static int lt_run(LtOp *p, int kind, cudaStream_t stream)
{
    int device = 0;
    PW_CUDA_CHECK(cudaGetDevice(&device));
    pthread_mutex_lock(&lt_lock);
    void *ws = NULL;
    size_t ws_bytes = 0;
    pw_bf16 *bias16 = NULL;
    cublasLtHandle_t h = handle_and_workspace(device, stream, &ws, &ws_bytes, &bias16);
    pthread_mutex_unlock(&lt_lock);
    /* the bias rounded to bfloat16 (lt_bias16) into the stream's buffer, in stream order */
    if (p->bias && p->dtype != CUDA_R_32F && lt_bias16 && bias16 && p->m <= LT_BIAS16_MAX) {
        pw_f32_to_bf16_cuda(bias16, (const float *)p->bias, (size_t)p->m, stream);
        p->bias = bias16;
        p->bias_type = CUDA_R_16BF;
    }
    LtDescs s = {};
    cublasStatus_t st = make_descs(&s, p);
    LtKey key = {};
    key.device = device;
    key.ta = p->ta;
    key.m = p->m;
    key.n = p->n;
    key.k = p->k;
    key.lda = p->lda;
    key.ldb = p->ldb;
    key.ldd = p->ldd;
    key.ab = p->ab;
    key.compute = p->compute;
    key.dtype = p->dtype;
    key.epi = p->epi;
    key.bias_type = p->bias ? p->bias_type : -1;
    key.align_a = alignment(p->a);
    key.align_b = alignment(p->b);
    key.align_d = alignment(p->d);
    key.align_aux = p->aux ? alignment(p->aux) : 0;
    key.workspace = ws_bytes;
    key.tb = p->tb;
    key.accumulate = p->beta != 0.0f;
    cublasLtMatmulAlgo_t algo = {};
    int found = st == CUBLAS_STATUS_SUCCESS && lt_choose(h, &key, &s, p, ws, ws_bytes, stream,
                                                         &algo);
    if (found) {
        float alpha = 1.0f, beta = p->beta;
        st = cublasLtMatmul(h, s.op, &alpha, p->a, s.a, p->b, s.b, &beta, p->d, s.d, p->d, s.d,
                            &algo, ws, ws_bytes, stream);
        if (st != CUBLAS_STATUS_SUCCESS) {
            found = 0;
            pthread_mutex_lock(&lt_lock);
            if (!lt_broken[kind])
                fprintf(stderr, "ppo_world: cuBLASLt matmul failed (%s, %d); %s\n",
                        cublasGetStatusString(st), (int)st, lt_kind_off[kind]);
            lt_broken[kind] = 1;
            pthread_mutex_unlock(&lt_lock);
        }
    }
    free_descs(&s);
    return found;
}

/* counts a call that took (fused) or did not take its epilogue */
static void lt_count(int gelu, int fused)
{
    pthread_mutex_lock(&lt_lock);
    if (gelu) {
        lt_gelu_fused += fused != 0;
        lt_gelu_unfused += fused == 0;
    } else {
        lt_fused += fused != 0;
        lt_unfused += fused == 0;
    }
    pthread_mutex_unlock(&lt_lock);
}

/* A product without a bias comes here only while its algorithm is chosen by timing or a split
 * is forced (those are the decode's products of the Llama family, which has no biases), or where
 * C is not a multiple of PW_SPLIT_SAFE_K (no split: lt_plan.cu); cublasGemmEx takes it otherwise
 * (matmul.cu). It is not counted among the epilogue's calls. */
int pw_lt_linear_forward(void *out, cudaDataType_t dtype, const void *inp, const void *weight,
                         const float *bias, int N, int C, int OC, cudaDataType_t ab,
                         cublasComputeType_t compute, cudaStream_t stream)
{
    int kind = dtype != CUDA_R_32F ? LT_BF16 : LT_F32;
    int whole_k = C % PW_SPLIT_SAFE_K == 0; /* else kept from the heuristic's splits (lt_plan.cu) */
    if (!lt_enabled || lt_broken[kind] || (bias && alignment(bias) < 16) ||
        (!bias && !pw_cuda_get_lt_tune() && !pw_cuda_get_lt_split() && whole_k) || N <= 0 ||
        OC <= 0 || C <= 0) {
        if (bias) lt_count(0, 0);
        return 0;
    }
    /* out^T(OC,N) = W^T(OC,C) . inp(C,N) (+ bias): W is (C, OC) column-major */
    LtOp p = {CUBLAS_OP_T, OC, N, C, C, C, OC, (int)ab, (int)compute, (int)dtype,
              bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT, bias, CUDA_R_32F, NULL,
              0, weight, inp, out, CUBLAS_OP_N, 0.0f};
    int found = lt_run(&p, kind, stream);
    if (bias) lt_count(0, found);
    return found;
}

/* 0 (the default): the products matmul.cu's gemm() makes (the backward's input and weight
 * gradients, a forward without a bias) go to cublasGemmEx, but a k shorter than PW_SPLIT_SAFE_K
 * (a whole product's, or the tail gemm() cuts off a longer one); 1: every one to cuBLASLt first
 * (pw_cuda_set_lt_all). Why try: on an H200 the
 * weight gradients of GPT-2 124M's step ran at 389 (attention projection, 768 x 768) to 563
 * TFLOP/s (MLP, 768 x 3072) where the LM head's reached 831 (performance.md's profile): over
 * K = 16384 rows an output of 36 to 144 tiles of 128 x 128 is one or two waves on 132 SMs, the
 * second mostly idle; split along K it is many. cublasGemmEx offers no split form to choose;
 * cuBLASLt's plans with pw_cuda_set_lt_tune time the heuristic's candidates and their split-K
 * forms (lt_plan.cu), the accumulating ones into a scratch, and pw_cuda_lt_plan_report says
 * per shape what the timing found. */
static int lt_all;
extern "C" void pw_cuda_set_lt_all(int enable) { lt_all = enable != 0; }
extern "C" int pw_cuda_get_lt_all(void) { return lt_all; }

int pw_lt_gemm(int ta, int tb, int m, int n, int k, const void *a, int lda, const void *b,
               int ldb, float beta, float *d, int ldd, cudaDataType_t ab,
               cublasComputeType_t compute, cudaStream_t stream)
{
    if (!lt_enabled || lt_broken[LT_F32] || m <= 0 || n <= 0 || k <= 0) return 0;
    LtOp p = {ta, m, n, k, lda, ldb, ldd, (int)ab, (int)compute, CUDA_R_32F,
              CUBLASLT_EPILOGUE_DEFAULT, NULL, CUDA_R_32F, NULL, 0, a, b, d, tb, beta};
    return lt_run(&p, LT_F32, stream);
}

/* GELU's epilogues: the bfloat16 products of a bf16 model, GELU's input (aux) of OC (forward)
 * or C (backward) rows in column-major terms, its leading dimension a multiple of 8 as cuBLASLt
 * requires */
static int gelu_ok(int rows, const void *aux)
{
    return lt_gelu && lt_enabled && !lt_broken[LT_GELU] && rows % 8 == 0 &&
           (!aux || alignment(aux) >= 16);
}

int pw_lt_gelu_forward(pw_bf16 *out, pw_bf16 *aux, const pw_bf16 *inp, const pw_bf16 *weight,
                       const float *bias, int N, int C, int OC, cudaStream_t stream)
{
    if (N <= 0 || OC <= 0 || C <= 0 || !gelu_ok(OC, aux) || !bias || alignment(bias) < 16) {
        lt_count(1, 0);
        return 0;
    }
    /* as pw_lt_linear_forward, then GELU; with aux, GELU's input written there too */
    LtOp p = {CUBLAS_OP_T, OC, N, C, C, C, OC, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_16BF,
              aux ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_BIAS, bias,
              CUDA_R_32F, aux, OC, weight, inp, out, CUBLAS_OP_N, 0.0f};
    int found = lt_run(&p, LT_GELU, stream);
    lt_count(1, found);
    return found;
}

int pw_lt_dgelu(pw_bf16 *dinp, const pw_bf16 *aux, const pw_bf16 *dout, int ldo,
                const pw_bf16 *weight, int N, int C, int OC, cudaStream_t stream)
{
    if (N <= 0 || OC <= 0 || C <= 0 || !gelu_ok(C, aux) || !aux) {
        lt_count(1, 0);
        return 0;
    }
    /* dinp^T(C,N) = W(C,OC) . dout^T(OC,N), times GELU'(aux) element by element: W as stored
     * (OC rows of C: (C, OC) column-major), dout's rows ldo apart */
    LtOp p = {CUBLAS_OP_N, C, N, OC, C, ldo, C, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_16BF,
              CUBLASLT_EPILOGUE_DGELU, NULL, CUDA_R_32F, (void *)aux, C, weight, dout, dinp,
              CUBLAS_OP_N, 0.0f};
    int found = lt_run(&p, LT_GELU, stream);
    lt_count(1, found);
    return found;
}

extern "C" size_t pw_cuda_epilogue_peak_bytes(void)
{
    pthread_mutex_lock(&lt_lock);
    size_t n = lt_workspace_peak;
    pthread_mutex_unlock(&lt_lock);
    return n;
}

void pw_lt_release(void)
{
    pthread_mutex_lock(&lt_lock);
    int current = 0;
    PW_CUDA_CHECK(cudaGetDevice(&current));
    for (int i = 0; i < lt_nstreams; i++) {
        PW_CUDA_CHECK(cudaSetDevice(lt_streams[i].device));
        PW_CUDA_CHECK(cudaFree(lt_streams[i].workspace));
        PW_CUDA_CHECK(cudaFree(lt_streams[i].bias16)); /* NULL is ignored */
    }
    lt_nstreams = 0;
    lt_workspace_total = 0;
    for (int d = 0; d < LT_MAX_DEVICES; d++)
        if (lt_handles[d]) {
            PW_CUDA_CHECK(cudaSetDevice(d));
            PW_CUBLAS_CHECK(cublasLtDestroy(lt_handles[d]));
            lt_handles[d] = NULL;
        }
    lt_forget_plans(); /* an algorithm belongs to the handles it was found with */
    PW_CUDA_CHECK(cudaSetDevice(current));
    pthread_mutex_unlock(&lt_lock);
}
