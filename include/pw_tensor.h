/* pw_tensor.h: a tensor as every layer sees it (contiguous, row-major, on the host or a GPU), its
 * element types and devices. Header-only, so that the model layer and the runtime share it. */
#ifndef PW_TENSOR_H
#define PW_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum PwDtype {
    PW_DTYPE_F32 = 0,
    PW_DTYPE_F64,
    PW_DTYPE_BF16,
    PW_DTYPE_F16,
    PW_DTYPE_I32,
    PW_DTYPE_I64,
    PW_DTYPE_U8,
    PW_DTYPE_COUNT
} PwDtype;

/* Where memory lives and work runs. A CUDA tensor also names its GPU (device_id). */
typedef enum PwDevice { PW_DEVICE_CPU = 0, PW_DEVICE_CUDA } PwDevice;

#define PW_MAX_DIMS 6

typedef struct PwTensor {
    void *data;
    PwDtype dtype;
    int ndim;
    int64_t shape[PW_MAX_DIMS];
    PwDevice device;
    int device_id; /* the GPU of a CUDA tensor (0 on the host) */
} PwTensor;

static inline size_t pw_dtype_size(PwDtype t)
{
    static const size_t sizes[PW_DTYPE_COUNT] = {4, 8, 2, 2, 4, 8, 1};
    return ((int)t >= 0 && t < PW_DTYPE_COUNT) ? sizes[t] : 0;
}

static inline const char *pw_dtype_name(PwDtype t)
{
    static const char *const names[PW_DTYPE_COUNT] = {"f32", "f64", "bf16", "f16",
                                                      "i32", "i64", "u8"};
    return ((int)t >= 0 && t < PW_DTYPE_COUNT) ? names[t] : "?";
}

static inline int64_t pw_tensor_numel(const PwTensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

static inline size_t pw_tensor_bytes(const PwTensor *t)
{
    return (size_t)pw_tensor_numel(t) * pw_dtype_size(t->dtype);
}

/* A tensor over `data` on `device` with the given shape (ndim <= PW_MAX_DIMS). */
static inline PwTensor pw_tensor_on(void *data, PwDtype dtype, int ndim, const int64_t *shape,
                                    PwDevice device, int device_id)
{
    PwTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.ndim = ndim < 0 ? 0 : (ndim > PW_MAX_DIMS ? PW_MAX_DIMS : ndim);
    for (int i = 0; i < t.ndim; i++) t.shape[i] = shape[i];
    t.device = device;
    t.device_id = device == PW_DEVICE_CUDA ? device_id : 0;
    return t;
}

/* A host tensor over `data`. */
static inline PwTensor pw_tensor_host(void *data, PwDtype dtype, int ndim, const int64_t *shape)
{
    return pw_tensor_on(data, dtype, ndim, shape, PW_DEVICE_CPU, 0);
}

#endif
