/* check.c: the failure path of PW_CUDA_CHECK and PW_CUBLAS_CHECK (pw_cuda_check.h): format the
 * message once, then hand it to the handler a higher layer installed, or print it and exit. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "pw_cuda_check.h"

static PwCudaFailFn fail_handler = NULL;

PwCudaFailFn pw_cuda_set_fail_handler(PwCudaFailFn fn)
{
    PwCudaFailFn old = fail_handler;
    fail_handler = fn;
    return old;
}

void pw_cuda_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (fail_handler) fail_handler(file, line, msg);
    /* One write with the whole line, as the runtime's fatal path does, so that lines of several
     * processes do not interleave. exit, not abort: the failure is already described, a core
     * dump adds nothing to it. */
    fprintf(stderr, "[ppo_world] %s:%d: %s\n", file, line, msg);
    fflush(stderr);
    exit(1);
}
