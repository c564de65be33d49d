/* flash.cuh: the fused attention kernels (flash_kernels.cuh) for each bucket of head sizes,
 * pw_flash_{fwd,dq,dkv}_{32,64,128}; included by attention.cu, and compiled as C on the host by
 * tests/cuda/test_flash_emu.c. PW_UNROLL and PW_UNROLL_BY come from common.cuh on the
 * GPU, and from tests/cuda/emu.h with the rest of what it emulates on the host. */
#ifndef PW_FLASH_CUH
#define PW_FLASH_CUH

#define FLASH_HS 32
#include "flash_kernels.cuh"
#undef FLASH_HS
#define FLASH_HS 64
#include "flash_kernels.cuh"
#undef FLASH_HS
#define FLASH_HS 128
#include "flash_kernels.cuh"
#undef FLASH_HS

#endif
