/* pw_safetensors.h: read and write safetensors files (the Hugging Face tensor container), each
 * written whole or not at all (pw_file.h). Every check on a file happens in pw_st_open, before a
 * tensor is used. */
#ifndef PW_SAFETENSORS_H
#define PW_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pw_bf16.h" /* the checkpoint writer's and reader's bfloat16 */
#include "pw_common.h"

/* The dtypes of the format. PW_DT_F32 is 0 so that a zeroed PwStWriteTensor means float32. */
typedef enum PwDType {
    PW_DT_F32 = 0,
    PW_DT_F16,
    PW_DT_BF16,
    PW_DT_F64,
    PW_DT_I8,
    PW_DT_I16,
    PW_DT_I32,
    PW_DT_I64,
    PW_DT_U8,
    PW_DT_U16,
    PW_DT_U32,
    PW_DT_U64,
    PW_DT_BOOL,
    PW_DT_COUNT
} PwDType;

#define PW_ST_MAX_NDIM 8

/* One tensor of an open file. data points into the mapped file and stays valid until
 * pw_st_close; it is little-endian and may be unaligned for files written elsewhere (ours and
 * Python's align each tensor to its element size), so read it through pw_st_read_* or memcpy. */
typedef struct PwStTensor {
    const char *name;
    PwDType dtype;
    int ndim;                          /* 0 for a scalar */
    int64_t shape[PW_ST_MAX_NDIM];
    int64_t numel;                     /* product of shape (1 for a scalar) */
    size_t nbytes;                     /* numel * pw_st_dtype_size(dtype) */
    const void *data;
} PwStTensor;

typedef struct PwSafetensors PwSafetensors;

/* "F32", "BF16", ... as the format spells them; "?" for an unknown value. */
const char *pw_st_dtype_name(PwDType dt);
/* Bytes per element; 0 for an unknown value. */
size_t pw_st_dtype_size(PwDType dt);

/* Map a file and validate all of it: header length, JSON, every entry's dtype, shape and
 * offsets, sizes, overlaps, gaps, trailing bytes, __metadata__. On error *out is NULL. */
int pw_st_open(PwSafetensors **out, const char *path, PwErr *err);
void pw_st_close(PwSafetensors *st);     /* NULL is fine */

const char *pw_st_path(const PwSafetensors *st);
int pw_st_count(const PwSafetensors *st);
/* Tensors in the order of their data offsets; i in [0, count). */
const PwStTensor *pw_st_get(const PwSafetensors *st, int i);
/* NULL if no tensor has that name. */
const PwStTensor *pw_st_find(const PwSafetensors *st, const char *name);
/* A value of the __metadata__ string map; NULL if the key (or the map) is absent. */
const char *pw_st_metadata(const PwSafetensors *st, const char *key);

/* Copy tensor `name` into dst as float32, converting from F32, F16, BF16 or F64. Fails if the
 * tensor is missing, has another dtype, or its shape is not expect_shape[0..expect_ndim). dst
 * must hold the product of expect_shape floats. */
int pw_st_read_f32(const PwSafetensors *st, const char *name, const int64_t *expect_shape,
                   int expect_ndim, float *dst, PwErr *err);
/* pw_st_read_f32 for a reader that needs the bytes once (a model load): the pages of the
 * mapping the tensor spans are given back to the kernel as they are converted, so that the
 * file does not stay resident in the process beside the floats made from it. The tensor stays
 * readable (a later read maps it again from the page cache). */
int pw_st_read_f32_once(const PwSafetensors *st, const char *name, const int64_t *expect_shape,
                        int expect_ndim, float *dst, PwErr *err);
/* Same for I32 or I64 into int32; a value outside int32 is an error naming the element. */
int pw_st_read_i32(const PwSafetensors *st, const char *name, const int64_t *expect_shape,
                   int expect_ndim, int32_t *dst, PwErr *err);

/* A tensor to write. data holds numel little-endian elements of dtype (a zeroed dtype means
 * F32); it may be NULL only when numel is 0. */
typedef struct PwStWriteTensor {
    const char *name;
    int ndim;
    int64_t shape[PW_ST_MAX_NDIM];
    const void *data;
    PwDType dtype;
} PwStWriteTensor;

/* Write n tensors atomically (temporary file in the same folder, fsync, rename, fsync of the
 * folder). The data buffer holds larger elements first so that each tensor is aligned to its
 * element size. metadata_kv is NULL or a NULL-terminated list of key, value, key, value, ...
 * strings stored under __metadata__. */
int pw_st_write(const char *path, const PwStWriteTensor *t, int n,
                const char *const *metadata_kv, PwErr *err);
/* The same with the data pushed in pieces, so that no buffer of a whole tensor is needed (the
 * AdamW moments gathered from a role's ranks: pw_model_optimizer_write_from): open writes the
 * header (the tensors' data pointers are not read) or returns NULL with a message; write appends
 * the next bytes of the data, in the file's order (larger elements first, then the order of t);
 * close commits the file when every byte came, no write failed and `discard` is 0, else leaves
 * what `path` held and returns -1 (with a message unless the caller discarded: its own). */
typedef struct PwStStream PwStStream;
PwStStream *pw_st_stream_open(const char *path, const PwStWriteTensor *t, int n,
                              const char *const *metadata_kv, PwErr *err);
void pw_st_stream_write(PwStStream *s, const void *data, size_t bytes);
int pw_st_stream_close(PwStStream *s, const char *path, int discard, PwErr *err);

/* ---- a model's weights in one or several files, as Hugging Face publishes them: the folder's
 * model.safetensors, or else model.safetensors.index.json ({"weight_map": {tensor: shard}})
 * with its shards beside it. Every file is mapped once and validated whole on open (pw_st_open);
 * the index must name only shard files of the same folder, every shard must exist and hold the
 * tensors the index puts in it. Messages name the index or the file at fault. */
typedef struct PwStSet PwStSet;
int pw_st_set_open(PwStSet **out, const char *dir, PwErr *err);
void pw_st_set_close(PwStSet *s); /* NULL is fine */
/* The path messages name for the set as a whole: model.safetensors, or the index. */
const char *pw_st_set_label(const PwStSet *s);
/* Its files (one, or the shards in the order the index first names them): i in [0, nfiles) */
int pw_st_set_nfiles(const PwStSet *s);
const PwSafetensors *pw_st_set_file(const PwStSet *s, int i);
/* The tensor `name` and (if file is not NULL) the file that holds it; NULL if the set has none. */
const PwStTensor *pw_st_set_find(const PwStSet *s, const char *name, const PwSafetensors **file);
/* Read tensor `name` as float32 into dst after checking it exists with exactly shape[0..ndim):
 * "tensor ... is missing" or "tensor ... has shape [..] but config.json implies [..]"; then
 * every value must be a weight (finite, at most PW_WEIGHT_LIMIT of pw_model.h in magnitude):
 * "FILE: tensor ... element I is NaN: refusing ...". It reads as pw_st_read_f32_once: loading a
 * model reads each tensor once, and the process holds the floats, not the file as well. */
int pw_st_set_read_f32(const PwStSet *s, const char *name, const int64_t *shape, int ndim,
                       float *dst, PwErr *err);

/* How pw_st_set_write stores a model's weights; zeroed: one float32 file. */
typedef struct PwStSetWriteOpts {
    PwDType dtype;          /* what float32 tensors are stored as: F32 or BF16 */
    size_t max_shard_bytes; /* 0: one file; else shards of at most this many bytes of tensor
                             * data (a larger tensor gets a shard of its own) */
} PwStSetWriteOpts;

/* Write t[0..n) (float32 tensors as o->dtype, others as they are) into dir the way
 * pw_st_set_open reads them and transformers' save_pretrained(max_shard_size=...) writes them:
 * model.safetensors when everything fits in one shard, else model-00001-of-0000N.safetensors,
 * ... (tensors in the given order, a shard closed when the next tensor would not fit) and
 * model.safetensors.index.json ({"metadata": {"total_size"}, "weight_map"}). Each file is
 * written atomically, the index after its shards; then the files of the other layout or of an
 * earlier save with another shard count are removed, so that the folder holds one set (a crash
 * before that leaves an earlier model.safetensors in force, which readers prefer). Converting
 * to BF16 holds one shard at a time. o NULL = zeroed. */
int pw_st_set_write(const char *dir, const PwStWriteTensor *t, int n,
                    const char *const *metadata_kv, const PwStSetWriteOpts *o, PwErr *err);

#endif
