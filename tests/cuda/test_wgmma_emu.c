/* test_wgmma_emu.c: the probe of the warpgroup products (src/kernels/cuda/wgmma_probe_kernels.cuh,
 * the source nvcc compiles) under the host emulation (emu.h, emu_wgmma.h), each form against
 * the reference of wgmma_case.h bit for bit; and the emulator's reading of a descriptor checked
 * against hand-worked addresses, so that what the emulator holds the layouts to be is written
 * down twice: in its formulas and in numbers worked out from wgmma.cuh's description.
 * test_cuda_wgmma.c runs the same probe on an H100: where both pass, the layouts the kernels
 * build are the ones the hardware reads; where it fails there, its search over the descriptor's
 * offsets and the slices' step (wgmma_case.h) says which the hardware reads by, and that search
 * is run here too, on the emulator's reading: six matches a form (LBO unused), no other. */
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
