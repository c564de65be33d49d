/* flash_wg_kernels.cuh: the bfloat16 attention for heads of 64 on Hopper's warpgroup products
 * (wgmma.cuh): what pw_flash_tc_fwd_64, _dq_64 and _dkv_64 (flash_tc_kernels.cuh) compute, the
 * same outputs from the same inputs (the backward after the same prep kernel), each product
 * issued by four warps at once instead of each warp's mma.sync. Why: the mma.sync attention ran
 * at 248 TFLOP/s forward and 152 backward on an H100 (performance.md), its backward the largest
 * cost of the training step after the GEMMs; mma.sync cannot reach the rate Hopper's tensor
 * cores have.
 *
 * A block is PW_FWG_GROUPS warpgroups (256 threads), each owning 64 rows (queries in fwd and dq,
 * keys in dkv): the block's 128 rows share each tile of 64 of the other side, brought by
 * cp.async (cp_async.cuh) into swizzled shared tiles (wg_tile.cuh) two buffers deep, the next
 * tile's copies in flight while the warpgroups compute on the current one. A warpgroup's own
 * side (q; q and dout; k and v) stays in A fragments in registers for the whole kernel, the
 * tiles are the B operands: K-major for the products over the head (q k^T, dout v^T, k q^T,
 * v dout^T: a tile row is a key's or query's 64 channels), MN-major for those over the tile
 * (P v, dS k, P^T dout, dS^T q: the same rows, n along them). Scores, probabilities and dS go
 * from one product's accumulators (a warp's 16 rows as mma.cuh's D fragments) to the next one's
 * A fragments without leaving registers (a pair of 8-column tiles is one 16-deep slice).
 *  - fwd: S = q k^T, the mask where the tile needs it and the online softmax exactly as the
 *    mma.sync forward does it (the max over a quad, the vote before rescaling, exp2 of one
 *    FFMA), O += P v.
 *  - dq: S and dP = dout v^T again, dS = scale P (dP - D), dq += dS k.
 *  - dkv: over the group's query heads and the queries from the block's first key on,
 *    S^T = k q^T and dP^T = v dout^T, dv += P^T dout, dk += dS^T q.
 * A warpgroup skips a tile whose keys all come after its last query (fwd, dq) or whose queries
 * all come before its first key (dkv), taking part in its barriers only. A padding row of a tile
 * (flag 0) may hold NaN: it is zeroed in shared memory once the tile has landed, as the mma.sync
 * kernels do, so that a zero probability never meets it. Under the emulator each kernel gives
 * its mma.sync twin's outputs bit for bit (both add each 16-deep slice in the same order there).
 *
 * Order: a tile's copies landed (this thread's wait), the block's vote on padding, the scrub,
 * then every thread's pw_wg_proxy_fence and a barrier: the products read shared memory through
 * the async proxy, which sees the threads' writes only so. Each batch of products is waited for
 * (pw_wg_wait(0), its accumulators pinned by pw_wg_hold) before they are read, and every
 * warpgroup's last products of a tile are done before the barrier that lets its buffer be
 * refilled.
 *
 * Modes (bits of FWG_*, a constant in each set of kernels, fwg_kernels below; 0 the kernels as
 * described): ways round a part of the schedule, each giving the same bits under the emulator
 * but the last, so that one GPU run tells which part the hardware does not do as the emulator
 * does (an H200 gave wrong results where a block had a second warpgroup's rows or a second key
 * tile, right ones at a single tile of the first warpgroup's rows, and the emulator's model of
 * the asynchrony finds nothing):
 *  - FWG_SERIAL: a tile's copies are issued in its own iteration, into the first buffer always,
 *    and waited for at once: none in flight while products run, the second buffer unused;
 *  - FWG_ONE_GROUP: a block is 64 rows, made by one warpgroup; the other issues copies and meets
 *    the barriers only (grid: ceil(T / 64) blocks of rows);
 *  - FWG_BATCH_EACH: each product its own batch, waited for before the next is issued;
 *  - FWG_SWAP: the warpgroups' rows swapped (the second takes the block's first 64; with
 *    FWG_ONE_GROUP the second is the one that computes): wrong rows that follow the swap are the
 *    warpgroup's, rows that stay are the rows';
 *  - FWG_ACC_FRESH: the products that add to a sum carried from tile to tile (o, dq, dk, dv) made
 *    into fresh accumulators, waited for, then added to the sum by the threads (the H200's one
 *    right case had a single tile: no sum carried); other roundings than mma.sync's, so within
 *    the twin's bounds rather than its bits.
 *
 * C subset of CUDA: tests/cuda/test_flash_wg_emu.c runs this file on the host under emu.h (and
 * emu_wgmma.h); the includer provides wgmma.cuh's and cp_async.cuh's functions, PW_DYN_SMEM,
 * flash_tc_kernels.cuh's shared helpers (flash_tc.cuh), __any_sync and __syncthreads_or. */
#ifndef PW_CUDA_FLASH_WG_KERNELS_CUH
#define PW_CUDA_FLASH_WG_KERNELS_CUH

#include "wg_tile.cuh"

#define PW_FWG_GROUPS 2
#define PW_FWG_THREADS (PW_FWG_GROUPS * 128)
#define PW_FWG_ROWS (PW_FWG_GROUPS * 64) /* rows a block: queries (fwd, dq) or keys (dkv) */
#define PW_FWG_BK 64                      /* rows a tile */
/* the modes (above); pw_kernels_cuda.h's PW_WGMMA_* are the same bits */
#define FWG_SERIAL 1
#define FWG_ONE_GROUP 2
#define FWG_BATCH_EACH 4
#define FWG_SWAP 8
#define FWG_ACC_FRESH 16
/* rows a block in a mode */
#define FWG_BLOCK_ROWS(mode) ((mode) & FWG_ONE_GROUP ? 64 : PW_FWG_ROWS)
#define PW_FWG_TILE (64 * PW_WG_ROW)      /* bytes of a tile */
/* fwd's and dq's dynamic shared memory: two buffers of a key tile, a value tile and their
 * flags, and room to align the tiles to 1024 bytes */
#define PW_FWG_SMEM (2 * (2 * PW_FWG_TILE + PW_FWG_BK * 4) + PW_WG_ATOM)
/* the backward's dk and dv kernel: two buffers of a query tile, a dout tile and their flags,
 * lse and D */
#define PW_FWG_DKV_SMEM (2 * (2 * PW_FWG_TILE + 3 * PW_FWG_BK * 4) + PW_WG_ATOM)

/* Issue the copies of rows [r0, r0 + 64) of a bfloat16 matrix of 64 columns (row stride ld,
 * 16-byte aligned rows) into a swizzled tile, zeros past T: two 16-byte copies a thread */
static __device__ __forceinline__ void fwg_issue_tile(uint8_t *dst, const uint16_t *src,
                                                      size_t ld, int r0, int T)
{
    PW_UNROLL
    for (int u = 0; u < 64 * 8 / PW_FWG_THREADS; u++) {
        int i = (int)threadIdx.x + u * PW_FWG_THREADS, r = i / 8, c = i % 8, in = r0 + r < T;
        pw_cp_async16(pw_smem(dst) + pw_wg_chunk(r, c),
                      src + (size_t)(in ? r0 + r : 0) * ld + (size_t)c * 8, in ? 16 : 0);
    }
}

/* Issue the copies of keys [k0, k0 + 64) and their values into a buffer (zeros past T), and
 * their flags: one group */
static __device__ __forceinline__ void fwg_issue(uint8_t *kt, uint8_t *vt, int *ok,
                                                 const TcKv *src, int k0)
{
    fwg_issue_tile(kt, src->k, src->ld, k0, src->T);
    fwg_issue_tile(vt, src->v, src->ld, k0, src->T);
    tc_issue_row4(ok, src->m, k0, PW_FWG_BK, src->T);
    pw_cp_commit();
}

/* A fragments (mma.cuh's) of a warp's 16 rows (row0, row0 + 8 for this lane) of a bfloat16
 * matrix of 64 columns (row stride ld), zero rows where not ok0 / ok8 */
static __device__ __forceinline__ void fwg_load_a(uint32_t a[4][4], const uint16_t *x,
                                                  size_t ld, int row0, int ok0, int ok8)
{
    int c = (int)(threadIdx.x % 4);
    const uint16_t *x0 = x + (size_t)row0 * ld, *x8 = x0 + 8 * ld;
    PW_UNROLL
    for (int kk = 0; kk < 4; kk++) {
        int d = kk * 16 + 2 * c;
        a[kk][0] = tc_pair(x0, d, 64, ok0);
        a[kk][1] = tc_pair(x8, d, 64, ok8);
        a[kk][2] = tc_pair(x0, d + 8, 64, ok0);
        a[kk][3] = tc_pair(x8, d + 8, 64, ok8);
    }
}

/* The A fragments of a 64-column row block from a warpgroup product's accumulators, rounded:
 * slice j (columns 16 j .. 16 j + 15) is 8-column tiles 2j and 2j + 1 */
static __device__ __forceinline__ void fwg_frags(uint32_t a[4][4], const float x[32])
{
    PW_UNROLL
    for (int j = 0; j < 4; j++)
        PW_UNROLL
        for (int r = 0; r < 4; r++) a[j][r] = pw_bf16x2(x[8 * j + 2 * r], x[8 * j + 2 * r + 1]);
}

/* The accumulators (a warp's 16 rows of 64: this lane's rows row0 and row0 + 8) times mul0 /
 * mul8 into float32 rows of y and / or rounded into those of y16 (either may be NULL; row
 * stride ld), set; rows past T untouched */
static __device__ __forceinline__ void fwg_store(float *y, uint16_t *y16, size_t ld, int row0,
                                                 int T, const float acc[32], float mul0,
                                                 float mul8)
{
    int c = (int)(threadIdx.x % 4);
    PW_UNROLL
    for (int v = 0; v < 32; v++) {
        int d = 8 * (v / 4) + 2 * c + (v & 1), row = v % 4 < 2 ? row0 : row0 + 8;
        if (row >= T) continue;
        float x = acc[v] * (v % 4 < 2 ? mul0 : mul8);
        size_t i = (size_t)row * ld + d;
        if (y) y[i] = x;
        if (y16) y16[i] = pw_bf16_bits(x);
    }
}

/* zeros over the key and value rows of a landed tile whose flag is 0 (a row is 128 contiguous
 * bytes whatever the swizzle) */
static __device__ __forceinline__ void fwg_scrub(uint8_t *kt, uint8_t *vt, const int *ok)
{
    for (int i = (int)threadIdx.x; i < PW_FWG_BK * 8; i += PW_FWG_THREADS) {
        int r = i / 8, c = i % 8;
        if (!ok[r]) {
            *(uint4 *)(kt + r * PW_WG_ROW + c * 16) = make_uint4(0u, 0u, 0u, 0u);
            *(uint4 *)(vt + r * PW_WG_ROW + c * 16) = make_uint4(0u, 0u, 0u, 0u);
        }
    }
}

/* A tile pair (keys and values, or queries and their dout) has landed in this thread: the
 * block's vote on padding rows (flag 0), their zeroing, and the fence and barrier that make the
 * tiles the products'; whether there was padding */
static __device__ __forceinline__ int fwg_land(uint8_t *a, uint8_t *b, const int *ok, int r0,
                                               int T)
{
    int pad = tc_padded(ok, r0, PW_FWG_BK, T);
    if (pad) fwg_scrub(a, b, ok);
    pw_wg_proxy_fence();
    __syncthreads(); /* the tiles are the block's, as the async proxy sees them */
    return pad;
}

/* One product over a 16-deep slice j of a batch (fwg_batch) */
static __device__ __forceinline__ void fwg_product(int mn, float x[32], const uint32_t a[4],
                                                   uint64_t dx, int j)
{
    if (mn) pw_wg_rs_mn(x, a, dx + 128 * j, 1);
    else pw_wg_rs_k(x, a, dx + 2 * j, j > 0);
}

/* FWG_ACC_FRESH's products over the tile: x += a . X (the tile at dx MN-major) made into fresh
 * accumulators, waited for, then added */
static __device__ __forceinline__ void fwg_fresh(float x[32], const uint32_t a[4][4], uint64_t dx)
{
    float t[32];
    PW_UNROLL
    for (int v = 0; v < 32; v++) t[v] = 0.0f;
    pw_wg_hold(t);
    pw_wg_fence();
    PW_UNROLL
    for (int j = 0; j < 4; j++) pw_wg_rs_mn(t, a[j], dx + 128 * j, j > 0);
    pw_wg_commit();
    pw_wg_wait(0);
    pw_wg_hold(t);
    PW_UNROLL
    for (int v = 0; v < 32; v++) x[v] += t[v];
}

/* One batch of products, waited for: over the head (mn 0: x = a . X^T, the tile at dx K-major,
 * four slices of the head) or over the tile (mn 1: x += a . X, the tile MN-major, four slices of
 * its rows); with y, y likewise from b and the tile at dy in the same batch. The mode's
 * FWG_BATCH_EACH: every product its own batch, fenced and waited for; FWG_ACC_FRESH: mn 1's made
 * by fwg_fresh. mn, whether y is given and the mode are constants at every call (the branches
 * fold away). */
static __device__ __forceinline__ void fwg_batch(int mn, float x[32], const uint32_t a[4][4],
                                                 uint64_t dx, float *y, const uint32_t (*b)[4],
                                                 uint64_t dy, int mode)
{
    if (mode & FWG_BATCH_EACH) {
        PW_UNROLL
        for (int j = 0; j < (y ? 8 : 4); j++) {
            float *d = j < 4 ? x : y;
            pw_wg_hold(d);
            pw_wg_fence();
            fwg_product(mn, d, j < 4 ? a[j] : b[j - 4], j < 4 ? dx : dy, j % 4);
            pw_wg_commit();
            pw_wg_wait(0);
            pw_wg_hold(d);
        }
        return;
    }
    if (mn && (mode & FWG_ACC_FRESH)) {
        fwg_fresh(x, a, dx);
        if (y) fwg_fresh(y, b, dy);
        return;
    }
    pw_wg_hold(x);
    if (y) pw_wg_hold(y);
    pw_wg_fence();
    PW_UNROLL
    for (int j = 0; j < 4; j++) fwg_product(mn, x, a[j], dx, j);
    PW_UNROLL
    for (int j = 0; y && j < 4; j++) fwg_product(mn, y, b[j], dy, j);
    pw_wg_commit();
    pw_wg_wait(0);
    pw_wg_hold(x);
    if (y) pw_wg_hold(y);
}

/* What fwd and dq share: the block's query rows (the last block first) against key tiles, two
 * buffers of keys, values and flags (buffer i: keys at tile 2i, values at 2i + 1, flags after
 * the four tiles); the mode; whether this warpgroup computes (FWG_ONE_GROUP: one of them);
 * this lane's rows, whether each is a real query, the warp's first and the warpgroup's first
 * query */
typedef struct FwgQuery {
    uint8_t *tiles;
    int *flags;
    FlashAt at;
    const int *m;
    TcKv src;
    int mode, active, nt, wq0, first, r0, r8, ok0, ok8;
} FwgQuery;

/* This thread's warpgroup's slot of 64 rows in its block (FWG_SWAP swaps them), and whether the
 * slot is in the block (FWG_ONE_GROUP: the first only) */
static __device__ __forceinline__ int fwg_slot(int mode)
{
    return (int)threadIdx.x / 128 ^ (mode & FWG_SWAP ? 1 : 0);
}
static __device__ __forceinline__ int fwg_active(int mode)
{
    return mode & FWG_ONE_GROUP ? fwg_slot(mode) == 0 : 1;
}

/* the above, with the first key tile's copies issued (in flight while the caller reads q) */
static __device__ __forceinline__ FwgQuery fwg_query(uint8_t *smem, const uint16_t *qkv,
                                                     const int *mask, int T, int NH, int NKV,
                                                     int hs, int mode)
{
    FwgQuery f;
    const int rows = FWG_BLOCK_ROWS(mode), b = (int)blockIdx.z, q0 = tc_query_block(rows);
    const int t = (int)threadIdx.x;
    f.tiles = pw_wg_base(smem);
    f.flags = (int *)(f.tiles + 4 * PW_FWG_TILE);
    f.at = flash_at(b, (int)blockIdx.y, T, NH, NKV, hs);
    f.m = mask ? mask + (size_t)b * T : 0;
    TcKv src = {qkv + f.at.k, qkv + f.at.v, (size_t)f.at.W, f.m, T, hs, 1};
    f.src = src;
    int last = q0 + rows < T ? q0 + rows : T;
    f.mode = mode;
    f.active = fwg_active(mode);
    f.nt = (last + PW_FWG_BK - 1) / PW_FWG_BK;
    f.wq0 = q0 + 64 * fwg_slot(mode);
    f.first = f.wq0 + 16 * (t % 128 / 32);
    f.r0 = f.first + t % 32 / 4;
    f.r8 = f.r0 + 8;
    f.ok0 = f.active && f.r0 < T && flash_real(f.m, f.r0);
    f.ok8 = f.active && f.r8 < T && flash_real(f.m, f.r8);
    fwg_issue(f.tiles, f.tiles + PW_FWG_TILE, f.flags, &f.src, 0);
    return f;
}

/* A key tile in hand: whether it has padding, its flags, its keys' and values' descriptors */
typedef struct FwgKeys {
    int pad;
    const int *ok;
    uint64_t dk, dv;
} FwgKeys;

/* Key tile it of nt landed and made the products' while tile it + 1 is issued into the other
 * buffer (the barrier that closed tile it - 1 freed it); FWG_SERIAL: tile it issued now into the
 * first buffer (the first tile was, by fwg_query) and waited for, nothing else in flight */
static __device__ __forceinline__ FwgKeys fwg_next_keys(const FwgQuery *f, int it)
{
    const int cur = f->mode & FWG_SERIAL ? 0 : it & 1, k0 = it * PW_FWG_BK;
    if (f->mode & FWG_SERIAL) {
        uint8_t *kc = f->tiles + 2 * cur * PW_FWG_TILE;
        if (it > 0) fwg_issue(kc, kc + PW_FWG_TILE, f->flags + cur * PW_FWG_BK, &f->src, k0);
        pw_cp_wait_all();
    } else if (it + 1 < f->nt) {
        uint8_t *kn = f->tiles + 2 * (cur ^ 1) * PW_FWG_TILE;
        fwg_issue(kn, kn + PW_FWG_TILE, f->flags + (cur ^ 1) * PW_FWG_BK, &f->src, k0 + PW_FWG_BK);
        pw_cp_wait_but_one();
    } else {
        pw_cp_wait_all();
    }
    uint8_t *kt = f->tiles + 2 * cur * PW_FWG_TILE;
    FwgKeys k;
    k.ok = f->flags + cur * PW_FWG_BK;
    k.pad = fwg_land(kt, kt + PW_FWG_TILE, k.ok, k0, f->src.T);
    k.dk = pw_wg_desc(pw_smem(kt), PW_WG_LBO, PW_WG_SBO);
    k.dv = pw_wg_desc(pw_smem(kt + PW_FWG_TILE), PW_WG_LBO, PW_WG_SBO);
    return k;
}

static __device__ __forceinline__ void fwg_fwd(float *out, uint16_t *out16, float *lse,
                                               const uint16_t *qkv, const int *mask, int T,
                                               int NH, int NKV, int hs, float scale, int mode)
{
    PW_DYN_SMEM(uint8_t, smem);
    const FwgQuery f = fwg_query(smem, qkv, mask, T, NH, NKV, hs, mode);
    const float sl2 = scale * TC_LOG2E;
    const int b = (int)blockIdx.z, h = (int)blockIdx.y, c = (int)threadIdx.x % 4;
    const int r0 = f.r0, r8 = f.r8, ok0 = f.ok0, ok8 = f.ok8;
    uint32_t qa[4][4];
    fwg_load_a(qa, qkv + f.at.q, (size_t)f.at.W, r0, ok0, ok8);
    float mx0 = -INFINITY, mx8 = -INFINITY, l0 = 0.0f, l8 = 0.0f, o[32], s[32];
    PW_UNROLL
    for (int v = 0; v < 32; v++) o[v] = 0.0f;
    for (int it = 0; it < f.nt; it++) {
        const int k0 = it * PW_FWG_BK;
        const FwgKeys kt = fwg_next_keys(&f, it);
        if (f.active && k0 <= f.wq0 + 63) { /* a key at or before its last query */
            fwg_batch(0, s, qa, kt.dk, NULL, NULL, 0, mode);
            /* every key of the tile real and at or before the warp's first query: no mask */
            if (kt.pad || k0 + PW_FWG_BK - 1 > f.first || k0 + PW_FWG_BK > T) {
                PW_UNROLL
                for (int v = 0; v < 32; v++) {
                    int j = 8 * (v / 4) + 2 * c + (v & 1), row = v % 4 < 2 ? r0 : r8;
                    int keep = (k0 + j <= row) & (kt.ok[j] != 0);
                    s[v] = keep ? s[v] : -INFINITY;
                }
            }
            float t0 = mx0, t8 = mx8;
            PW_UNROLL
            for (int n = 0; n < 8; n++) {
                t0 = fmaxf(t0, fmaxf(s[4 * n], s[4 * n + 1]));
                t8 = fmaxf(t8, fmaxf(s[4 * n + 2], s[4 * n + 3]));
            }
            t0 = tc_quad_max(t0);
            t8 = tc_quad_max(t8);
            /* a row with no real key yet keeps max -inf: measure from 0 (every p is 0 then) */
            float ref0 = t0 == -INFINITY ? 0.0f : t0, ref8 = t8 == -INFINITY ? 0.0f : t8;
            if (__any_sync(0xffffffffu, t0 != mx0 || t8 != mx8)) {
                float c0 = exp2f((mx0 - ref0) * sl2), c8 = exp2f((mx8 - ref8) * sl2);
                l0 *= c0;
                l8 *= c8;
                PW_UNROLL
                for (int v = 0; v < 32; v++) o[v] *= v % 4 < 2 ? c0 : c8;
            }
            float n0 = -ref0 * sl2, n8 = -ref8 * sl2;
            uint32_t pa[4][4];
            PW_UNROLL
            for (int v = 0; v < 32; v++) {
                float p = exp2f(fmaf(s[v], sl2, v % 4 < 2 ? n0 : n8));
                s[v] = p;
                if (v % 4 < 2) l0 += p;
                else l8 += p;
            }
            fwg_frags(pa, s);
            mx0 = t0;
            mx8 = t8;
            fwg_batch(1, o, pa, kt.dv, NULL, NULL, 0, mode);
        }
        __syncthreads(); /* every warpgroup is done with this buffer before it is refilled */
    }
    const size_t ld = (size_t)NH * hs, oat = (size_t)b * T * ld + (size_t)h * hs;
    float L0 = tc_quad_sum(l0), L8 = tc_quad_sum(l8);
    if (!f.active) return; /* FWG_ONE_GROUP's other warpgroup: its rows are another block's */
    /* l >= 1 at a real query (its own key is real and at the max or below it) */
    fwg_store(out ? out + oat : NULL, out16 ? out16 + oat : NULL, ld, r0, T, o,
              ok0 ? 1.0f / L0 : 0.0f, ok8 ? 1.0f / L8 : 0.0f);
    float *lb = lse + ((size_t)b * NH + h) * T;
    if (c == 0 && r0 < T) lb[r0] = ok0 ? mx0 * scale + logf(L0) : 0.0f;
    if (c == 0 && r8 < T) lb[r8] = ok8 ? mx8 * scale + logf(L8) : 0.0f;
}

/* dq (grid ceil(T / FWG_BLOCK_ROWS(mode)) x NH x B, the last query block first): per tile of 64
 * keys, S = q k^T and dP = dout v^T again (dout in bfloat16, from pw_flash_tc_prep), dS = scale
 * P (dP - D), dq += dS k with the key tile MN-major; what pw_flash_tc_dq_64 computes, in the same
 * order of slices. A padding query's q and dout rows are zeros and its L and D make every dS 0
 * without a test, as there. */
static __device__ __forceinline__ void fwg_dq(float *dqkv, uint16_t *dqkv16, const float *drow,
                                              const uint16_t *dout16, const uint16_t *qkv,
                                              const float *lse, const int *mask, int T, int NH,
                                              int NKV, int hs, float scale, int mode)
{
    PW_DYN_SMEM(uint8_t, smem);
    const FwgQuery f = fwg_query(smem, qkv, mask, T, NH, NKV, hs, mode);
    const int b = (int)blockIdx.z, h = (int)blockIdx.y, c = (int)threadIdx.x % 4;
    const int r0 = f.r0, r8 = f.r8, ok0 = f.ok0, ok8 = f.ok8;
    const size_t ld = (size_t)NH * hs, row = ((size_t)b * NH + h) * T;
    uint32_t qa[4][4], da[4][4], sa[4][4];
    fwg_load_a(qa, qkv + f.at.q, (size_t)f.at.W, r0, ok0, ok8);
    fwg_load_a(da, dout16 + (size_t)b * T * ld + (size_t)h * hs, ld, r0, ok0, ok8);
    /* log2(scale) - lse log2(e): exp2(s scale log2(e) + L) = scale p; D */
    const float ls = log2f(scale), sl2 = scale * TC_LOG2E;
    const float L0 = ok0 ? ls - lse[row + r0] * TC_LOG2E : ls;
    const float L8 = ok8 ? ls - lse[row + r8] * TC_LOG2E : ls;
    const float D0 = ok0 ? drow[row + r0] : 0.0f, D8 = ok8 ? drow[row + r8] : 0.0f;
    float dq[32], s[32], dp[32];
    PW_UNROLL
    for (int v = 0; v < 32; v++) dq[v] = 0.0f;
    for (int it = 0; it < f.nt; it++) {
        const int k0 = it * PW_FWG_BK;
        const FwgKeys kt = fwg_next_keys(&f, it);
        if (f.active && k0 <= f.wq0 + 63) { /* a key at or before its last query */
            fwg_batch(0, s, qa, kt.dk, dp, da, kt.dv, mode);
            PW_UNROLL
            for (int v = 0; v < 32; v++) {
                int lo = v % 4 < 2;
                float p = exp2f(fmaf(s[v], sl2, lo ? L0 : L8));
                s[v] = p * (dp[v] - (lo ? D0 : D8)); /* p: scale exp(...) */
            }
            /* selects, not products: a future key's p may be inf */
            if (kt.pad || k0 + PW_FWG_BK - 1 > f.first || k0 + PW_FWG_BK > T) {
                PW_UNROLL
                for (int v = 0; v < 32; v++) {
                    int j = 8 * (v / 4) + 2 * c + (v & 1), lo = v % 4 < 2;
                    int keep = (lo ? ok0 : ok8) & (k0 + j <= (lo ? r0 : r8)) & (kt.ok[j] != 0);
                    s[v] = keep ? s[v] : 0.0f;
                }
            }
            fwg_frags(sa, s);
            fwg_batch(1, dq, sa, kt.dk, NULL, NULL, 0, mode);
        }
        __syncthreads(); /* every warpgroup is done with this buffer before it is refilled */
    }
    if (!f.active) return; /* FWG_ONE_GROUP's other warpgroup */
    /* padding queries: zeros (their dS were) */
    fwg_store(dqkv ? dqkv + f.at.q : NULL, dqkv16 ? dqkv16 + f.at.q : NULL, (size_t)f.at.W, r0,
              T, dq, 1.0f, 1.0f);
}

/* dk and dv (grid ceil(T / FWG_BLOCK_ROWS(mode)) x NKV x B): each warpgroup owns 64 keys (k and
 * v in A fragments for the whole kernel); over the group's query heads and the queries from the
 * block's first key on, in tiles of 64 (q and dout swizzled, two buffers deep, with their flags,
 * lse and D), S^T = k q^T and dP^T = v dout^T (the tiles K-major), P^T and dS^T = scale P^T (dP^T
 * - D), dv += P^T dout and dk += dS^T q (the tiles MN-major); what pw_flash_tc_dkv_64 computes,
 * in the same order of slices. A warpgroup skips a tile whose queries all come before its first
 * key (the second warpgroup's first tile of each head). */
static __device__ __forceinline__ void fwg_dkv(float *dqkv, uint16_t *dqkv16, const float *drow,
                                               const uint16_t *dout16, const uint16_t *qkv,
                                               const float *lse, const int *mask, int T, int NH,
                                               int NKV, int hs, float scale, int mode)
{
    PW_DYN_SMEM(uint8_t, smem);
    uint8_t *tiles = pw_wg_base(smem);
    /* buffer i: queries at tile 2i, dout at 2i + 1; then flags, lse and D, 64 each a buffer */
    int *flags = (int *)(tiles + 4 * PW_FWG_TILE);
    float *Ls = (float *)(flags + 2 * PW_FWG_BK), *Ds = Ls + 2 * PW_FWG_BK;
    const int b = (int)blockIdx.z, kv = (int)blockIdx.y, G = NH / NKV;
    const int k0 = (int)blockIdx.x * FWG_BLOCK_ROWS(mode);
    const int t = (int)threadIdx.x, wg = fwg_slot(mode), w = t % 128 / 32, c = t % 4;
    const int active = fwg_active(mode);
    const float sl2 = scale * TC_LOG2E;
    const int *m = mask ? mask + (size_t)b * T : 0;
    const size_t ld = (size_t)NH * hs;
    const uint16_t *dO = dout16 + (size_t)b * T * ld;
    FlashAt a0 = flash_at(b, kv * G, T, NH, NKV, hs);
    /* the tiles: every query head of the group, for each the queries from k0 on */
    const int per = (T - k0 + PW_FWG_BK - 1) / PW_FWG_BK, nt = G * per;
    int nh = 0, nq = k0;
#define FWG_DKV_ISSUE(buf)                                                                       \
    do {                                                                                         \
        int h_, t_;                                                                              \
        FLASH_WALK_NEXT(h_, t_, nh, nq, kv * G, k0, PW_FWG_BK, T);                               \
        size_t row_ = ((size_t)b * NH + h_) * T;                                                 \
        FlashAt a_ = flash_at(b, h_, T, NH, NKV, hs);                                            \
        fwg_issue_tile(tiles + 2 * (buf) * PW_FWG_TILE, qkv + a_.q, (size_t)a_.W, t_, T);        \
        fwg_issue_tile(tiles + (2 * (buf) + 1) * PW_FWG_TILE, dO + (size_t)h_ * hs, ld, t_, T);  \
        tc_issue_row4(flags + (buf) * PW_FWG_BK, m, t_, PW_FWG_BK, T);                           \
        tc_issue_row4(Ls + (buf) * PW_FWG_BK, lse + row_, t_, PW_FWG_BK, T);                     \
        tc_issue_row4(Ds + (buf) * PW_FWG_BK, drow + row_, t_, PW_FWG_BK, T);                    \
        pw_cp_commit();                                                                          \
    } while (0)
    FWG_DKV_ISSUE(0);
    const int wk0 = k0 + 64 * wg, s0 = wk0 + 16 * w + t % 32 / 4, s8 = s0 + 8;
    const int wlast = wk0 + 16 * w + 15; /* the warp's last key */
    const int ok0 = active && s0 < T && flash_real(m, s0);
    const int ok8 = active && s8 < T && flash_real(m, s8);
    const int key_pad = __any_sync(0xffffffffu, !(ok0 && ok8)); /* a key of the warp not real */
    uint32_t ka[4][4], va[4][4], pa[4][4], sa[4][4];
    fwg_load_a(ka, qkv + a0.k, (size_t)a0.W, s0, ok0, ok8);
    fwg_load_a(va, qkv + a0.v, (size_t)a0.W, s0, ok0, ok8);
    float dk[32], dv[32], s[32], dp[32];
    PW_UNROLL
    for (int v = 0; v < 32; v++) dk[v] = dv[v] = 0.0f;
    for (int it = 0, t0 = k0; it < nt; it++, t0 = t0 + PW_FWG_BK < T ? t0 + PW_FWG_BK : k0) {
        const int cur = mode & FWG_SERIAL ? 0 : it & 1;
        uint8_t *qt = tiles + 2 * cur * PW_FWG_TILE, *ot = qt + PW_FWG_TILE;
        const int *qm = flags + cur * PW_FWG_BK;
        const float *L = Ls + cur * PW_FWG_BK, *D = Ds + cur * PW_FWG_BK;
        if (mode & FWG_SERIAL) { /* tile it now into buffer 0 (the first was, above), waited */
            if (it > 0) FWG_DKV_ISSUE(cur);
            pw_cp_wait_all();
        } else if (it + 1 < nt) {
            FWG_DKV_ISSUE(cur ^ 1);
            pw_cp_wait_but_one();
        } else {
            pw_cp_wait_all();
        }
        int pad = fwg_land(qt, ot, qm, t0, T);
        if (active && t0 + 63 >= wk0) { /* a query at or after the warpgroup's first key */
            const uint64_t dq_ = pw_wg_desc(pw_smem(qt), PW_WG_LBO, PW_WG_SBO);
            const uint64_t do_ = pw_wg_desc(pw_smem(ot), PW_WG_LBO, PW_WG_SBO);
            fwg_batch(0, s, ka, dq_, dp, va, do_, mode);
            PW_UNROLL
            for (int v = 0; v < 32; v++) {
                int j = 8 * (v / 4) + 2 * c + (v & 1);
                float p = exp2f(fmaf(s[v], sl2, -L[j] * TC_LOG2E));
                dp[v] = scale * p * (dp[v] - D[j]);
                s[v] = p;
            }
            /* every query of the tile real and at or after the warp's last key: no mask
             * (selects: a p before its key may be inf; a padding key's p would not be 0) */
            if (pad || t0 < wlast || t0 + PW_FWG_BK > T || key_pad) {
                PW_UNROLL
                for (int v = 0; v < 32; v++) {
                    int j = 8 * (v / 4) + 2 * c + (v & 1), lo = v % 4 < 2;
                    int keep = (lo ? ok0 : ok8) & (t0 + j >= (lo ? s0 : s8)) & (qm[j] != 0);
                    s[v] = keep ? s[v] : 0.0f;
                    dp[v] = keep ? dp[v] : 0.0f;
                }
            }
            fwg_frags(pa, s);
            fwg_frags(sa, dp);
            fwg_batch(1, dv, pa, do_, dk, sa, dq_, mode);
        }
        __syncthreads(); /* every warpgroup is done with this buffer before it is refilled */
    }
#undef FWG_DKV_ISSUE
    if (!active) return; /* FWG_ONE_GROUP's other warpgroup */
    /* padding keys: zeros (no query gave them a probability) */
    fwg_store(dqkv ? dqkv + a0.k : NULL, dqkv16 ? dqkv16 + a0.k : NULL, (size_t)a0.W, s0, T, dk,
              1.0f, 1.0f);
    fwg_store(dqkv ? dqkv + a0.v : NULL, dqkv16 ? dqkv16 + a0.v : NULL, (size_t)a0.W, s0, T, dv,
              1.0f, 1.0f);
}

/* The kernels, one set a mode, the mode a constant in each (its code is that mode's alone: a
 * mode taken at run time made ptxas serialize the products of every mode, another schedule):
 * pw_flash_wg_fwd_64, _dq_64 and _dkv_64 the schedule as written, then the modes of
 * FWG_MODE_LIST (suffix _m and the mode), which fwg_kernels finds by mode. */
#define FWG_FWD_KERNEL(name, mode)                                                               \
    __global__ void __launch_bounds__(PW_FWG_THREADS)                                            \
        name(float *out, uint16_t *out16, float *lse, const uint16_t *qkv, const int *mask,      \
             int T, int NH, int NKV, int hs, float scale)                                        \
    {                                                                                            \
        fwg_fwd(out, out16, lse, qkv, mask, T, NH, NKV, hs, scale, mode);                        \
    }
#define FWG_BWD_KERNEL(name, body, mode)                                                         \
    __global__ void __launch_bounds__(PW_FWG_THREADS)                                            \
        name(float *dqkv, uint16_t *dqkv16, const float *drow, const uint16_t *dout16,           \
             const uint16_t *qkv, const float *lse, const int *mask, int T, int NH, int NKV,     \
             int hs, float scale)                                                                \
    {                                                                                            \
        body(dqkv, dqkv16, drow, dout16, qkv, lse, mask, T, NH, NKV, hs, scale, mode);           \
    }
/* The modes built, each once: its kernels' suffix and its bits (a mode not here is none) */
#define FWG_MODE_LIST(X)                                                                         \
    X(, 0)                                                                                       \
    X(_m1, FWG_SERIAL)                                                                           \
    X(_m2, FWG_ONE_GROUP)                                                                        \
    X(_m4, FWG_BATCH_EACH)                                                                       \
    X(_m8, FWG_SWAP)                                                                             \
    X(_m10, FWG_ONE_GROUP | FWG_SWAP)                                                            \
    X(_m16, FWG_ACC_FRESH)
#define FWG_KERNELS(sfx, mode)                                                                   \
    FWG_FWD_KERNEL(pw_flash_wg_fwd_64##sfx, mode)                                                \
    FWG_BWD_KERNEL(pw_flash_wg_dq_64##sfx, fwg_dq, mode)                                         \
    FWG_BWD_KERNEL(pw_flash_wg_dkv_64##sfx, fwg_dkv, mode)
FWG_MODE_LIST(FWG_KERNELS)
#undef FWG_KERNELS
#undef FWG_BWD_KERNEL
#undef FWG_FWD_KERNEL

typedef void (*FwgFwdFn)(float *, uint16_t *, float *, const uint16_t *, const int *, int, int,
                         int, int, float);
typedef void (*FwgBwdFn)(float *, uint16_t *, const float *, const uint16_t *, const uint16_t *,
                         const float *, const int *, int, int, int, int, float);
typedef struct FwgKernels {
    int mode;
    FwgFwdFn fwd;
    FwgBwdFn dq, dkv;
} FwgKernels;

/* every mode's kernels, mode 0's first (FWG_MODES of them) */
#define FWG_ENTRY(sfx, mode)                                                                     \
    {mode, pw_flash_wg_fwd_64##sfx, pw_flash_wg_dq_64##sfx, pw_flash_wg_dkv_64##sfx},
static const FwgKernels fwg_table[] = {FWG_MODE_LIST(FWG_ENTRY)};
#undef FWG_ENTRY
#define FWG_MODES ((int)(sizeof fwg_table / sizeof *fwg_table))

/* a mode's kernels (fwd NULL where the mode is not built) */
static inline FwgKernels fwg_kernels(int mode)
{
    for (int i = 0; i < FWG_MODES; i++)
        if (fwg_table[i].mode == mode) return fwg_table[i];
    FwgKernels none = {0, NULL, NULL, NULL};
    return none;
}

#endif
