/* flash.cuh: the fused attention kernels (flash_kernels.cuh) for each bucket of head sizes,
 * pw_flash_{fwd,dq,dkv}_{32,64,128}; included by attention.cu, and compiled as C on the host by
 * tests/cuda/test_flash_emu.c. The includer defines PW_UNROLL and, on the host, what emu.h
 * emulates. */
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
