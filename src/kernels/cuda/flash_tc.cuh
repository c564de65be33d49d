/* flash_tc.cuh: the tensor-core attention kernels (flash_tc_kernels.cuh) for each bucket of head
 * sizes, pw_flash_tc_{fwd,dq,dkv}_{32,64,128} (and _64x3, the 64 bucket built for three blocks an
 * SM) and pw_flash_tc_prep; included by
 * attention_bf16.cu after mma.cuh and cp_async.cuh, and compiled as C on the host by
 * tests/cuda/test_flash_tc_emu.c (which brings emu.h's forms of their functions instead). */
#ifndef PW_FLASH_TC_CUH
#define PW_FLASH_TC_CUH

#include "bf16.cuh"
#include "flash_common.cuh"

#define FLASH_HS 32
#define FLASH_TAG 32
#include "flash_tc_kernels.cuh"
#undef FLASH_TAG
#undef FLASH_HS
#define FLASH_HS 64
#define FLASH_TAG 64
#include "flash_tc_kernels.cuh"
#undef FLASH_TAG
/* the same held to three blocks an SM (pw_cuda_set_flash_blocks): pw_flash_tc_*_64x3, with
 * tiles of 32 rows (of 64 it spills 88 to 340 bytes at 168 registers) */
#define FLASH_TAG 64x3
#define TC_MIN_BLOCKS 3
#define TC_TILE_ROWS 32
#include "flash_tc_kernels.cuh"
#undef FLASH_TAG
#undef FLASH_HS
#define FLASH_HS 128
#define FLASH_TAG 128
#include "flash_tc_kernels.cuh"
#undef FLASH_TAG
#undef FLASH_HS

#endif
