/* lt.cu: the linear layer's forward with its bias added in the GEMM's epilogue, through
 * cuBLASLt (CUBLASLT_EPILOGUE_BIAS). Without it the bias is written into every row of the
 * output by a kernel of its own and the GEMM reads it back (beta = 1): one write and one read
 * of N x OC floats more than the product needs. For GPT-2 124M at B=16, T=1024 that is 11 GB a
 * forward pass, about 3 ms of an H100's bandwidth against a step of about 30 ms at 45% MFU.
 *
 * cuBLASLt asks more of its caller than cublasGemmEx: a workspace (one per stream here, made
 * on the stream's first call), pointer alignments it may rely on (taken from the pointers, so
 * the slices of the model's buffers at any offset are described truly), and an algorithm from
 * its heuristic, which costs host time, so the answer is kept per shape and alignment. Where
 * it has no algorithm (or the bias is not 16-byte aligned, which its epilogue needs), the
 * caller runs its own path; a cuBLASLt call that fails turns the fused path off for the
 * process and says so once, rather than ending a run that the plain path can finish. The output
 * may be bfloat16 (a bf16 model's q, k, v and MLP pre-activation, which it keeps only rounded):
 * the float32 result with its bias, rounded once, without writing the float32 result and
 * reading it back to convert it; the bias then goes in bfloat16 (lt_bias16, below). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <cublasLt.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"

/* NVIDIA's guidance for Hopper's cuBLASLt workspace */
#define LT_WORKSPACE_BYTES ((size_t)32 << 20)
#define LT_MAX_DEVICES 64
#define LT_MAX_STREAMS 64
#define LT_MAX_PLANS 256

typedef struct LtKey {
    int device, N, C, OC;
    int ab, compute, dtype;       /* cudaDataType_t, cublasComputeType_t, the output's type */
    int bias_type;                /* cudaDataType_t of the bias */
    int align_inp, align_w, align_out;
    size_t workspace;
} LtKey;

typedef struct LtPlan {
    LtKey key;
    int found; /* 0: cuBLASLt has no algorithm for it */
    cublasLtMatmulAlgo_t algo;
} LtPlan;

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
static LtPlan lt_plans[LT_MAX_PLANS];
static int lt_nplans, lt_next_evict;
static size_t lt_workspace_total, lt_workspace_peak;
/* lt_broken[0]: a float32-output call failed, [1]: a bfloat16-output one (each turns off its
 * own kind only) */
static int lt_enabled = 1, lt_broken[2];
static unsigned long lt_fused, lt_unfused;

/* 1: a shape's first call times the heuristic's first LT_TUNE_CANDIDATES algorithms on its own
 * operands and keeps the fastest (pw_cuda_set_lt_tune) */
static int lt_tune;
#define LT_TUNE_CANDIDATES 8
#define LT_TUNE_REPS 3

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

extern "C" void pw_cuda_set_lt_tune(int enable) { lt_tune = enable != 0; }
extern "C" int pw_cuda_get_lt_tune(void) { return lt_tune; }
extern "C" void pw_cuda_set_epilogue(int enable) { lt_enabled = enable != 0; }
extern "C" int pw_cuda_get_epilogue(void) { return lt_enabled && !lt_broken[0]; }
extern "C" void pw_cuda_epilogue_calls(unsigned long *fused, unsigned long *unfused)
{
    pthread_mutex_lock(&lt_lock);
    if (fused) *fused = lt_fused;
    if (unfused) *unfused = lt_unfused;
    pthread_mutex_unlock(&lt_lock);
}

/* the largest power of two up to 256 that divides the address: what cuBLASLt may assume */
static int alignment(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    int k = 256;
    while (k > 1 && a % (uintptr_t)k) k >>= 1;
    return k;
}

static int same_key(const LtKey *a, const LtKey *b)
{
    return a->device == b->device && a->N == b->N && a->C == b->C && a->OC == b->OC &&
           a->ab == b->ab && a->compute == b->compute && a->dtype == b->dtype &&
           a->bias_type == b->bias_type &&
           a->align_inp == b->align_inp &&
           a->align_w == b->align_w && a->align_out == b->align_out &&
           a->workspace == b->workspace;
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

/* The descriptors of out^T(OC,N) = W^T(OC,C) . inp(C,N) + bias (column-major views, as in
 * matmul.cu), made per call: they are cheap host structures and the bias pointer is per call. */
typedef struct LtDescs {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
} LtDescs;

static cublasStatus_t make_descs(LtDescs *s, const void *bias, cudaDataType_t bt, int N, int C,
                                 int OC, cudaDataType_t ab, cublasComputeType_t compute,
                                 cudaDataType_t dtype)
{
    cublasStatus_t st = cublasLtMatmulDescCreate(&s->op, compute, CUDA_R_32F);
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(s->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(s->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(s->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                            sizeof epi);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(s->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                            sizeof bias);
    /* the bias's own type, float32 unless lt_bias16 rounded it (its default is the output's) */
    if (st == CUBLAS_STATUS_SUCCESS && dtype != CUDA_R_32F)
        st = cublasLtMatmulDescSetAttribute(s->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt,
                                            sizeof bt);
    /* the stored matrices: W is (C, OC) column-major, inp (C, N), out (OC, N) */
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&s->a, ab, C, OC, C);
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&s->b, ab, C, N, C);
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&s->d, dtype, OC, N, OC);
    return st;
}

static void free_descs(LtDescs *s)
{
    if (s->d) (void)cublasLtMatrixLayoutDestroy(s->d);
    if (s->b) (void)cublasLtMatrixLayoutDestroy(s->b);
    if (s->a) (void)cublasLtMatrixLayoutDestroy(s->a);
    if (s->op) (void)cublasLtMatmulDescDestroy(s->op);
}

/* The operands of the call that makes a plan: what tuning runs the candidates on. */
typedef struct LtCall {
    const void *weight, *inp;
    void *out, *ws;
    size_t ws_bytes;
    cudaStream_t stream;
} LtCall;

/* Of the heuristic's n candidates, the fastest on the call's own operands (each run once to
 * warm, then LT_TUNE_REPS times between two events; each run writes the same product into out,
 * which the call then writes again); -1 when none runs. A stream being captured into a graph
 * cannot be timed: 0, the heuristic's first. Under lt_lock. */
static int fastest(cublasLtHandle_t h, const LtDescs *s, const cublasLtMatmulHeuristicResult_t *res,
                   int n, const LtCall *c)
{
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(c->stream, &cs) != cudaSuccess ||
        cs != cudaStreamCaptureStatusNone) {
        (void)cudaGetLastError();
        return 0;
    }
    cudaEvent_t e0, e1;
    PW_CUDA_CHECK(cudaEventCreate(&e0));
    PW_CUDA_CHECK(cudaEventCreate(&e1));
    float alpha = 1.0f, beta = 0.0f, best = 0.0f;
    int pick = -1;
    for (int i = 0; i < n; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
        int ok = 1;
        for (int r = 0; r <= LT_TUNE_REPS && ok; r++) {
            if (r == 1) PW_CUDA_CHECK(cudaEventRecord(e0, c->stream));
            ok = cublasLtMatmul(h, s->op, &alpha, c->weight, s->a, c->inp, s->b, &beta, c->out,
                                s->d, c->out, s->d, &res[i].algo, c->ws, c->ws_bytes,
                                c->stream) == CUBLAS_STATUS_SUCCESS;
        }
        if (!ok) continue; /* a candidate that does not run here is not kept */
        PW_CUDA_CHECK(cudaEventRecord(e1, c->stream));
        PW_CUDA_CHECK(cudaEventSynchronize(e1));
        float ms = 0.0f;
        PW_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (pick < 0 || ms < best) {
            pick = i;
            best = ms;
        }
    }
    PW_CUDA_CHECK(cudaEventDestroy(e0));
    PW_CUDA_CHECK(cudaEventDestroy(e1));
    return pick;
}

/* the algorithm for this key, asking the heuristic the first time (and, with lt_tune, timing
 * its candidates on the call's operands). Under lt_lock. */
static const LtPlan *plan_for(cublasLtHandle_t h, const LtKey *key, const LtDescs *s,
                              const LtCall *call)
{
    for (int i = 0; i < lt_nplans; i++)
        if (same_key(&lt_plans[i].key, key)) return &lt_plans[i];
    LtPlan plan = {};
    plan.key = *key;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res[LT_TUNE_CANDIDATES] = {};
    int nres = 0, want = lt_tune ? LT_TUNE_CANDIDATES : 1;
    uint32_t al[3] = {(uint32_t)key->align_w, (uint32_t)key->align_inp,
                      (uint32_t)key->align_out};
    cublasStatus_t st = cublasLtMatmulPreferenceCreate(&pref);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &key->workspace, sizeof key->workspace);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], sizeof al[0]);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], sizeof al[1]);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], sizeof al[2]);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[2], sizeof al[2]);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(h, s->op, s->a, s->b, s->d, s->d, pref, want, res,
                                            &nres);
    if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
    int pick = st == CUBLAS_STATUS_SUCCESS && nres > 0 ? 0 : -1;
    if (pick == 0 && nres > 1) pick = fastest(h, s, res, nres, call);
    plan.found = pick >= 0 && res[pick].state == CUBLAS_STATUS_SUCCESS;
    if (plan.found) plan.algo = res[pick].algo;
    /* a full table forgets its entries in turn: a run uses a few dozen shapes */
    int slot = lt_nplans < LT_MAX_PLANS ? lt_nplans++ : lt_next_evict++ % LT_MAX_PLANS;
    lt_plans[slot] = plan;
    return &lt_plans[slot];
}

int pw_lt_linear_forward(void *out, cudaDataType_t dtype, const void *inp, const void *weight,
                         const float *bias, int N, int C, int OC, cudaDataType_t ab,
                         cublasComputeType_t compute, cudaStream_t stream)
{
    int kind = dtype != CUDA_R_32F;
    if (!lt_enabled || lt_broken[kind] || !bias || alignment(bias) < 16 || N <= 0 || OC <= 0 ||
        C <= 0) {
        pthread_mutex_lock(&lt_lock);
        lt_unfused += bias != NULL;
        pthread_mutex_unlock(&lt_lock);
        return 0;
    }
    int device = 0;
    PW_CUDA_CHECK(cudaGetDevice(&device));
    pthread_mutex_lock(&lt_lock);
    void *ws = NULL;
    size_t ws_bytes = 0;
    pw_bf16 *bias16 = NULL;
    cublasLtHandle_t h = handle_and_workspace(device, stream, &ws, &ws_bytes, &bias16);
    pthread_mutex_unlock(&lt_lock);
    /* the bias rounded to bfloat16 (lt_bias16) into the stream's buffer, in stream order */
    const void *b = bias;
    cudaDataType_t bt = CUDA_R_32F;
    if (kind && lt_bias16 && bias16 && OC <= LT_BIAS16_MAX) {
        pw_f32_to_bf16_cuda(bias16, bias, (size_t)OC, stream);
        b = bias16;
        bt = CUDA_R_16BF;
    }
    LtDescs s = {};
    cublasStatus_t st = make_descs(&s, b, bt, N, C, OC, ab, compute, dtype);
    pthread_mutex_lock(&lt_lock);
    LtKey key = {device, N, C, OC, (int)ab, (int)compute, (int)dtype, (int)bt, alignment(inp),
                 alignment(weight), alignment(out), ws_bytes};
    LtCall call = {weight, inp, out, ws, ws_bytes, stream};
    const LtPlan *plan = st == CUBLAS_STATUS_SUCCESS ? plan_for(h, &key, &s, &call) : NULL;
    cublasLtMatmulAlgo_t algo = {};
    int found = plan && plan->found;
    if (found) algo = plan->algo;
    pthread_mutex_unlock(&lt_lock);
    if (found) {
        float alpha = 1.0f, beta = 0.0f;
        st = cublasLtMatmul(h, s.op, &alpha, weight, s.a, inp, s.b, &beta, out, s.d, out, s.d,
                            &algo, ws, ws_bytes, stream);
        if (st != CUBLAS_STATUS_SUCCESS) {
            found = 0;
            pthread_mutex_lock(&lt_lock);
            if (!lt_broken[kind])
                fprintf(stderr,
                        "ppo_world: cuBLASLt matmul failed (%s, %d); the bias epilogue with a "
                        "%s output is off for this process, %s\n",
                        cublasGetStatusString(st), (int)st, kind ? "bfloat16" : "float32",
                        kind ? "the product is made in float32 and rounded by a kernel"
                             : "the bias is added by its own kernel");
            lt_broken[kind] = 1;
            pthread_mutex_unlock(&lt_lock);
        }
    }
    free_descs(&s);
    pthread_mutex_lock(&lt_lock);
    if (found)
        lt_fused++;
    else
        lt_unfused++;
    pthread_mutex_unlock(&lt_lock);
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
    lt_nplans = lt_next_evict = 0; /* an algorithm belongs to the handles it was found with */
    PW_CUDA_CHECK(cudaSetDevice(current));
    pthread_mutex_unlock(&lt_lock);
}
