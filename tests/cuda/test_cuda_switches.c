/* test_cuda_switches.c: the CUDA backend's process-wide switches (pw_kernels_cuda.h) hold what
 * they were set to and start at their documented defaults: the fused attention, the cache
 * attention's split kernel and its group kernel on, the epilogue products' timing, the few-row
 * products' kernel, programmatic dependent launch, LayerNorm's float4 forward and the attention's
 * fused backward off (until a GPU has timed them, or since it has), the bf16-output products'
 * bf16 bias and the GELU epilogues on (measured), the products' forced split-K none (a hook: 2
 * to 16 parts kept, more taken as 16, 1 and below as none), the tensor-core attention's build for
 * two blocks an SM, where any value but 3 is taken as 2, the bias gradients' column sums 8
 * columns a thread on (the scalar sums' bits). Host state only: no GPU. */
#include "pw_kernels_cuda.h"
#include "pw_test.h"

/* a switch that starts at def (0 or 1): any non-zero value sets it on (1), 0 off; left at def */
static void by_default(const char *what, int def, void (*set)(int), int (*get)(void))
{
    CHECK(get() == def, "%s: %s by default, got %d", what, def ? "on" : "off", get());
    set(7);
    CHECK(get() == 1, "%s: non-zero is on, got %d", what, get());
    set(0);
    CHECK(get() == 0, "%s: off when set off, got %d", what, get());
    set(def);
}
#define off_by_default(what, set, get) by_default(what, 0, set, get)
#define on_by_default(what, set, get) by_default(what, 1, set, get)

int main(void)
{
    CHECK(pw_cuda_get_flash() == 1, "fused attention on by default");
    CHECK(pw_cuda_get_cache_split() == 1, "split cache kernel on by default");
    on_by_default("group cache kernel", pw_cuda_set_cache_group, pw_cuda_get_cache_group);
    off_by_default("epilogue products timed", pw_cuda_set_lt_tune, pw_cuda_get_lt_tune);
    off_by_default("every product through cuBLASLt", pw_cuda_set_lt_all, pw_cuda_get_lt_all);
    off_by_default("attention's fused backward", pw_cuda_set_flash_fused_bwd,
                   pw_cuda_get_flash_fused_bwd);
    on_by_default("GELU in the epilogues", pw_cuda_set_lt_gelu, pw_cuda_get_lt_gelu);
    off_by_default("attention forward on wgmma", pw_cuda_set_flash_wgmma,
                   pw_cuda_get_flash_wgmma);
    /* its schedule's modes: none by default, a mode built kept, any other none */
    CHECK(pw_cuda_get_flash_wgmma_mode() == 0, "wgmma attention's mode: %d by default",
          pw_cuda_get_flash_wgmma_mode());
    pw_cuda_set_flash_wgmma_mode(PW_WGMMA_ONE_GROUP | PW_WGMMA_SWAP);
    CHECK(pw_cuda_get_flash_wgmma_mode() == 10, "wgmma attention's mode: 10 kept as %d",
          pw_cuda_get_flash_wgmma_mode());
    pw_cuda_set_flash_wgmma_mode(PW_WGMMA_SERIAL | PW_WGMMA_SWAP);
    CHECK(pw_cuda_get_flash_wgmma_mode() == 0, "wgmma attention's mode: 9 (not built) as %d",
          pw_cuda_get_flash_wgmma_mode());
    off_by_default("few-row products' kernel", pw_cuda_set_skinny, pw_cuda_get_skinny);
    off_by_default("programmatic dependent launch", pw_cuda_set_pdl, pw_cuda_get_pdl);
    off_by_default("LayerNorm's float4 forward", pw_cuda_set_ln_vec, pw_cuda_get_ln_vec);
    on_by_default("column sums 8 columns a thread", pw_cuda_set_colsum_vec,
                  pw_cuda_get_colsum_vec);
    CHECK(pw_cuda_pdl_launches() == 0, "no launch, none made as a dependent: %lu",
          pw_cuda_pdl_launches());
    /* its grid's aim: 2 blocks an SM by default, 1 to 8 kept, 0 and below the default, more 8 */
    CHECK(pw_cuda_get_skinny_blocks() == 2, "few-row kernel: 2 blocks an SM by default, got %d",
          pw_cuda_get_skinny_blocks());
    const int aims[5][2] = {{1, 1}, {4, 4}, {8, 8}, {9, 8}, {0, 2}};
    for (int i = 0; i < 5; i++) {
        pw_cuda_set_skinny_blocks(aims[i][0]);
        CHECK(pw_cuda_get_skinny_blocks() == aims[i][1], "few-row kernel: %d blocks an SM taken "
              "as %d, got %d", aims[i][0], aims[i][1], pw_cuda_get_skinny_blocks());
    }
    CHECK(pw_cuda_get_lt_bias16() == 1, "bf16-output products take a bf16 bias by default");
    pw_cuda_set_lt_bias16(0);
    CHECK(pw_cuda_get_lt_bias16() == 0, "bf16 bias: off when set off");
    pw_cuda_set_lt_bias16(3);
    CHECK(pw_cuda_get_lt_bias16() == 1, "bf16 bias: non-zero is on");
    CHECK(pw_cuda_get_lt_split() == 0, "no forced split-K by default, got %d",
          pw_cuda_get_lt_split());
    const int parts[][2] = {{4, 4}, {2, 2}, {16, 16}, {17, 16}, {1000, 16}, {1, 0}, {-2, 0},
                            {0, 0}};
    for (int i = 0; i < 8; i++) {
        pw_cuda_set_lt_split(parts[i][0]);
        CHECK(pw_cuda_get_lt_split() == parts[i][1], "split-K %d taken as %d, got %d",
              parts[i][0], parts[i][1], pw_cuda_get_lt_split());
    }
    unsigned long plans = 1, split = 1;
    pw_cuda_lt_plans(&plans, &split);
    CHECK(plans == 0 && split == 0, "no product, no plan: %lu plans, %lu split", plans, split);
    CHECK(pw_cuda_get_flash_blocks() == 2, "two blocks an SM by default, got %d",
          pw_cuda_get_flash_blocks());
    pw_cuda_set_flash_blocks(3);
    CHECK(pw_cuda_get_flash_blocks() == 3, "3 kept, got %d", pw_cuda_get_flash_blocks());
    const int other[] = {0, 1, 2, 4, -3, 1000};
    for (int i = 0; i < 6; i++) {
        pw_cuda_set_flash_blocks(3);
        pw_cuda_set_flash_blocks(other[i]);
        CHECK(pw_cuda_get_flash_blocks() == 2, "%d taken as 2, got %d", other[i],
              pw_cuda_get_flash_blocks());
    }
    pw_cuda_set_flash(0);
    pw_cuda_set_cache_split(0);
    CHECK(!pw_cuda_get_flash() && !pw_cuda_get_cache_split(), "both off when set off");
    pw_cuda_set_flash(7);
    pw_cuda_set_cache_split(7);
    CHECK(pw_cuda_get_flash() == 1 && pw_cuda_get_cache_split() == 1, "non-zero is on");
    return pw_test_done("test_cuda_switches");
}
