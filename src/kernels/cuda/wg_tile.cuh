/* wg_tile.cuh: the shared-memory tiles the warpgroup products read (wgmma.cuh says why they are
 * swizzled and how a descriptor finds an element), for the kernels that use them and for
 * tests/cuda/emu_wgmma.h, which reads them back the way the hardware does. A tile is rows of 64
 * bfloat16 (128 bytes), 1024-byte aligned. C subset of CUDA: compiled on the host too; the
 * includer provides cp_async.cuh's pw_smem (emu.h's on the host). */
#ifndef PW_CUDA_WG_TILE_CUH
#define PW_CUDA_WG_TILE_CUH

#include <stdint.h>

#define PW_WG_ROW 128u   /* bytes of a tile row: 64 bfloat16 */
#define PW_WG_ATOM 1024u /* 8 rows: the swizzle's period, and a tile's alignment */
/* a tile's descriptor offsets (wgmma.cuh): from one 8-row group to the next, SBO = 1024 bytes,
 * whether the tile is read K-major or MN-major; LBO unused by these shapes (a slice's 16 k of a
 * K-major row and the 64 n of an MN-major one each lie within one 128-byte row), set to 16 bytes,
 * the value the swizzled layouts are documented to assume */
#define PW_WG_LBO 16u
#define PW_WG_SBO PW_WG_ATOM

/* the byte of chunk c (16 bytes, 8 bfloat16) of row r of a tile */
static __device__ __forceinline__ uint32_t pw_wg_chunk(int r, int c)
{
    return (uint32_t)r * PW_WG_ROW + ((uint32_t)(c ^ (r & 7)) << 4);
}

/* A descriptor's bits (wgmma.cuh) for a start address, LBO and SBO in bytes (each / 16 in 14
 * bits) and the 128-byte swizzle: on the GPU the start is a shared address, on the host
 * (tests/cuda/emu_wgmma.h) an offset into the launch's dynamic shared memory */
static __device__ __forceinline__ uint64_t pw_wg_pack(uint32_t start, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((start & 0x3ffffu) >> 4) | (uint64_t)((lbo & 0x3ffffu) >> 4) << 16 |
           (uint64_t)((sbo & 0x3ffffu) >> 4) << 32 | (uint64_t)1 << 62;
}

/* The tiles' base: dynamic shared memory from its first 1024-byte boundary (a kernel asks for
 * PW_WG_ATOM bytes more than its tiles take) */
static __device__ __forceinline__ uint8_t *pw_wg_base(uint8_t *smem)
{
    return smem + ((PW_WG_ATOM - (uint32_t)(pw_smem(smem) & (PW_WG_ATOM - 1))) & (PW_WG_ATOM - 1));
}

/* the address bits the hardware swizzles: bits 4-6 XOR bits 7-9 (an offset from a 1024-byte
 * aligned base; pw_wg_chunk(r, c) == pw_wg_swizzle(r * 128 + c * 16)) */
static __device__ __forceinline__ uint32_t pw_wg_swizzle(uint32_t off)
{
    return off ^ ((off >> 7 & 7u) << 4);
}

#endif
