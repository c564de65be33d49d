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
 * order like the CPU, each thread its own run of ids after a scan of the runs' masses. Sums are in
 * double as on the CPU; their order differs, so a draw within rounding (1e-16) of a boundary could
 * fall the other way. */
#ifndef PW_SAMPLE_KERNEL_CUH
#define PW_SAMPLE_KERNEL_CUH

#include <math.h>
#include <stdint.h>

#include "pw_sample.h" /* PW_SAMPLE_TOP_P_SLACK */
#include "warp.cuh"

#define SAMPLE_THREADS 512
#define SAMPLE_WARPS (SAMPLE_THREADS / PW_WARP)

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

/* Unnormalised probability of a kept token: exp(x / T - m) for key >= kmin, else 0. */
static __device__ __forceinline__ double prob_of(float x, uint32_t kmin, double T, double m)
{
    return key_of(x) >= kmin ? exp((double)x / T - m) : 0.0;
}

__global__ void sample_kernel(const float *logits, int ld, int V, const int *rows, double T,
                              int top_k, double top_p, uint64_t *rng, int *token, float *logp,
                              float *logp_full)
{
    __shared__ double red[SAMPLE_WARPS];
    __shared__ double s_u;
    __shared__ int s_pick, s_last;
    const float *x = logits + (size_t)blockIdx.x * ld;
    const int tid = threadIdx.x;

    /* the maximum of x / T is the maximum of x divided by T (T > 0 keeps the order) */
    float xm = -INFINITY;
    for (int v = tid; v < V; v += SAMPLE_THREADS) xm = fmaxf(xm, x[v]);
    const double m = (double)block_max(xm, red) / T;
    /* The full sum, each thread over the run of ids it draws from below: with every token kept
     * (no top-k, no top-p) that run's mass is this sum over the total, and the draw makes no
     * second exp of the row (the exps in double are the kernel's cost: a decode step's 256 rows
     * of 151936 took 650 us on an H100 with two passes of them, PW_PROFILE_OPS). */
    const int run = (V + SAMPLE_THREADS - 1) / SAMPLE_THREADS;
    const int v0 = tid * run, v1 = v0 + run < V ? v0 + run : V;
    double z = 0.0;
    int last = -1;
    for (int v = v0; v < v1; v++) {
        double e = exp((double)x[v] / T - m);
        z += e;
        if (e > 0.0) last = v;
    }
    const double zfull = block_sum(z, red), logz_full = m + log(zfull);

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
    /* the kept mass; with every token kept (kmin 0: no top-k, no top-p) it is the full sum
     * above, the same terms in the same order, so that pass is not made twice */
    double zsum = zfull;
    if (kmin) {
        double zs = 0.0;
        for (int v = tid; v < V; v += SAMPLE_THREADS) zs += prob_of(x[v], kmin, T, m);
        zsum = block_sum(zs, red);
    }

    /* the draw: each thread owns a run of ids; a scan of the runs' masses (in id order) tells
     * which run holds u, and that thread walks it as the CPU walks the row */
    double mine = z / zsum;
    if (kmin) {
        mine = 0.0;
        last = -1;
        for (int v = v0; v < v1; v++) {
            double p = prob_of(x[v], kmin, T, m) / zsum;
            if (p > 0.0) {
                mine += p;
                last = v;
            }
        }
    }
    if (tid == 0) {
        s_u = uniform_of(&rng[rows[blockIdx.x]]);
        s_pick = V;
        s_last = -1;
    }
    __shared__ double runs[SAMPLE_THREADS];
    runs[tid] = mine;
    __syncthreads();
    if (tid == 0) { /* exclusive prefix in id order, in one thread: 512 additions */
        double acc = 0.0;
        for (int i = 0; i < SAMPLE_THREADS; i++) {
            double r = runs[i];
            runs[i] = acc;
            acc += r;
        }
    }
    __syncthreads();
    atomicMax(&s_last, last);
    const double u = s_u;
    double cum = runs[tid];
    if (cum <= u && mine > 0.0) {
        for (int v = v0; v < v1; v++) {
            double p = prob_of(x[v], kmin, T, m) / zsum;
            if (p <= 0.0) continue;
            cum += p;
            if (u < cum) {
                atomicMin(&s_pick, v);
                break;
            }
        }
    }
    __syncthreads();
    if (tid == 0) {
        int tok = s_pick < V ? s_pick : s_last; /* rounding at the top end: the last kept */
        token[blockIdx.x] = tok;
        logp[blockIdx.x] = (float)log(prob_of(x[tok], kmin, T, m) / zsum);
        logp_full[blockIdx.x] = (float)((double)x[tok] / T - logz_full);
    }
}

#endif
