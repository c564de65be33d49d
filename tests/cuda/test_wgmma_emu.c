/* test_wgmma_emu.c: the probe of the warpgroup products (src/kernels/cuda/wgmma_probe_kernels.cuh,
 * the source nvcc compiles) under the host emulation (emu.h, emu_wgmma.h), each form against
 * the reference of wgmma_case.h bit for bit; and the emulator's reading of a descriptor checked
 * against hand-worked addresses, so that what the emulator holds the layouts to be is written
 * down twice: in its formulas and in numbers worked out from wgmma.cuh's description.
 * test_cuda_wgmma.c runs the same probe on an H100: where both pass, the layouts the kernels
 * build are the ones the hardware reads; where it fails there, its search over the descriptor's
 * offsets and the slices' step (wgmma_case.h) says which the hardware reads by, and that search
 * is run here too, on the emulator's reading: six matches a form (LBO unused), no other. And
 * the order the products keep (wgmma.cuh: fence, commit, wait, the proxy fence), broken one rule
 * at a time, each finding of the emulator's (and in the race-checked build the race check's)
 * counted by hand. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_test.h"

#include "wgmma_probe_kernels.cuh"

#include "pw_test.h"
#include "wgmma_case.h"

typedef struct Args {
    float *out;
    const uint16_t *a, *x;
    int form, lbo, sbo, step;
} Args;

static void probe(void *p)
{
    Args *a = p;
    pw_wgmma_probe_kernel(a->out, a->a, a->x, a->form, a->lbo, a->sbo, a->step);
}

/* wg_search's runner here: the probe under the emulator with the offsets and step given */
static void run_at(float *out, int form, int lbo, int sbo, int step, void *ctx)
{
    Args a = *(Args *)ctx;
    a.out = out, a.form = form, a.lbo = lbo, a.sbo = sbo, a.step = step;
    EmuDim3 grid = {1, 1, 1}, block = {PW_WG_PROBE_THREADS, 1, 1};
    emu_launch_smem(grid, block, PW_WG_PROBE_SMEM, probe, &a);
}

/* The order kernel: one warpgroup; A and X (wg_case) brought to swizzled tiles as the probe
 * brings them; d = A[:, 0:16] . X[:, 0:16]^T through the A-from-registers form, one batch,
 * waited for, stored as the probe stores it. Each mode breaks one rule:
 *  ORD_NO_FENCE: no pw_wg_fence before the product: each of the 128 threads is found (FENCE);
 *  ORD_EARLY: the accumulators read before the wait: NaN (the emulator's mark), nothing found;
 *  ORD_ACC: one written before the wait: found in each thread (ACC), the product stands;
 *  ORD_AREG: an A register changed before the wait: found in each thread (AREG);
 *  ORD_OPERAND: thread 0 writes X[0][0] between barriers before the wait: found by the 32
 *    threads whose columns hold column 0 (lane % 4 == 0; OPERAND), and in the race-checked build
 *    a write to a byte in flight (WG_INFLIGHT: 2 bytes); the product is the issue's;
 *  ORD_UNWAITED: no wait: each thread returns with its product in flight (UNWAITED), d is NaN;
 *  ORD_BATCHES: a second product e = d through the shared-memory form, in a batch of its own;
 *    pw_wg_wait(1) retires d's batch only (e still NaN there), pw_wg_wait(0) the other;
 *  ORD_NO_PROXY: the tiles stored by the threads with no proxy fence: nothing here, and in the
 *    race-checked build every read of X's slice by a product (1024 elements, each by the 32
 *    threads that hold its column: 65536 bytes, WG_PROXY). */
enum {
    ORD_OK,
    ORD_NO_FENCE,
    ORD_EARLY,
    ORD_ACC,
    ORD_AREG,
    ORD_OPERAND,
    ORD_UNWAITED,
    ORD_BATCHES,
    ORD_NO_PROXY,
    ORD_MODES
};

__global__ void k_order(float *out, float *out_e, float *early, const uint16_t *a,
                        const uint16_t *x, int mode)
{
    PW_DYN_SMEM(uint8_t, smem);
    uint8_t *sa = pw_wg_base(smem), *sx = sa + 64 * PW_WG_ROW;
    const int t = (int)threadIdx.x, w = t / 32, lane = t % 32, g = lane / 4, c = lane % 4;
    for (int i = t; i < 64 * 8; i += 128) {
        int r = i / 8, ch = i % 8;
        if (mode == ORD_NO_PROXY) {
            *(uint4 *)(sa + pw_wg_chunk(r, ch)) = *(const uint4 *)(a + r * 64 + ch * 8);
            *(uint4 *)(sx + pw_wg_chunk(r, ch)) = *(const uint4 *)(x + r * 64 + ch * 8);
        } else {
            pw_cp_async16(pw_smem(sa) + pw_wg_chunk(r, ch), a + r * 64 + ch * 8, 16);
            pw_cp_async16(pw_smem(sx) + pw_wg_chunk(r, ch), x + r * 64 + ch * 8, 16);
        }
    }
    pw_cp_commit();
    pw_cp_wait_all();
    if (mode != ORD_NO_PROXY) pw_wg_proxy_fence();
    __syncthreads();
    const uint16_t *a0 = a + (16 * w + g) * 64, *a8 = a0 + 8 * 64;
    uint32_t af[4] = {(uint32_t)a0[2 * c] | (uint32_t)a0[2 * c + 1] << 16,
                      (uint32_t)a8[2 * c] | (uint32_t)a8[2 * c + 1] << 16,
                      (uint32_t)a0[2 * c + 8] | (uint32_t)a0[2 * c + 9] << 16,
                      (uint32_t)a8[2 * c + 8] | (uint32_t)a8[2 * c + 9] << 16};
    float d[32], e[32];
    for (int v = 0; v < 32; v++) d[v] = e[v] = 0.0f;
    const uint64_t da = pw_wg_desc(pw_smem(sa), PW_WG_LBO, PW_WG_SBO);
    const uint64_t dx = pw_wg_desc(pw_smem(sx), PW_WG_LBO, PW_WG_SBO);
    pw_wg_hold(d);
    if (mode != ORD_NO_FENCE) pw_wg_fence();
    pw_wg_rs_k(d, af, dx, 0);
    if (mode == ORD_BATCHES) {
        pw_wg_commit();
        pw_wg_ss_k(e, da, dx, 0);
    }
    pw_wg_commit();
    if (mode == ORD_EARLY) early[t] = d[0];
    if (mode == ORD_ACC) d[5] = 1.0f;
    if (mode == ORD_AREG) af[1] ^= 1u;
    if (mode == ORD_OPERAND) {
        __syncthreads();
        if (t == 0) *(uint16_t *)sx = pw_bf16_from_f32(100.0f);
        __syncthreads();
    }
    if (mode == ORD_BATCHES) {
        pw_wg_wait(1);
        early[t] = e[0] + d[0] * 0.0f; /* NaN: e's batch is in flight */
    }
    if (mode != ORD_UNWAITED) pw_wg_wait(0);
    pw_wg_hold(d);
    for (int v = 0; v < 32; v++) {
        int m = 16 * w + g + 8 * ((v / 2) % 2), n = 8 * (v / 4) + 2 * c + v % 2;
        out[m * 64 + n] = d[v];
        out_e[m * 64 + n] = e[v];
    }
}

typedef struct OrdArgs {
    float *out, *out_e, *early;
    const uint16_t *a, *x;
    int mode;
} OrdArgs;

static void order_body(void *p)
{
    OrdArgs *o = p;
    k_order(o->out, o->out_e, o->early, o->a, o->x, o->mode);
}

/* how many of n floats are NaN */
static int nans(const float *v, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += isnan(v[i]) != 0;
    return k;
}

/* each mode of k_order: its findings by kind against the hand count, its output against the
 * reference (or NaN where the mode leaves it so) */
static void order_cases(const uint16_t *a, const uint16_t *x)
{
    static float out[WG_N * WG_N], out_e[WG_N * WG_N], want[WG_N * WG_N], early[128];
    /* d over the first slice: X's first 16 columns, A's first 16 (exact in float32) */
    for (int m = 0; m < WG_N; m++)
        for (int n = 0; n < WG_N; n++) {
            double s = 0.0;
            for (int k = 0; k < 16; k++)
                s += (double)pw_bf16_to_f32(a[m * 64 + k]) * pw_bf16_to_f32(x[n * 64 + k]);
            want[m * 64 + n] = (float)s;
        }
    static const char *const name[ORD_MODES] = {
        "in order", "no fence", "accumulators read early", "accumulators written early",
        "A registers changed early", "operand written early", "not waited for",
        "two batches, wait(1)", "tiles stored, no proxy fence"};
    emu_wg_fatal = 0;
#ifdef EMU_RACE
    emu_race_fatal = 0;
#endif
    for (int mode = 0; mode < ORD_MODES; mode++) {
        unsigned long want_f[EMU_WG_KINDS] = {0};
        want_f[EMU_WG_FENCE] = mode == ORD_NO_FENCE ? 128 : 0;
        want_f[EMU_WG_ACC] = mode == ORD_ACC ? 128 : 0;
        want_f[EMU_WG_AREG] = mode == ORD_AREG ? 128 : 0;
        want_f[EMU_WG_OPERAND] = mode == ORD_OPERAND ? 32 : 0;
        want_f[EMU_WG_UNWAITED] = mode == ORD_UNWAITED ? 128 : 0;
        for (int i = 0; i < 128; i++) early[i] = 0.0f;
        OrdArgs o = {out, out_e, early, a, x, mode};
        emu_wg_reset();
#ifdef EMU_RACE
        emu_race_reset();
#endif
        emu_launch_smem(d1(1), d1(128), 2 * 64 * PW_WG_ROW + PW_WG_ATOM, order_body, &o);
        int bad = 0;
        for (int i = 0; i < WG_N * WG_N; i++) bad += out[i] != want[i];
        int want_bad = mode == ORD_UNWAITED ? WG_N * WG_N : 0;
        int early_nan = nans(early, 128);
        int want_early = mode == ORD_EARLY || mode == ORD_BATCHES ? 128 : 0;
        printf("  order, %-28s found", name[mode]);
        for (int k = 0; k < EMU_WG_KINDS; k++) printf(" %lu", emu_wg_found[k]);
        printf(", output %d wrong, %d early NaN", bad, early_nan);
        for (int k = 0; k < EMU_WG_KINDS; k++)
            CHECK(emu_wg_found[k] == want_f[k], "order, %s: %lu of '%s', want %lu", name[mode],
                  emu_wg_found[k], emu_wg_names[k], want_f[k]);
        CHECK(bad == want_bad, "order, %s: %d outputs wrong, want %d", name[mode], bad, want_bad);
        CHECK(early_nan == want_early, "order, %s: %d early reads NaN, want %d", name[mode],
              early_nan, want_early);
        if (mode == ORD_BATCHES)
            CHECK(memcmp(out_e, want, sizeof want) == 0, "order: the second batch's product");
#ifdef EMU_RACE
        unsigned long in_flight = mode == ORD_OPERAND ? 2 : 0;
        unsigned long proxy = mode == ORD_NO_PROXY ? 1024 * 2 * 32 : 0;
        printf(", races: %lu in flight, %lu unfenced", emu_race_bytes[EMU_WG_INFLIGHT],
               emu_race_bytes[EMU_WG_PROXY]);
        for (int k = 0; k < EMU_RACE_KINDS; k++) {
            unsigned long wk = k == EMU_WG_INFLIGHT ? in_flight : k == EMU_WG_PROXY ? proxy : 0;
            CHECK(emu_race_bytes[k] == wk, "order, %s: %lu bytes of '%s', want %lu", name[mode],
                  emu_race_bytes[k], emu_race_names[k], wk);
        }
#endif
        printf("\n");
    }
    emu_wg_fatal = 1;
#ifdef EMU_RACE
    emu_race_fatal = 1;
#endif
}

/* one element's byte in a tile at the start of dynamic shared memory: a value put there by
 * hand, then read back through a descriptor by the emulator */
static void check_address(int major, uint32_t start, uint32_t sbo, int mn, int k, uint32_t byte)
{
    uint16_t *h = (uint16_t *)((char *)emu_dyn_smem + byte);
    memset(emu_dyn_smem, 0, emu_dyn_bytes);
    *h = pw_bf16_from_f32(3.0f);
    uint64_t d = pw_wg_desc((pw_smem_t)emu_dyn_smem + start, 0, sbo);
    float v = emu_wg_elem(d, major, mn, k);
    printf("  %s (mn %d, k %d) from %u, SBO %u: byte %u %s\n", major ? "MN-major" : "K-major", mn,
           k, start, sbo, byte, v == 3.0f ? "ok" : "NOT THERE");
    CHECK(v == 3.0f, "descriptor address of (%d, %d)", mn, k);
}

int main(void)
{
    static uint16_t a[WG_N * WG_N], x[WG_N * WG_N];
    static float out[WG_N * WG_N], want[WG_N * WG_N];
    EmuDim3 grid = {1, 1, 1}, block = {PW_WG_PROBE_THREADS, 1, 1};
    for (int where = 0; where < 2; where++) {
        wg_case(a, x, where);
        for (int form = 0; form < PW_WG_PROBE_FORMS; form++) {
            Args args = {out, a, x, form, PW_WG_LBO, PW_WG_SBO, PW_WG_PROBE_STEP(form)};
            wg_reference(want, a, x, form);
            emu_launch_smem(grid, block, PW_WG_PROBE_SMEM, probe, &args);
            CHECK(wg_compare(out, want, form, where) == 0, "probe form %d", form);
        }
    }

    /* The search test_cuda_wgmma.c makes after a failure, here where nothing fails: LBO is
     * unused by these shapes, so each of the six values tried matches, with SBO 1024 and each
     * form's own step (32 bytes a slice K-major, 2048 MN-major), and nothing else does */
    wg_case(a, x, 0);
    for (int form = 0; form < PW_WG_PROBE_FORMS; form++) {
        Args ctx = {NULL, a, x, form, 0, 0, 0};
        wg_reference(want, a, x, form);
        int found = wg_search(run_at, &ctx, form, want);
        CHECK(found == 6, "search, form %d: %d combinations match, 6 wanted", form, found);
    }

    wg_case(a, x, 0);
    order_cases(a, x);

    /* Hand-worked (wgmma.cuh): K-major (mn, k) at start + (mn % 8) 128 + (mn / 8) SBO + 2k,
     * bits 4-6 of that XOR bits 7-9. (9, 3) from 0: 128 + 1024 + 6 = 1158, bits 7-9 = 1: 1174,
     * which is pw_wg_chunk(9, 0) + 6 = 1152 + 16 + 6. (13, 5) of the third slice (start 64):
     * 64 + 5 * 128 + 1024 + 10 = 1738, bits 7-9 = 5 (1738 = 13 * 128 + 74): 74 = chunk 4 + 10,
     * chunk 4 ^ 5 = 1: 1664 + 16 + 10 = 1690. MN-major (n, k) at start + 2n + (k % 8) 128 +
     * (k / 8) SBO: (37, 11) from 2048 (the second slice): 2048 + 74 + 384 + 1024 = 3530 = row 27,
     * byte 74 (chunk 4, + 10), 27 % 8 = 3, chunk 4 ^ 3 = 7: 3456 + 112 + 10 = 3578. */
    emu_dyn_smem = emu_race_dyn_alloc(8192);
    emu_dyn_bytes = 8192;
    check_address(EMU_WG_K, 0, 1024, 9, 3, 1174);
    check_address(EMU_WG_K, 64, 1024, 13, 5, 1690);
    check_address(EMU_WG_MN, 2048, 1024, 37, 11, 3578);
    emu_race_dyn_free(emu_dyn_smem);
    emu_dyn_smem = NULL;
    return pw_test_done("test_wgmma_emu");
}
