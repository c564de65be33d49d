/* flash_tc.cuh: the tensor-core attention kernels (flash_tc_kernels.cuh) for each bucket of head
 * sizes, pw_flash_tc_{fwd,dq,dkv}_{32,64,128} and pw_flash_tc_drow; included by
 * attention_bf16.cu, and compiled as C on the host by tests/cuda/test_flash_tc_emu.c (which
 * brings emu.h's pw_mma_bf16 and pw_bf16x2 in place of mma.cuh's). */
#ifndef PW_FLASH_TC_CUH
#define PW_FLASH_TC_CUH

#include "bf16.cuh"
#include "flash_common.cuh"

#define FLASH_HS 32
#include "flash_tc_kernels.cuh"
#undef FLASH_HS
#define FLASH_HS 64
#include "flash_tc_kernels.cuh"
#undef FLASH_HS
#define FLASH_HS 128
#include "flash_tc_kernels.cuh"
#undef FLASH_HS

#endif
