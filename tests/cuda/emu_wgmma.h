/* emu_wgmma.h: the warpgroup products of src/kernels/cuda/wgmma.cuh on the host, for emu.h
 * (which includes this at its end). Each of the 128 threads of a warpgroup posts its
 * descriptors (and its A registers in the _rs forms), the warpgroup meets, each thread computes
 * its own 32 accumulators from the operands as the descriptors lay them out in shared memory
 * (wgmma.cuh's formulas, the swizzle of wg_tile.cuh on the address bits), in double and rounded
 * once into d, and the warpgroup meets again. A layout put wrong in the kernel (a chunk not
 * swizzled, a descriptor moved by the wrong step, a fragment in the wrong register) gives a
 * wrong product here as on the GPU; whether these formulas are the GPU's is what
 * tests/cuda/test_cuda_wgmma.c checks there, on the probe kernel that test_wgmma_emu.c runs here.
 *
 * Shared addresses in a descriptor are offsets into the launch's dynamic shared memory (its
 * base 1024-byte aligned, as a kernel aligns its tiles on the GPU): the operands must live
 * there. Stops the run on what the hardware would not do as meant: threads of one warpgroup
 * giving different descriptors, a swizzle other than 128 bytes, a base offset, an operand
 * outside the dynamic shared memory, a product in a partial warpgroup. In the race-checked build
 * each thread's reads of the operand elements its accumulators need are its own loads at the
 * product (the hardware may read them until the wait that retires the batch; that later window
 * is not checked). The fences, the commit and the wait do nothing here (the products are done at
 * once). */
#ifndef PW_TEST_CUDA_EMU_WGMMA_H
#define PW_TEST_CUDA_EMU_WGMMA_H

#include "wg_tile.cuh"

static EMU_HW inline void pw_wg_fence(void) {}
static EMU_HW inline void pw_wg_commit(void) {}
#define pw_wg_wait(n) ((void)(n))
static EMU_HW inline void pw_wg_hold(float d[32]) { (void)d; }
static EMU_HW inline void pw_wg_proxy_fence(void) {}

static inline uint64_t pw_wg_desc(pw_smem_t addr, uint32_t lbo, uint32_t sbo)
{
    uintptr_t off = addr - (uintptr_t)emu_dyn_smem;
    if (addr < (uintptr_t)emu_dyn_smem || off >= emu_dyn_bytes) {
        fprintf(stderr, "emu: wgmma descriptor of %#lx: not in the dynamic shared memory\n",
                (unsigned long)addr);
        exit(1);
    }
    return pw_wg_pack((uint32_t)off, lbo, sbo);
}

typedef struct EmuWgPost {
    uint64_t da, db;
    uint32_t a[4];
    int acc;
} EmuWgPost;

static EmuWgPost emu_wg_post[EMU_MAX_WARPS * 32];

enum { EMU_WG_K, EMU_WG_MN };


/* the bfloat16 at (mn, k) of a 16-deep slice that descriptor d lays out (major: EMU_WG_*) */
static inline float emu_wg_elem(uint64_t d, int major, int mn, int k)
{
    uint32_t start = (uint32_t)(d & 0x3fffu) << 4, lbo = (uint32_t)(d >> 16 & 0x3fffu) << 4;
    uint32_t sbo = (uint32_t)(d >> 32 & 0x3fffu) << 4, off;
    if (major == EMU_WG_K)
        off = start + (uint32_t)(mn % 8) * 128 + (uint32_t)(mn / 8) * sbo + 2u * (uint32_t)k;
    else
        off = start + 2u * (uint32_t)(mn % 64) + (uint32_t)(mn / 64) * lbo +
              (uint32_t)(k % 8) * 128 + (uint32_t)(k / 8) * sbo;
    off = pw_wg_swizzle(off);
    if ((size_t)off + 2 > emu_dyn_bytes) {
        fprintf(stderr, "emu: wgmma operand at %u: past the %zu bytes of dynamic shared memory\n",
                off, emu_dyn_bytes);
        exit(1);
    }
    return pw_bf16_to_f32(*(const uint16_t *)((const char *)emu_dyn_smem + off));
}

static inline void emu_wg_check_desc(uint64_t d)
{
    if (d >> 62 != 1 || (d >> 49 & 7u) != 0) {
        fprintf(stderr, "emu: wgmma descriptor %#llx: not the 128-byte swizzle at base offset 0\n",
                (unsigned long long)d);
        exit(1);
    }
}

/* A[m][k] of warpgroup g's 16-deep slice: from its threads' registers (mma.cuh's A fragment of
 * each warp's 16 rows), or from shared memory */
static inline float emu_wg_A(unsigned int g, int from_regs, int m, int k)
{
    if (!from_regs) return emu_wg_elem(emu_wg_post[g * 128].da, EMU_WG_K, m, k);
    int lane = 4 * (m % 8) + (k % 8) / 2, reg = (m % 16 >= 8) + 2 * (k >= 8);
    return emu_half(emu_wg_post[g * 128 + (m / 16) * 32 + lane].a[reg], k & 1);
}

static inline void emu_wg_product(float d[32], uint64_t da, const uint32_t a[4], uint64_t db,
                                  int acc, int from_regs, int b_major)
{
    unsigned int g = emu_tid / 128, t = emu_tid % 128, n = blockDim.x * blockDim.y * blockDim.z;
    if (n < (g + 1) * 128) {
        fprintf(stderr, "emu: wgmma in a partial warpgroup\n");
        exit(1);
    }
    EmuWgPost *me = &emu_wg_post[emu_tid];
    me->da = da;
    me->db = db;
    me->acc = acc;
    if (a) memcpy(me->a, a, sizeof me->a);
    emu_barrier_wait(&emu_wg_bar[g]);
    const EmuWgPost *first = &emu_wg_post[g * 128];
    if ((!from_regs && me->da != first->da) || me->db != first->db || me->acc != first->acc) {
        fprintf(stderr, "emu: wgmma: thread %u of warpgroup %u gives other operands\n", t, g);
        exit(1);
    }
    if (!from_regs) emu_wg_check_desc(da);
    emu_wg_check_desc(db);
    unsigned int w = t / 32, lane = t % 32;
    for (int v = 0; v < 32; v++) {
        int m = (int)(16 * w + lane / 4 + 8 * ((v / 2) % 2));
        int col = 8 * (v / 4) + 2 * (int)(lane % 4) + v % 2;
        double s = 0.0;
        for (int k = 0; k < 16; k++)
            s += (double)emu_wg_A(g, from_regs, m, k) * emu_wg_elem(db, b_major, col, k);
        d[v] = (float)((acc ? d[v] : 0.0) + s);
    }
    emu_barrier_wait(&emu_wg_bar[g]);
}

static inline void pw_wg_ss_k(float d[32], uint64_t da, uint64_t db, int acc)
{
    emu_wg_product(d, da, NULL, db, acc, 0, EMU_WG_K);
}

static inline void pw_wg_rs_k(float d[32], const uint32_t a[4], uint64_t db, int acc)
{
    emu_wg_product(d, 0, a, db, acc, 1, EMU_WG_K);
}

static inline void pw_wg_rs_mn(float d[32], const uint32_t a[4], uint64_t db, int acc)
{
    emu_wg_product(d, 0, a, db, acc, 1, EMU_WG_MN);
}

#endif
