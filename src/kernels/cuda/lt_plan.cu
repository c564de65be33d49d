/* lt_plan.cu: which algorithm each of cuBLASLt's products runs (lt.cu makes the products). The
 * heuristic's answer costs host time, so it is kept per key (shape, types, alignments,
 * workspace and the switches below), a plan a key; the switches choose how a plan is made: the
 * heuristic's first (the default), the fastest of its candidates and their split-K forms timed
 * on the call's own operands (pw_cuda_set_lt_tune), or a forced split (pw_cuda_set_lt_split, a
 * hook for tests and benchmarks). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <cublasLt.h>

#include "common.cuh"
#include "pw_kernels_cuda.h"
#include "lt.cuh"

#define LT_MAX_PLANS 256

typedef struct LtPlan {
    LtKey key;
    int found; /* 0: cuBLASLt has no algorithm for it */
    cublasLtMatmulAlgo_t algo;
    int timed;            /* candidates timed (0: not timed) */
    float first_ms, best_ms; /* when timed: the heuristic's first and the one kept, a run each */
} LtPlan;

static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;
static LtPlan lt_plans[LT_MAX_PLANS];
static int lt_nplans, lt_next_evict;

/* 1: a shape's first call times the heuristic's first LT_TUNE_CANDIDATES algorithms, and split-K
 * forms of its first LT_SPLIT_BASES (below), on its own operands and keeps the fastest
 * (pw_cuda_set_lt_tune) */
static int lt_tune;
#define LT_TUNE_CANDIDATES 8
#define LT_TUNE_REPS 5

/* Split-K. A decode step's products have 64 to 256 rows: in tiles of 128 x 128, GPT-2's
 * projection back to 768 channels at 256 rows is 12 tiles for 132 SMs, each walking K = 3072
 * alone (the profile by entry: 8 to 16 us a product on an H100, a third of the bandwidth its
 * weights need), and Qwen2.5-0.5B's down-projection 14 tiles walking K = 4864. Split in s parts
 * along K the product is s times as many blocks, their float32 parts summed by a second pass
 * (CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: in the workspace, in float32, in a fixed order, so
 * the same bits run to run). Where the output is float32 (every product of a decode step but
 * GPT-2's MLP with GELU in its epilogue) the parts may instead be added in the output itself
 * (INPLACE: float32 additions in an order counters in the workspace fix, and no second kernel,
 * which each of a decode step's products would add); with a bfloat16 output that would round
 * every partial sum, so it is not tried there. Tuning times these forms beside the heuristic's
 * own; pw_cuda_set_lt_split forces one split (COMPUTE_TYPE) on the heuristic's first where
 * cuBLASLt accepts it (a test and benchmark hook: 0, none, is the default). Whether the
 * heuristic itself chose a split is read from each plan's algorithm and counted
 * (pw_cuda_lt_plans). */
static int lt_split;
static const int lt_splits[] = {2, 4, 8, 16};
#define LT_NSPLITS ((int)(sizeof lt_splits / sizeof lt_splits[0]))
#define LT_SPLIT_BASES 2
#define LT_SPLIT_MAX 16
/* cuBLASLt's split-K has been reported to leave the last K mod 64 values of k out of the sum on
 * H100s (one kernel family whose parts take whole k-steps of 64, so that a tail belongs to
 * none) where K is not a multiple of 64, the parts divide the whole steps evenly and there are
 * more parts than the tail has values; its heuristic chose such splits itself (9 parts at
 * K = 11528). So: where K is not a multiple of 64 the heuristic is asked for algorithms without
 * a split (CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = NONE), and the split forms here are
 * offered only where K is a multiple of 16, at most 16 parts: a tail then has 16 values or
 * more, never fewer than the parts. */
#define LT_SPLIT_K_STEP 16
#define LT_SPLIT_SAFE_K PW_SPLIT_SAFE_K
static unsigned long lt_nplans_made, lt_nplans_split;

extern "C" void pw_cuda_set_lt_tune(int enable) { lt_tune = enable != 0; }
extern "C" int pw_cuda_get_lt_tune(void) { return lt_tune; }
extern "C" void pw_cuda_set_lt_split(int parts)
{
    lt_split = parts > 1 ? (parts < LT_SPLIT_MAX ? parts : LT_SPLIT_MAX) : 0;
}
extern "C" int pw_cuda_get_lt_split(void) { return lt_split; }
extern "C" void pw_cuda_lt_plans(unsigned long *plans, unsigned long *split)
{
    pthread_mutex_lock(&plan_lock);
    if (plans) *plans = lt_nplans_made;
    if (split) *split = lt_nplans_split;
    pthread_mutex_unlock(&plan_lock);
}

static int same_key(const LtKey *a, const LtKey *b)
{
    return a->device == b->device && a->ta == b->ta && a->m == b->m && a->n == b->n &&
           a->k == b->k && a->lda == b->lda && a->ldb == b->ldb && a->ldd == b->ldd &&
           a->ab == b->ab && a->compute == b->compute && a->dtype == b->dtype &&
           a->epi == b->epi && a->bias_type == b->bias_type && a->align_a == b->align_a &&
           a->align_b == b->align_b && a->align_d == b->align_d && a->align_aux == b->align_aux &&
           a->workspace == b->workspace && a->tune == b->tune && a->split == b->split &&
           a->tb == b->tb && a->accumulate == b->accumulate;
}

/* The operands of the call that makes a plan: what tuning runs the candidates on. */
typedef struct LtCall {
    const LtOp *op;
    void *ws;
    size_t ws_bytes;
    cudaStream_t stream;
} LtCall;

/* Of the n candidates, the fastest on the call's own operands (each run once to warm, then
 * LT_TUNE_REPS times between two events; each run writes the same product into d, and the same
 * aux, which the call then writes again; a DGELU reads its aux only): d is the call's output
 * where the call sets it, a scratch of its shape where the call adds to it (a weight gradient's
 * accumulation, which the runs would overwrite); -1 when none runs. The heuristic's first's
 * time (res[0]) and the kept one's into plan, a run each. Under plan_lock, on a stream not being
 * captured. */
static int fastest(cublasLtHandle_t h, const LtDescs *s, const cublasLtMatmulHeuristicResult_t *res,
                   int n, const LtCall *c, void *d, LtPlan *plan)
{
    cudaEvent_t e0, e1;
    PW_CUDA_CHECK(cudaEventCreate(&e0));
    PW_CUDA_CHECK(cudaEventCreate(&e1));
    float alpha = 1.0f, beta = 0.0f, best = 0.0f;
    int pick = -1;
    const LtOp *p = c->op;
    for (int i = 0; i < n; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
        int ok = 1;
        for (int r = 0; r <= LT_TUNE_REPS && ok; r++) {
            if (r == 1) PW_CUDA_CHECK(cudaEventRecord(e0, c->stream));
            ok = cublasLtMatmul(h, s->op, &alpha, p->a, s->a, p->b, s->b, &beta, d, s->d, d,
                                s->d, &res[i].algo, c->ws, c->ws_bytes,
                                c->stream) == CUBLAS_STATUS_SUCCESS;
        }
        if (!ok) continue; /* a candidate that does not run here is not kept */
        PW_CUDA_CHECK(cudaEventRecord(e1, c->stream));
        PW_CUDA_CHECK(cudaEventSynchronize(e1));
        float ms = 0.0f;
        PW_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        plan->timed++;
        if (i == 0) plan->first_ms = ms / LT_TUNE_REPS;
        if (pick < 0 || ms < best) {
            pick = i;
            best = ms;
        }
    }
    PW_CUDA_CHECK(cudaEventDestroy(e0));
    PW_CUDA_CHECK(cudaEventDestroy(e1));
    plan->best_ms = best / LT_TUNE_REPS;
    return pick;
}

/* bytes of a type of D */
static size_t elt_bytes(int dtype) { return dtype == CUDA_R_32F ? 4 : 2; }

/* An int32 attribute of algo's configuration, dflt where it has none. */
static int config_of(const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t a,
                     int dflt)
{
    int32_t v = dflt;
    size_t w = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(algo, a, &v, sizeof v, &w) != CUBLAS_STATUS_SUCCESS)
        return dflt;
    return v;
}

/* The parts along K algo's configuration asks for (1: none). */
static int split_of(const cublasLtMatmulAlgo_t *algo)
{
    int parts = config_of(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, 1);
    return parts > 1 ? parts : 1;
}

/* *out: algo with K in `parts` parts summed by `scheme` (a cublasLtReductionScheme_t, above);
 * 0 where the algorithm has no split-K or not that scheme, cuBLASLt's check refuses the form
 * for this call, or it needs more workspace than ws_bytes. */
static int with_split(cublasLtHandle_t h, const LtDescs *s, const cublasLtMatmulAlgo_t *algo,
                      int parts, uint32_t scheme, size_t ws_bytes,
                      cublasLtMatmulHeuristicResult_t *out)
{
    int32_t can = 0, n = parts;
    uint32_t schemes = 0;
    size_t w = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &can,
                                          sizeof can, &w) != CUBLAS_STATUS_SUCCESS ||
        !can)
        return 0;
    if (cublasLtMatmulAlgoCapGetAttribute(algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK,
                                          &schemes, sizeof schemes,
                                          &w) != CUBLAS_STATUS_SUCCESS ||
        !(schemes & scheme))
        return 0;
    cublasLtMatmulHeuristicResult_t r = {};
    r.algo = *algo;
    if (cublasLtMatmulAlgoConfigSetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &n,
                                             sizeof n) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulAlgoConfigSetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                             &scheme, sizeof scheme) != CUBLAS_STATUS_SUCCESS)
        return 0;
    cublasLtMatmulHeuristicResult_t check = {};
    if (cublasLtMatmulAlgoCheck(h, s->op, s->a, s->b, s->d, s->d, &r.algo, &check) !=
            CUBLAS_STATUS_SUCCESS ||
        check.workspaceSize > ws_bytes)
        return 0;
    r.workspaceSize = check.workspaceSize;
    r.state = CUBLAS_STATUS_SUCCESS;
    *out = r;
    return 1;
}

static cublasStatus_t pref_attr(cublasStatus_t st, cublasLtMatmulPreference_t pref,
                                cublasLtMatmulPreferenceAttributes_t attr, const void *v,
                                size_t n)
{
    return st == CUBLAS_STATUS_SUCCESS ? cublasLtMatmulPreferenceSetAttribute(pref, attr, v, n)
                                       : st;
}

/* A plan for this key: the heuristic's first algorithm, or with tune its candidates and their
 * split-K forms timed on the call's operands, or with key->split that split of its first. */
static LtPlan make_plan(cublasLtHandle_t h, const LtKey *key, const LtDescs *s,
                        const LtCall *call, int tune)
{
    LtPlan plan = {};
    plan.key = *key;
    cublasLtMatmulHeuristicResult_t res[LT_TUNE_CANDIDATES + 2 * LT_SPLIT_BASES * LT_NSPLITS] =
        {};
    const uint32_t sum_apart = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
                   sum_in_place = CUBLASLT_REDUCTION_SCHEME_INPLACE,
                   whole = CUBLASLT_REDUCTION_SCHEME_NONE;
    int nres = 0, want = tune ? LT_TUNE_CANDIDATES : 1;
    uint32_t al[3] = {(uint32_t)key->align_a, (uint32_t)key->align_b, (uint32_t)key->align_d};
    cublasLtMatmulPreference_t pref = NULL;
    cublasStatus_t st = cublasLtMatmulPreferenceCreate(&pref);
    st = pref_attr(st, pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &key->workspace,
                   sizeof key->workspace);
    st = pref_attr(st, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], sizeof al[0]);
    st = pref_attr(st, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], sizeof al[1]);
    st = pref_attr(st, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], sizeof al[2]);
    st = pref_attr(st, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[2], sizeof al[2]);
    if (key->k % LT_SPLIT_SAFE_K) /* no split: LT_SPLIT_SAFE_K above */
        st = pref_attr(st, pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &whole,
                       sizeof whole);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(h, s->op, s->a, s->b, s->d, s->d, pref, want, res,
                                            &nres);
    if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || res[0].state != CUBLAS_STATUS_SUCCESS) nres = 0;
    int n = nres;
    int splittable = key->k % LT_SPLIT_K_STEP == 0;
    if (tune && splittable) /* the split-K forms of the heuristic's first few, beside them */
        for (int b = 0; b < nres && b < LT_SPLIT_BASES; b++)
            for (int j = 0; j < LT_NSPLITS; j++) {
                n += with_split(h, s, &res[b].algo, lt_splits[j], sum_apart, key->workspace,
                                &res[n]);
                if (key->dtype == CUDA_R_32F)
                    n += with_split(h, s, &res[b].algo, lt_splits[j], sum_in_place,
                                    key->workspace, &res[n]);
            }
    else if (nres > 0 && key->split > 1 && splittable)
        (void)with_split(h, s, &res[0].algo, key->split, sum_apart, key->workspace, &res[0]);
    int pick = n > 0 ? 0 : -1;
    /* an accumulating call is timed into a scratch of D's shape: where there is no room for
     * one, it takes the heuristic's first */
    void *d = call->op->d, *scratch = NULL;
    if (tune && n > 1 && key->accumulate) {
        if (cudaMalloc(&scratch, elt_bytes(key->dtype) * (size_t)key->ldd * key->n) !=
            cudaSuccess) {
            (void)cudaGetLastError();
            scratch = NULL;
        }
        d = scratch;
    }
    if (tune && n > 1 && d) pick = fastest(h, s, res, n, call, d, &plan);
    if (scratch) {
        PW_CUDA_CHECK(cudaStreamSynchronize(call->stream)); /* the timing's runs done with it */
        PW_CUDA_CHECK(cudaFree(scratch));
    }
    plan.found = pick >= 0 && res[pick].state == CUBLAS_STATUS_SUCCESS;
    if (plan.found) plan.algo = res[pick].algo;
    return plan;
}

/* the plan kept for key, NULL when none is. Under plan_lock. */
static const LtPlan *kept_plan(const LtKey *key)
{
    for (int i = 0; i < lt_nplans; i++)
        if (same_key(&lt_plans[i].key, key)) return &lt_plans[i];
    return NULL;
}

/* keeps plan, counted; a full table forgets its entries in turn (a run uses a few dozen
 * shapes). Under plan_lock. */
static void keep_plan(const LtPlan *plan)
{
    lt_nplans_made++;
    lt_nplans_split += plan->found && split_of(&plan->algo) > 1;
    int slot = lt_nplans < LT_MAX_PLANS ? lt_nplans++ : lt_next_evict++ % LT_MAX_PLANS;
    lt_plans[slot] = *plan;
}

int lt_choose(cublasLtHandle_t h, LtKey *key, const LtDescs *s, const LtOp *op, void *ws,
              size_t ws_bytes, cudaStream_t stream, cublasLtMatmulAlgo_t *algo)
{
    pthread_mutex_lock(&plan_lock);
    key->tune = lt_tune;
    key->split = lt_tune ? 0 : lt_split;
    const LtPlan *kept = kept_plan(key);
    LtPlan plan;
    if (kept) {
        plan = *kept;
    } else {
        /* a stream being captured cannot be timed: the heuristic's first, this once, unkept,
         * and the shape's next call outside a capture makes the timed plan */
        int tune = key->tune && !pw_cuda_capturing(stream);
        LtCall call = {op, ws, ws_bytes, stream};
        plan = make_plan(h, key, s, &call, tune);
        if (tune == key->tune) keep_plan(&plan);
    }
    int found = plan.found;
    if (found) *algo = plan.algo;
    pthread_mutex_unlock(&plan_lock);
    return found;
}

/* What a GPU run must bring back to turn a timing into a rule: each plan kept, its shape and
 * kind, the algorithm's id, tile, stages and split, and where it was timed the heuristic's
 * first's time against the kept one's. */
extern "C" void pw_cuda_lt_plan_report(FILE *f)
{
    pthread_mutex_lock(&plan_lock);
    fprintf(f, "cuBLASLt plans (%d kept): m x n x k, A and B transposed, D's type, epilogue, "
               "D set or added to; algorithm, tile, stages, K parts; timed: candidates, the "
               "heuristic's first, the kept one\n",
            lt_nplans);
    for (int i = 0; i < lt_nplans; i++) {
        const LtPlan *p = &lt_plans[i];
        const LtKey *k = &p->key;
        fprintf(f, "  %6d x %6d x %6d  %c%c %-4s epi %-3d %-5s", k->m, k->n, k->k,
                k->ta == CUBLAS_OP_T ? 'T' : 'N', k->tb == CUBLAS_OP_T ? 'T' : 'N',
                k->dtype == CUDA_R_32F ? "f32" : "bf16", k->epi, k->accumulate ? "added" : "set");
        if (!p->found) {
            fprintf(f, "  no algorithm\n");
            continue;
        }
        fprintf(f, "  algo %3d tile %3d stages %3d parts %2d", config_of(&p->algo,
                CUBLASLT_ALGO_CONFIG_ID, -1), config_of(&p->algo, CUBLASLT_ALGO_CONFIG_TILE_ID, -1),
                config_of(&p->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, -1), split_of(&p->algo));
        if (p->timed)
            fprintf(f, "  timed %2d: %.4f ms -> %.4f ms (%.2fx)", p->timed, p->first_ms,
                    p->best_ms, p->best_ms > 0.0f ? p->first_ms / p->best_ms : 0.0);
        fprintf(f, "\n");
    }
    pthread_mutex_unlock(&plan_lock);
}

void lt_forget_plans(void)
{
    pthread_mutex_lock(&plan_lock);
    lt_nplans = lt_next_evict = 0;
    pthread_mutex_unlock(&plan_lock);
}
