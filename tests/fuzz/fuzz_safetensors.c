/* fuzz_safetensors.c: libFuzzer target for safetensors files (pw_st_open, and the one-file
 * weight set of a model folder): any bytes are refused, or every tensor they name reads. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "pw_safetensors.h"

/* Reads larger than this are skipped: the checks under test are on the header, and a 4 KiB
 * input can declare tensors far larger than it holds only if a check failed. */
#define MAX_READ (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write("model.safetensors", data, size);
    char path[1024];
    snprintf(path, sizeof path, "%s/model.safetensors", fuzz_dir_get());
    PwSafetensors *st;
    PwStSet *set;
    PwErr err;
    if (pw_st_open(&st, path, &err)) return 0;
    /* The same file as a model folder's weights, which is how a model load reads it. */
    if (pw_st_set_open(&set, fuzz_dir_get(), &err)) set = NULL;
    (void)pw_st_metadata(st, "format");
    for (int i = 0; i < pw_st_count(st); i++) {
        const PwStTensor *t = pw_st_get(st, i);
        if (t->numel > MAX_READ || pw_st_find(st, t->name) != t) continue;
        void *dst = malloc((size_t)t->numel * 4 + 1);
        if (!dst) exit(2);
        /* Each read checks the dtype itself: one of the first two refuses. */
        (void)pw_st_read_f32(st, t->name, t->shape, t->ndim, dst, &err);
        (void)pw_st_read_i32(st, t->name, t->shape, t->ndim, dst, &err);
        if (set) (void)pw_st_set_read_f32(set, t->name, t->shape, t->ndim, dst, &err);
        free(dst);
    }
    pw_st_set_close(set);
    pw_st_close(st);
    return 0;
}
