/* flash_kernels.cuh: fused causal attention with a key padding mask (forward, and backward as two
 * kernels), grouped-query, float32 throughout; no T x T matrix is ever written, not even a tile
 * of it: each query's scores live in a column of shared memory for one tile of keys at a time
 * (an online softmax), and the backward recomputes them from the forward's log-sum-exp. The semantics are
 * pw_attention_gqa_forward / _backward's (cpu/attention.c), the layout theirs: qkv rows of
 * W = (NH + 2 NKV) hs floats, [q heads | k heads | v heads], out (B,T,NH hs), lse (B,NH,T).
 *
 * The kernels are written in the C subset of CUDA (no templates, no references, no warp
 * intrinsics: threads of a block meet only at __syncthreads), so that a test can compile this
 * very file as C on the host and run it under tests/cuda/emu.h against the CPU kernel; that is
 * how their logic is checked on machines without a GPU. What must come from the includer:
 * blockIdx, threadIdx, __syncthreads, __global__, __device__, __shared__, __launch_bounds__,
 * PW_UNROLL (unroll the next loop), PW_UNROLL_BY(n) (unroll it n times) and FLASH_HS.
 *
 * FLASH_HS is the head size the kernels are compiled for (32, 64 or 128; a head of hs <= FLASH_HS
 * floats runs in the kernels of the smallest bucket that holds it, the rest of the bucket being
 * zeros): flash.cuh includes this file once per bucket, and every kernel's name ends in it.
 * Per-thread arrays of FLASH_HS floats are indexed by unrolled loops only, so they stay in
 * registers. Loops over the keys of a tile are unrolled a few times only (PW_UNROLL_BY): a full
 * unroll nested around a full unroll over FLASH_HS made nvcc's front end take 3 minutes for this
 * file and the 128 bucket's dq kernel spill 40 KB (now 8 s in all and 5 KB), for no registers
 * gained, and it is why the forward keeps its tile's scores in shared memory, not in an array
 * indexed by the key.
 *
 * Work split, one thread per row throughout (no cross-thread reductions, so nothing but
 * barriers to emulate and every sum in a fixed order, bit-reproducible):
 *  - forward (grid ceil(T/FLASH_BQ) x NH x B, FLASH_BQ threads): thread = query t of head h;
 *    tiles of FLASH_BK keys and values go through shared memory; per tile the thread's scores
 *    into its column of shared memory, one rescale of its running sum and output, then the tile's values.
 *  - dq (same grid): two sweeps over the keys of query t: the first sums D = sum_s P dP (the
 *    CPU's rowsum(P * dP), written to `drow` for the next kernel), the second adds
 *    dS k = scale P (dP - D) k into dq.
 *  - dkv (grid ceil(T/FLASH_BKV) x NKV x B, FLASH_BKV threads): thread = key s of key/value
 *    head kv; over the G query heads of the group and the queries t >= s in tiles of FLASH_BQ2
 *    (q, dout, lse, D through shared memory) it adds dS^T q into dk and P^T dout into dv. Each
 *    gradient element has one writer: no atomics, and dk and dv take the whole group's sum.
 * The backward costs about twice flash-attention-2's arithmetic (D and P recomputed, once more
 * in dkv), the price of having no atomics and no forward output to read D from; it is the
 * float32 path, whose first duty is to match the CPU to 1e-5. */

#include "flash_common.cuh"

#define FLASH_FN(name) FLASH_CAT(pw_flash_##name, FLASH_HS)

/* Tile [k0, k0 + FLASH_BK) of keys and values into shared memory, with each key's mask; zeros
 * past T, past hs and at padding keys (whose probability is 0, and 0 * NaN would be NaN: what a
 * padding position holds never reaches a result). Called by all FLASH_BQ threads between
 * barriers. */
typedef struct FLASH_FN(KVTile) {
    float k[FLASH_BK][FLASH_HS], v[FLASH_BK][FLASH_HS];
    int m[FLASH_BK];
} FLASH_FN(KVTile);

static __device__ __forceinline__ void FLASH_FN(load_kv)(FLASH_FN(KVTile) * tile, FlashHead f,
                                                         const int *m, int k0, int T, int hs)
{
    float(*ks)[FLASH_HS] = tile->k, (*vs)[FLASH_HS] = tile->v;
    int *km = tile->m;
    for (int i = threadIdx.x; i < FLASH_BK * FLASH_HS; i += FLASH_BQ) {
        int j = i / FLASH_HS, d = i % FLASH_HS, s = k0 + j;
        int ok = s < T && d < hs && flash_real(m, s);
        ks[j][d] = ok ? f.k[(size_t)s * f.W + d] : 0.0f;
        vs[j][d] = ok ? f.v[(size_t)s * f.W + d] : 0.0f;
    }
    if (threadIdx.x < FLASH_BK) {
        int s = k0 + (int)threadIdx.x;
        km[threadIdx.x] = s < T && flash_real(m, s);
    }
}

__global__ void __launch_bounds__(FLASH_BQ)
    FLASH_FN(fwd)(float *out, float *lse, const float *qkv, const int *mask, int T, int NH,
                  int NKV, int hs, float scale)
{
    __shared__ FLASH_FN(KVTile) tile;
    float(*ks)[FLASH_HS] = tile.k, (*vs)[FLASH_HS] = tile.v;
    const int *km = tile.m;
    __shared__ float sc[FLASH_BK][FLASH_BQ]; /* the tile's scores, a column per thread */
    int me = threadIdx.x;
    FlashQuery fq = flash_query(qkv, mask, T, NH, NKV, hs);
    int b = fq.b, h = fq.h, t = fq.t, active = fq.active;

    float q[FLASH_HS], acc[FLASH_HS];
    PW_UNROLL
    for (int d = 0; d < FLASH_HS; d++) {
        q[d] = (active && d < hs) ? fq.f.q[(size_t)t * fq.f.W + d] * scale : 0.0f;
        acc[d] = 0.0f;
    }
    float mx = -INFINITY, l = 0.0f; /* running max and sum of exp(score - mx) */
    for (int k0 = 0; k0 < fq.kend; k0 += FLASH_BK) {
        FLASH_FN(load_kv)(&tile, fq.f, fq.m, k0, T, hs);
        __syncthreads();
        if (active && k0 <= t) {
            float tmax = mx;
            PW_UNROLL_BY(4)
            for (int j = 0; j < FLASH_BK; j++) {
                float x = 0.0f;
                PW_UNROLL
                for (int d = 0; d < FLASH_HS; d++) x += q[d] * ks[j][d];
                x = (k0 + j <= t && km[j]) ? x : -INFINITY;
                sc[j][me] = x;
                tmax = fmaxf(tmax, x);
            }
            if (tmax > -INFINITY) {
                float c = expf(mx - tmax); /* 0 on the first real tile (mx = -inf) */
                l *= c;
                PW_UNROLL
                for (int d = 0; d < FLASH_HS; d++) acc[d] *= c;
                PW_UNROLL_BY(2)
                for (int j = 0; j < FLASH_BK; j++) {
                    float p = sc[j][me] > -INFINITY ? expf(sc[j][me] - tmax) : 0.0f;
                    l += p;
                    PW_UNROLL
                    for (int d = 0; d < FLASH_HS; d++) acc[d] += p * vs[j][d];
                }
                mx = tmax;
            }
        }
        __syncthreads();
    }
    if (t >= T) return;
    /* l >= 1 for a real query: its own key is real and at the max or below it */
    float inv = active ? 1.0f / l : 0.0f;
    float *o = out + ((size_t)b * T + t) * NH * hs + (size_t)h * hs;
    PW_UNROLL
    for (int d = 0; d < FLASH_HS; d++)
        if (d < hs) o[d] = acc[d] * inv;
    lse[((size_t)b * NH + h) * T + t] = active ? mx + logf(l) : 0.0f;
}

__global__ void __launch_bounds__(FLASH_BQ)
    FLASH_FN(dq)(float *dqkv, float *drow, const float *dout, const float *qkv, const float *lse,
                 const int *mask, int T, int NH, int NKV, int hs, float scale)
{
    __shared__ FLASH_FN(KVTile) tile;
    float(*ks)[FLASH_HS] = tile.k, (*vs)[FLASH_HS] = tile.v;
    const int *km = tile.m;
    FlashQuery fq = flash_query(qkv, mask, T, NH, NKV, hs);
    int b = fq.b, h = fq.h, t = fq.t, active = fq.active;
    size_t row = ((size_t)b * NH + h) * T + t;
    float L = active ? lse[row] : 0.0f;

    float q[FLASH_HS], go[FLASH_HS], dq[FLASH_HS];
    const float *dO = dout + ((size_t)b * T + t) * NH * hs + (size_t)h * hs;
    PW_UNROLL
    for (int d = 0; d < FLASH_HS; d++) {
        q[d] = (active && d < hs) ? fq.f.q[(size_t)t * fq.f.W + d] * scale : 0.0f;
        go[d] = (active && d < hs) ? dO[d] : 0.0f;
        dq[d] = 0.0f;
    }
    float D = 0.0f;
    /* sweep 0: D = sum_s P dP; sweep 1: dq += P (dP - D) k (scaled at the end) */
    for (int sweep = 0; sweep < 2; sweep++) {
        for (int k0 = 0; k0 < fq.kend; k0 += FLASH_BK) {
            FLASH_FN(load_kv)(&tile, fq.f, fq.m, k0, T, hs);
            __syncthreads();
            if (active && k0 <= t) {
                PW_UNROLL_BY(2)
                for (int j = 0; j < FLASH_BK; j++) {
                    if (k0 + j > t || !km[j]) continue;
                    float x = 0.0f, dp = 0.0f;
                    PW_UNROLL
                    for (int d = 0; d < FLASH_HS; d++) {
                        x += q[d] * ks[j][d];
                        dp += go[d] * vs[j][d];
                    }
                    float p = expf(x - L);
                    if (sweep == 0) {
                        D += p * dp;
                    } else {
                        float ds = p * (dp - D);
                        PW_UNROLL
                        for (int d = 0; d < FLASH_HS; d++) dq[d] += ds * ks[j][d];
                    }
                }
            }
            __syncthreads();
        }
    }
    if (t >= T) return;
    drow[row] = D;
    if (!active) return;
    float *g = dqkv + (fq.f.q - qkv) + (size_t)t * fq.f.W;
    PW_UNROLL
    for (int d = 0; d < FLASH_HS; d++)
        if (d < hs) g[d] += scale * dq[d];
}

__global__ void __launch_bounds__(FLASH_BKV(FLASH_HS))
    FLASH_FN(dkv)(float *dqkv, const float *drow, const float *dout, const float *qkv,
                  const float *lse, const int *mask, int T, int NH, int NKV, int hs, float scale)
{
    /* the block's own keys and values, one row per thread, odd row stride: no bank conflicts */
    __shared__ float kown[FLASH_BKV(FLASH_HS)][FLASH_HS + 1];
    __shared__ float vown[FLASH_BKV(FLASH_HS)][FLASH_HS + 1];
    __shared__ float qs[FLASH_BQ2(FLASH_HS)][FLASH_HS];
    __shared__ float os[FLASH_BQ2(FLASH_HS)][FLASH_HS];
    __shared__ float Ls[FLASH_BQ2(FLASH_HS)], Ds[FLASH_BQ2(FLASH_HS)];
    __shared__ int qm[FLASH_BQ2(FLASH_HS)];
    const int BKV = FLASH_BKV(FLASH_HS), BQ2 = FLASH_BQ2(FLASH_HS);
    int b = blockIdx.z, kv = blockIdx.y, G = NH / NKV, k0 = blockIdx.x * BKV;
    int s = k0 + (int)threadIdx.x;
    const int *m = mask ? mask + (size_t)b * T : 0;
    int key = s < T && flash_real(m, s);
    FlashHead f0 = flash_head(qkv, b, kv * G, T, NH, NKV, hs);
    for (int i = threadIdx.x; i < BKV * FLASH_HS; i += BKV) {
        int j = i / FLASH_HS, d = i % FLASH_HS, r = k0 + j;
        int ok = r < T && d < hs;
        kown[j][d] = ok ? f0.k[(size_t)r * f0.W + d] : 0.0f;
        vown[j][d] = ok ? f0.v[(size_t)r * f0.W + d] : 0.0f;
    }
    float dk[FLASH_HS], dv[FLASH_HS];
    PW_UNROLL
    for (int d = 0; d < FLASH_HS; d++) dk[d] = dv[d] = 0.0f;

    for (int jh = 0; jh < G; jh++) {
        int h = kv * G + jh;
        FlashHead f = flash_head(qkv, b, h, T, NH, NKV, hs);
        const float *dO = dout + (size_t)b * T * NH * hs + (size_t)h * hs;
        size_t row0 = ((size_t)b * NH + h) * T;
        for (int t0 = k0; t0 < T; t0 += BQ2) {
            __syncthreads(); /* the previous tile is read by everyone (and kown, vown written) */
            for (int i = threadIdx.x; i < BQ2 * FLASH_HS; i += BKV) {
                int j = i / FLASH_HS, d = i % FLASH_HS, t = t0 + j;
                int ok = t < T && d < hs;
                qs[j][d] = ok ? f.q[(size_t)t * f.W + d] * scale : 0.0f;
                os[j][d] = ok ? dO[(size_t)t * NH * hs + d] : 0.0f;
            }
            if ((int)threadIdx.x < BQ2) {
                int t = t0 + (int)threadIdx.x;
                int ok = t < T && flash_real(m, t);
                qm[threadIdx.x] = ok;
                Ls[threadIdx.x] = ok ? lse[row0 + t] : 0.0f;
                Ds[threadIdx.x] = ok ? drow[row0 + t] : 0.0f;
            }
            __syncthreads();
            if (!key) continue;
            for (int j = 0; j < BQ2; j++) {
                if (t0 + j < s || !qm[j]) continue;
                float x = 0.0f, dp = 0.0f;
                PW_UNROLL
                for (int d = 0; d < FLASH_HS; d++) {
                    x += qs[j][d] * kown[threadIdx.x][d];
                    dp += os[j][d] * vown[threadIdx.x][d];
                }
                float p = expf(x - Ls[j]), ds = p * (dp - Ds[j]);
                /* qs holds scale q: ds (scale q) is the CPU's (scale ds) q */
                PW_UNROLL
                for (int d = 0; d < FLASH_HS; d++) {
                    dk[d] += ds * qs[j][d];
                    dv[d] += p * os[j][d];
                }
            }
        }
    }
    if (!key) return;
    float *gk = dqkv + (f0.k - qkv) + (size_t)s * f0.W;
    float *gv = dqkv + (f0.v - qkv) + (size_t)s * f0.W;
    PW_UNROLL
    for (int d = 0; d < FLASH_HS; d++)
        if (d < hs) {
            gk[d] += dk[d];
            gv[d] += dv[d];
        }
}

#undef FLASH_FN
