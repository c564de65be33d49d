/* gpu_probe.c: for the GPU end-to-end scripts (test_cuda_ppo.sh, test_quickstart_gpu.sh): exit 0
 * with the device count when a CUDA device can be seen, else say why not and exit 77 (skip). */
#include <stdio.h>

#include "pw_device.h"

enum { SKIP = 77 }; /* meson's skip code, PW_SKIP_CODE of tests/pw_test.h */

int main(void)
{
    int n = pw_device_count();
    if (n <= 0) {
        printf("no CUDA device can be seen: skipped\n");
        return SKIP;
    }
    printf("%d CUDA device(s)\n", n);
    return 0;
}
