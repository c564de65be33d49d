/* sample_kernel.cuh: the sampler's kernel (launched by sample.cu): n rows of next-token logits to
 * tokens, one block of SAMPLE_THREADS per row. Written in the C subset of CUDA (no templates, no
 * overloads), so that tests/cuda/test_sample_emu.c compiles this very file on the host and runs
 * it under tests/cuda/emu.h against the CPU's pw_sample_rows. The includer provides what CUDA
 * (or emu.h) defines.
 *
 * Nothing of V size is stored. The CPU sorts and walks; here every choice is a threshold on an
 * order-preserving integer key of the logit, found bit by bit from the top (the k-th largest logit
 * for top-k; for top-p the largest probability whose tokens at least as probable hold the mass p),
 * so the kept sets are the CPU's: neither separates equal logits. The draw walks token ids in
 * order like the CPU: the warps' chunks' masses say which chunk holds the uniform, that chunk's
 * parts' masses (a part a warp) which part, and the part's warp walks it. Sums are in double as
 * on the CPU; their order differs, so a draw within rounding (1e-16) of a boundary could fall
 * the other way. */
#ifndef PW_SAMPLE_KERNEL_CUH
#define PW_SAMPLE_KERNEL_CUH

#include <math.h>
#include <stdint.h>

#include "pw_sample.h" /* PW_SAMPLE_TOP_P_SLACK */
#include "warp.cuh"

#define SAMPLE_THREADS 512
#define SAMPLE_WARPS (SAMPLE_THREADS / PW_WARP)
/* A lane's exps of its chunk are made SAMPLE_UNROLL at a time before any is summed: a double
 * exp is a chain of some twenty dependent operations, and one at a time a warp waited out each
 * chain (256 rows of GPT-2's vocabulary took 157 us on an H100, where the double-precision
 * pipes' rate allows about 25 by count). The SAMPLE_UNROLL logits are loaded before the first
 * exp (sample_load): with each load inside its own bound test, as the compiler placed them, a
 * lane waited out a load's latency before each exp (the PTX: one load between exps). The sums
 * keep their order: the same bits. */
#define SAMPLE_UNROLL 4

/* A float's bits as an unsigned key in the float's order (-inf lowest, +inf highest). */
static __device__ __forceinline__ uint32_t key_of(float x)
{
    uint32_t u = __float_as_uint(x);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* The splitmix64 of pw_rng.h: the same stream, the same uniform, on the GPU. */
static __device__ __forceinline__ double uniform_of(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* Block reductions; every thread gets the result. `red` is shared scratch of SAMPLE_WARPS. */
static __device__ double block_sum(double x, double *red)
{
    x = pw_warp_sum_d(x);
    int lane = threadIdx.x % PW_WARP, warp = threadIdx.x / PW_WARP;
    __syncthreads(); /* red may still be read from the previous reduction */
    if (lane == 0) red[warp] = x;
    __syncthreads();
    double s = 0.0;
    for (int i = 0; i < SAMPLE_WARPS; i++) s += red[i]; /* the same order on every thread */
    return s;
}

static __device__ float block_max(float x, double *red)
{
    x = pw_warp_max(x);
    int lane = threadIdx.x % PW_WARP, warp = threadIdx.x / PW_WARP;
    __syncthreads();
    if (lane == 0) red[warp] = x;
    __syncthreads();
    float m = -INFINITY;
    for (int i = 0; i < SAMPLE_WARPS; i++) m = fmaxf(m, (float)red[i]);
    return m;
}

/* x / T in double. At T = 1 (the generator's default) no division is made: x / 1 is x, the
 * same bits, and a double division costs about as much as the double exp it feeds. T is the
 * launch's, so every thread takes the same branch. */
static __device__ __forceinline__ double scaled(float x, double T)
{
    return T == 1.0 ? (double)x : (double)x / T;
}

/* The logits x[b + 32 k] of a lane's SAMPLE_UNROLL ids from b, all loaded before any is used (an
 * id at or past c1, which the caller gives no weight, reads x[b]: b < c1 at every call) */
static __device__ __forceinline__ void sample_load(float v[SAMPLE_UNROLL], const float *x, int b,
                                                   int c1)
{
    PW_UNROLL
    for (int k = 0; k < SAMPLE_UNROLL; k++) v[k] = x[b + k * PW_WARP < c1 ? b + k * PW_WARP : b];
}

/* Unnormalised probability of a kept token: exp(x / T - m) for key >= kmin, else 0. */
static __device__ __forceinline__ double prob_of(float x, uint32_t kmin, double T, double m)
{
    return key_of(x) >= kmin ? exp(scaled(x, T) - m) : 0.0;
}

/* The chunks' masses: each lane's share z (its ids' unnormalised probabilities) and the last id
 * it keeps, summed and maxed over the warp into mass[warp] and last[warp]; returns the total of
 * the chunks in id order (the same on every thread). */
static __device__ double chunk_masses(double z, int keep, double *mass, int *last)
{
    const int lane = threadIdx.x % PW_WARP, warp = threadIdx.x / PW_WARP;
    z = pw_warp_sum_d(z);
    float k = pw_warp_max((float)keep); /* ids below 2^24: exact in a float */
    __syncthreads(); /* the previous masses may still be read */
    if (lane == 0) {
        mass[warp] = z;
        last[warp] = (int)k;
    }
    __syncthreads();
    double s = 0.0;
    for (int w = 0; w < SAMPLE_WARPS; w++) s += mass[w];
    return s;
}

__global__ void sample_kernel(const float *logits, int ld, int V, const int *rows, double T,
                              int top_k, double top_p, uint64_t *rng, int *token, float *logp,
                              float *logp_full)
{
    pw_pdl_enter(); /* pdl.cuh: first, before any global access */
    __shared__ double red[SAMPLE_WARPS], mass[SAMPLE_WARPS];
    __shared__ int last[SAMPLE_WARPS];
    __shared__ double s_u;
    __shared__ int s_pick;
    const float *x = logits + (size_t)blockIdx.x * ld;
    const int tid = threadIdx.x, lane = tid % PW_WARP, warp = tid / PW_WARP;
    /* The draw's layout: warp w owns the ids [c0, c1), its lanes reading 32 in a row. */
    const int chunk = (V + SAMPLE_WARPS - 1) / SAMPLE_WARPS;
    const int c0 = warp * chunk < V ? warp * chunk : V, c1 = c0 + chunk < V ? c0 + chunk : V;

    /* the maximum of x / T is the maximum of x divided by T (T > 0 keeps the order) */
    float xm = -INFINITY;
    for (int v = tid; v < V; v += SAMPLE_THREADS) xm = fmaxf(xm, x[v]);
    const double m = (double)block_max(xm, red) / T;
    /* The full sum, made in the draw's layout: with every token kept (no top-k, no top-p) the
     * chunks' sums are the draw's masses, and no second exp of the row is made. The exps in
     * double are the kernel's cost: two passes of them, the second uncoalesced, took 650 us for
     * a decode step's 256 rows of 151936 on an H100 (PW_PROFILE_OPS). */
    double z = 0.0;
    int keep = -1;
    for (int b = c0 + lane; b < c1; b += SAMPLE_UNROLL * PW_WARP) {
        double e[SAMPLE_UNROLL];
        float xv[SAMPLE_UNROLL];
        sample_load(xv, x, b, c1);
        PW_UNROLL
        for (int k = 0; k < SAMPLE_UNROLL; k++)
            e[k] = b + k * PW_WARP < c1 ? exp(scaled(xv[k], T) - m) : 0.0;
        PW_UNROLL
        for (int k = 0; k < SAMPLE_UNROLL; k++)
            if (b + k * PW_WARP < c1) {
                z += e[k];
                if (e[k] > 0.0) keep = b + k * PW_WARP;
            }
    }
    const double zfull = chunk_masses(z, keep, mass, last), logz_full = m + log(zfull);

    /* top-k: the key of the k-th largest logit, the largest t with #(key >= t) >= k */
    uint32_t kmin = 0;
    if (top_k > 0 && top_k < V) {
        for (int bit = 31; bit >= 0; bit--) {
            uint32_t cand = kmin | (1u << bit);
            double cnt = 0.0;
            for (int v = tid; v < V; v += SAMPLE_THREADS) cnt += key_of(x[v]) >= cand;
            if (block_sum(cnt, red) >= (double)top_k) kmin = cand;
        }
    }
    /* top-p: the largest t whose tokens of key >= t hold at least p - slack of the kept mass */
    if (top_p < 1.0) {
        double zk = 0.0;
        for (int v = tid; v < V; v += SAMPLE_THREADS) zk += prob_of(x[v], kmin, T, m);
        zk = block_sum(zk, red);
        const double want = top_p - PW_SAMPLE_TOP_P_SLACK;
        /* below kmin nothing more is kept, so the mass at or above max(t, kmin) is monotone in
         * t and the greedy answer is >= kmin (the whole kept mass, zk, qualifies) */
        uint32_t t = 0;
        for (int bit = 31; bit >= 0; bit--) {
            uint32_t cand = t | (1u << bit), at = cand > kmin ? cand : kmin;
            double s = 0.0;
            for (int v = tid; v < V; v += SAMPLE_THREADS) s += prob_of(x[v], at, T, m);
            if (block_sum(s, red) / zk >= want) t = cand;
        }
        kmin = t > kmin ? t : kmin;
    }
    /* the kept mass by chunk; with every token kept (kmin 0) it is the full sum's */
    double zsum = zfull;
    if (kmin) {
        double zs = 0.0;
        keep = -1;
        for (int b = c0 + lane; b < c1; b += SAMPLE_UNROLL * PW_WARP) {
            double p[SAMPLE_UNROLL];
            float xv[SAMPLE_UNROLL];
            sample_load(xv, x, b, c1);
            PW_UNROLL
            for (int k = 0; k < SAMPLE_UNROLL; k++)
                p[k] = b + k * PW_WARP < c1 ? prob_of(xv[k], kmin, T, m) : 0.0;
            PW_UNROLL
            for (int k = 0; k < SAMPLE_UNROLL; k++)
                if (b + k * PW_WARP < c1) {
                    zs += p[k];
                    if (p[k] > 0.0) keep = b + k * PW_WARP;
                }
        }
        zsum = chunk_masses(zs, keep, mass, last);
    }

    /* The draw walks ids in order, as the CPU walks the row: the chunks' masses say which chunk
     * holds u, its parts' masses which part (below), and that part's warp walks it 32 ids a
     * step, each step's running sum a scan of its lanes (butterfly shuffles: a lane adds the
     * lower half's total at each level). */
    if (tid == 0) {
        s_u = uniform_of(&rng[rows[blockIdx.x]]);
        s_pick = -1;
    }
    __syncthreads();
    const double u = s_u;
    double before = 0.0;
    int W = -1, lastk = -1;
    for (int w = 0; w < SAMPLE_WARPS; w++) {
        double mw = mass[w] / zsum;
        if (W < 0 && mass[w] > 0.0 && u < before + mw) W = w;
        else if (W < 0) before += mw;
        lastk = last[w] > lastk ? last[w] : lastk;
    }
    /* Chunk W in SAMPLE_WARPS parts, one a warp: each part's mass (chunk W's exps made again,
     * by every thread, a few each), then the warp of the part that holds u walks that part
     * alone. A step of the walk is a chain (a double exp, a division, ten shuffles of the scan
     * and five of the vote), so one warp walking the whole chunk waited 99 of them for GPT-2's
     * vocabulary and 297 for Qwen2.5's; a part is 7 and 19. A part's start is the masses
     * before it summed in part order: the same sums in another grouping (within 1e-16), as the
     * chunks' masses already are against the CPU's one running sum. */
    const int p0 = W < 0 ? 0 : W * chunk < V ? W * chunk : V; /* chunk W: [p0, p1) */
    const int p1 = W < 0 ? 0 : p0 + chunk < V ? p0 + chunk : V;
    const int part = (p1 - p0 + SAMPLE_WARPS - 1) / SAMPLE_WARPS;
    const int q0 = p0 + warp * part < p1 ? p0 + warp * part : p1; /* this warp's part */
    const int q1 = q0 + part < p1 ? q0 + part : p1;
    double zp = 0.0;
    for (int v = q0 + lane; v < q1; v += PW_WARP) zp += prob_of(x[v], kmin, T, m);
    zp = pw_warp_sum_d(zp);
    __syncthreads(); /* the chunks' masses were read above */
    if (lane == 0) mass[warp] = zp;
    __syncthreads();
    /* W2: the part that holds u, starting at before2; u past the parts' sum (rounding: they
     * are chunk W's mass summed another way) takes the last part with mass */
    int W2 = -1, lastp = -1;
    double before2 = before, lastb = before;
    for (int w = 0; w < SAMPLE_WARPS && W >= 0 && W2 < 0; w++) {
        double mw = mass[w] / zsum;
        if (mass[w] > 0.0) {
            lastp = w;
            lastb = before2;
        }
        if (mass[w] > 0.0 && u < before2 + mw) W2 = w;
        else before2 += mw;
    }
    if (W2 < 0) {
        W2 = lastp;
        before2 = lastb;
    }
    if (warp == W2) { /* the whole warp, the same trip count on every lane */
        double cum = before2;
        int pick = -1;
        for (int b = q0; b < q1 && pick < 0; b += PW_WARP) {
            int v = b + lane;
            double p = v < q1 ? prob_of(x[v], kmin, T, m) / zsum : 0.0, inc = p, tot = p;
            for (int off = 1; off < PW_WARP; off <<= 1) {
                double o = __shfl_xor_sync(0xffffffffu, tot, off);
                if (lane & off) inc += o;
                tot += o;
            }
            float first = p > 0.0 && u < cum + inc ? (float)lane : (float)PW_WARP;
            for (int off = PW_WARP / 2; off > 0; off >>= 1)
                first = fminf(first, __shfl_xor_sync(0xffffffffu, first, off));
            if (first < (float)PW_WARP) pick = b + (int)first;
            cum += tot;
        }
        if (lane == 0) s_pick = pick;
    }
    __syncthreads();
    if (tid == 0) {
        int tok = s_pick >= 0 ? s_pick : lastk; /* rounding at the top end: the last kept */
        token[blockIdx.x] = tok;
        logp[blockIdx.x] = (float)log(prob_of(x[tok], kmin, T, m) / zsum);
        logp_full[blockIdx.x] = (float)(scaled(x[tok], T) - logz_full);
    }
}

#endif
