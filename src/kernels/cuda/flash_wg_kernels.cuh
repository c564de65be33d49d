/* flash_wg_kernels.cuh: the bfloat16 attention's forward for heads of 64 on Hopper's warpgroup
 * products (wgmma.cuh): what pw_flash_tc_fwd_64 (flash_tc_kernels.cuh) computes, the same
 * outputs from the same inputs (out and / or out16, lse), its products issued by four warps at
 * once instead of each warp's mma.sync. Why: the tensor-core attention's forward ran at 248
 * TFLOP/s on an H100 (performance.md), where its products run at well over twice that on
 * wgmma; mma.sync cannot reach the rate Hopper's tensor cores have.
 *
 * A block is PW_FWG_GROUPS warpgroups (256 threads), each owning 64 queries: a block's 128
 * queries share each tile of PW_FWG_BK = 64 keys and their values, brought by cp.async
 * (cp_async.cuh) into swizzled shared tiles (wg_tile.cuh) two buffers deep, the next tile's
 * copies in flight while the warpgroups compute on the current one. Per tile and warpgroup:
 *  - S = q k^T: four pw_wg_rs_k (the head's 64 in slices of 16), q's A fragments held in
 *    registers for the whole kernel (loaded once, zeros at padding and past T), the key tile
 *    the B operand K-major (a key's row is its 64 channels);
 *  - the mask (causal, key padding, past T) where the tile needs it, and the online softmax
 *    exactly as the mma.sync forward does it (a warp's rows are the same 16 rows of mma.cuh's
 *    D layout: the max over a quad, the vote before rescaling, exp2 of one FFMA);
 *  - O += P v: four pw_wg_rs_mn, P's A fragments made from S's accumulators rounded to
 *    bfloat16 (a pair of 8-column tiles is one 16-key slice), the value tile the B operand
 *    MN-major (a key's row is its 64 channels, n along it).
 * A warpgroup skips a tile whose keys all come after its last query (the diagonal tile of the
 * block's first warpgroup), taking part in its barriers only. A padding key's row (flag 0) may
 * hold NaN: it is zeroed in shared memory once the tile has landed, as the mma.sync forward
 * does, so that a zero probability never meets it.
 *
 * Order: a tile's copies landed (this thread's wait), the block's vote on padding, the scrub,
 * then every thread's pw_wg_proxy_fence and a barrier: the products read shared memory through
 * the async proxy, which sees the threads' writes only so. Each batch of products is waited for
 * (pw_wg_wait(0)) before its accumulators are read, and every warpgroup's last products of a
 * tile are done before the barrier that lets its buffer be refilled.
 *
 * C subset of CUDA: tests/cuda/test_flash_wg_emu.c runs this file on the host under emu.h (and
 * emu_wgmma.h); the includer provides wgmma.cuh's and cp_async.cuh's functions, PW_DYN_SMEM,
 * flash_tc_kernels.cuh's shared helpers (flash_tc.cuh), __any_sync and __syncthreads_or. */
#ifndef PW_CUDA_FLASH_WG_KERNELS_CUH
#define PW_CUDA_FLASH_WG_KERNELS_CUH

#include "wg_tile.cuh"

#define PW_FWG_GROUPS 2
#define PW_FWG_THREADS (PW_FWG_GROUPS * 128)
#define PW_FWG_ROWS (PW_FWG_GROUPS * 64) /* queries a block */
#define PW_FWG_BK 64                      /* keys a tile */
#define PW_FWG_TILE (64 * PW_WG_ROW)      /* bytes of a key or value tile */
/* dynamic shared memory: two buffers of a key tile, a value tile and their flags, and room to
 * align the tiles to 1024 bytes */
#define PW_FWG_SMEM (2 * (2 * PW_FWG_TILE + PW_FWG_BK * 4) + PW_WG_ATOM)

/* Issue the copies of keys [k0, k0 + 64) and their values into a buffer (zeros past T), and
 * their flags: one group */
static __device__ __forceinline__ void fwg_issue(uint8_t *kt, uint8_t *vt, int *ok,
                                                 const TcKv *src, int k0)
{
    PW_UNROLL
    for (int u = 0; u < 64 * 8 / PW_FWG_THREADS; u++) {
        int i = (int)threadIdx.x + u * PW_FWG_THREADS, r = i / 8, c = i % 8, in = k0 + r < src->T;
        size_t at = (size_t)(in ? k0 + r : 0) * src->ld + (size_t)c * 8;
        uint32_t to = pw_wg_chunk(r, c);
        pw_cp_async16(pw_smem(kt) + to, src->k + at, in ? 16 : 0);
        pw_cp_async16(pw_smem(vt) + to, src->v + at, in ? 16 : 0);
    }
    tc_issue_row4(ok, src->m, k0, PW_FWG_BK, src->T);
    pw_cp_commit();
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

__global__ void __launch_bounds__(PW_FWG_THREADS)
    pw_flash_wg_fwd_64(float *out, uint16_t *out16, float *lse, const uint16_t *qkv,
                       const int *mask, int T, int NH, int NKV, int hs, float scale)
{
    PW_DYN_SMEM(uint8_t, smem);
    uint8_t *tiles = smem + ((PW_WG_ATOM - (uint32_t)(pw_smem(smem) & (PW_WG_ATOM - 1))) &
                             (PW_WG_ATOM - 1));
    int *flags = (int *)(tiles + 4 * PW_FWG_TILE); /* buffer i: keys at 2i tiles, values next */
    const float sl2 = scale * TC_LOG2E;
    const int b = (int)blockIdx.z, h = (int)blockIdx.y, q0 = tc_query_block(PW_FWG_ROWS);
    const int t = (int)threadIdx.x, wg = t / 128, w = t % 128 / 32, lane = t % 32;
    const int g = lane / 4, c = lane % 4;
    FlashAt at = flash_at(b, h, T, NH, NKV, hs);
    const int *m = mask ? mask + (size_t)b * T : 0;
    TcKv src = {qkv + at.k, qkv + at.v, (size_t)at.W, m, T, hs, 1};
    const int last = q0 + PW_FWG_ROWS < T ? q0 + PW_FWG_ROWS : T;
    const int nt = (last + PW_FWG_BK - 1) / PW_FWG_BK;
    fwg_issue(tiles, tiles + PW_FWG_TILE, flags, &src, 0); /* in flight while q is read */
    /* this lane's rows, whether each is a real query, the warp's first and the warpgroup's
     * last query */
    const int wq0 = q0 + 64 * wg, r0 = wq0 + 16 * w + g, r8 = r0 + 8, first = wq0 + 16 * w;
    const int ok0 = r0 < T && flash_real(m, r0), ok8 = r8 < T && flash_real(m, r8);
    uint32_t qa[4][4];
    {
        const uint16_t *x0 = qkv + at.q + (size_t)r0 * at.W, *x8 = x0 + 8 * (size_t)at.W;
        PW_UNROLL
        for (int kk = 0; kk < 4; kk++) {
            int d = kk * 16 + 2 * c;
            qa[kk][0] = tc_pair(x0, d, hs, ok0);
            qa[kk][1] = tc_pair(x8, d, hs, ok8);
            qa[kk][2] = tc_pair(x0, d + 8, hs, ok0);
            qa[kk][3] = tc_pair(x8, d + 8, hs, ok8);
        }
    }
    float mx0 = -INFINITY, mx8 = -INFINITY, l0 = 0.0f, l8 = 0.0f, o[32], s[32];
    PW_UNROLL
    for (int v = 0; v < 32; v++) o[v] = 0.0f;
    for (int it = 0; it < nt; it++) {
        const int k0 = it * PW_FWG_BK, cur = it & 1;
        uint8_t *kt = tiles + 2 * cur * PW_FWG_TILE, *vt = kt + PW_FWG_TILE;
        const int *ok = flags + cur * PW_FWG_BK;
        if (it + 1 < nt) {
            uint8_t *kn = tiles + 2 * (cur ^ 1) * PW_FWG_TILE;
            fwg_issue(kn, kn + PW_FWG_TILE, flags + (cur ^ 1) * PW_FWG_BK, &src, k0 + PW_FWG_BK);
            pw_cp_wait_but_one();
        } else {
            pw_cp_wait_all();
        }
        int pad = tc_padded(ok, k0, PW_FWG_BK, T);
        if (pad) fwg_scrub(kt, vt, ok);
        pw_wg_proxy_fence();
        __syncthreads(); /* the tile is the block's, as the async proxy sees it */
        if (k0 <= wq0 + 63) { /* some key at or before the warpgroup's last query */
            const uint64_t dk = pw_wg_desc(pw_smem(kt), 0, 8 * PW_WG_ROW);
            const uint64_t dv = pw_wg_desc(pw_smem(vt), 0, 8 * PW_WG_ROW);
            pw_wg_fence();
            PW_UNROLL
            for (int kk = 0; kk < 4; kk++) pw_wg_rs_k(s, qa[kk], dk + 2 * kk, kk > 0);
            pw_wg_commit();
            pw_wg_wait(0);
            /* every key of the tile real and at or before the warp's first query: no mask */
            if (pad || k0 + PW_FWG_BK - 1 > first || k0 + PW_FWG_BK > T) {
                PW_UNROLL
                for (int v = 0; v < 32; v++) {
                    int j = 8 * (v / 4) + 2 * c + (v & 1), row = v % 4 < 2 ? r0 : r8;
                    int keep = (k0 + j <= row) & (ok[j] != 0);
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
            /* slice j (keys 16 j .. 16 j + 15) of P as the A fragment: 8-column tiles 2j, 2j+1 */
            PW_UNROLL
            for (int j = 0; j < 4; j++)
                PW_UNROLL
                for (int r = 0; r < 4; r++)
                    pa[j][r] = pw_bf16x2(s[8 * j + 2 * r], s[8 * j + 2 * r + 1]);
            mx0 = t0;
            mx8 = t8;
            pw_wg_fence();
            PW_UNROLL
            for (int j = 0; j < 4; j++) pw_wg_rs_mn(o, pa[j], dv + 128 * j, 1);
            pw_wg_commit();
            pw_wg_wait(0);
        }
        __syncthreads(); /* every warpgroup is done with this buffer before it is refilled */
    }
    const size_t ld = (size_t)NH * hs, oat = (size_t)b * T * ld + (size_t)h * hs;
    float L0 = tc_quad_sum(l0), L8 = tc_quad_sum(l8);
    /* l >= 1 at a real query (its own key is real and at the max or below it) */
    float mul0 = ok0 ? 1.0f / L0 : 0.0f, mul8 = ok8 ? 1.0f / L8 : 0.0f;
    PW_UNROLL
    for (int v = 0; v < 32; v++) {
        int d = 8 * (v / 4) + 2 * c + (v & 1), row = v % 4 < 2 ? r0 : r8;
        if (row >= T) continue;
        float y = o[v] * (v % 4 < 2 ? mul0 : mul8);
        size_t i = oat + (size_t)row * ld + d;
        if (out) out[i] = y;
        if (out16) out16[i] = pw_bf16_bits(y);
    }
    float *lb = lse + ((size_t)b * NH + h) * T;
    if (c == 0 && r0 < T) lb[r0] = ok0 ? mx0 * scale + logf(L0) : 0.0f;
    if (c == 0 && r8 < T) lb[r8] = ok8 ? mx8 * scale + logf(L8) : 0.0f;
}

#endif
