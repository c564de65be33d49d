/* safetensors.c: the safetensors container (u64 header length, JSON header, data buffer):
 * a reader that maps a file and proves every byte range sound before use, and an atomic writer. */
#include "pw_safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_file.h"

/* Tensor data is used in place, so the host must share the format's byte order. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; a big-endian host would need byte swapping"
#endif

/* The reference implementation refuses headers above 100 MB; a larger length is a corrupt
 * file, and refusing it early keeps a bad length from turning into a huge JSON parse. */
#define PW_ST_MAX_HEADER (100u * 1000u * 1000u)

/* ------------------------------------------------------------------------------------------ */
/* dtypes                                                                                      */

static const struct {
    const char *name;
    size_t size;
} pw_dtypes[PW_DT_COUNT] = {
    [PW_DT_F32] = {"F32", 4},  [PW_DT_F16] = {"F16", 2},   [PW_DT_BF16] = {"BF16", 2},
    [PW_DT_F64] = {"F64", 8},  [PW_DT_I8] = {"I8", 1},     [PW_DT_I16] = {"I16", 2},
    [PW_DT_I32] = {"I32", 4},  [PW_DT_I64] = {"I64", 8},   [PW_DT_U8] = {"U8", 1},
    [PW_DT_U16] = {"U16", 2},  [PW_DT_U32] = {"U32", 4},   [PW_DT_U64] = {"U64", 8},
    [PW_DT_BOOL] = {"BOOL", 1},
};

const char *pw_st_dtype_name(PwDType dt)
{
    return ((unsigned)dt < PW_DT_COUNT) ? pw_dtypes[dt].name : "?";
}

size_t pw_st_dtype_size(PwDType dt)
{
    return ((unsigned)dt < PW_DT_COUNT) ? pw_dtypes[dt].size : 0;
}

static int dtype_from_name(const char *s, PwDType *out)
{
    for (int i = 0; i < PW_DT_COUNT; i++) {
        if (strcmp(s, pw_dtypes[i].name) == 0) {
            *out = (PwDType)i;
            return 0;
        }
    }
    return -1;
}

/* numel and byte count of a shape, or -1 when either would not fit: a hostile header must not
 * be able to wrap a size around to something small that passes the offset checks. */
static int shape_size(const int64_t *shape, int ndim, size_t elsize, int64_t *numel,
                      size_t *nbytes)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) return -1;
        if (shape[d] != 0 && n > INT64_MAX / shape[d]) return -1;
        n *= shape[d];
    }
    if ((uint64_t)n > SIZE_MAX / elsize) return -1;
    *numel = n;
    *nbytes = (size_t)n * elsize;
    return 0;
}

/* "[2, 3, 4]" into buf, for messages. */
static const char *shape_str(char *buf, size_t cap, const int64_t *shape, int ndim)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%" PRId64, d ? ", " : "", shape[d]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
    return buf;
}

/* ------------------------------------------------------------------------------------------ */
/* reader                                                                                      */

struct PwSafetensors {
    char *path;
    void *map;
    size_t map_len;
    int n;
    PwStTensor *t;          /* sorted by data offset */
    int nmeta;
    char **meta;            /* key, value, key, value, ... */
};

/* Byte range of a tensor inside the data buffer, kept only while validating. */
typedef struct {
    int64_t begin, end;
} StRange;

void pw_st_close(PwSafetensors *st)
{
    if (!st) return;
    if (st->t)
        for (int i = 0; i < st->n; i++) free((char *)st->t[i].name);
    free(st->t);
    for (int i = 0; i < 2 * st->nmeta; i++) free(st->meta[i]);
    free(st->meta);
    if (st->map) munmap(st->map, st->map_len);
    free(st->path);
    free(st);
}

static int parse_metadata(PwSafetensors *st, json_t *m, PwErr *err)
{
    if (!json_is_object(m))
        return pw_errf(err, "%s: __metadata__ is not a JSON object", st->path);
    size_t cnt = json_object_size(m);
    st->meta = calloc(2 * cnt + 1, sizeof *st->meta);
    if (!st->meta) return pw_errf(err, "%s: out of memory for __metadata__", st->path);
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v) {
        if (!json_is_string(v))
            return pw_errf(err, "%s: __metadata__ key '%s': value is not a string", st->path, k);
        st->meta[2 * st->nmeta] = strdup(k);
        st->meta[2 * st->nmeta + 1] = strdup(json_string_value(v));
        st->nmeta++;
        if (!st->meta[2 * st->nmeta - 2] || !st->meta[2 * st->nmeta - 1])
            return pw_errf(err, "%s: out of memory for __metadata__", st->path);
    }
    return 0;
}

/* One header entry into *t and *r; checks everything that needs no other entry. */
static int parse_entry(const PwSafetensors *st, const char *name, json_t *e, size_t data_len,
                       PwStTensor *t, StRange *r, PwErr *err)
{
    const char *p = st->path;
    if (name[0] == '\0') return pw_errf(err, "%s: a tensor has an empty name", p);
    if (!json_is_object(e))
        return pw_errf(err, "%s: tensor '%s': entry is not a JSON object", p, name);

    json_t *jd = json_object_get(e, "dtype");
    if (!json_is_string(jd))
        return pw_errf(err, "%s: tensor '%s': \"dtype\" is missing or not a string", p, name);
    if (dtype_from_name(json_string_value(jd), &t->dtype) != 0)
        return pw_errf(err, "%s: tensor '%s': unknown dtype '%s'", p, name,
                       json_string_value(jd));

    json_t *js = json_object_get(e, "shape");
    if (!json_is_array(js))
        return pw_errf(err, "%s: tensor '%s': \"shape\" is missing or not an array", p, name);
    if (json_array_size(js) > PW_ST_MAX_NDIM)
        return pw_errf(err, "%s: tensor '%s': shape has %zu dimensions, at most %d supported", p,
                       name, json_array_size(js), PW_ST_MAX_NDIM);
    t->ndim = (int)json_array_size(js);
    for (int d = 0; d < t->ndim; d++) {
        json_t *x = json_array_get(js, (size_t)d);
        if (!json_is_integer(x) || json_integer_value(x) < 0)
            return pw_errf(err, "%s: tensor '%s': shape[%d] is not a non-negative integer", p,
                           name, d);
        t->shape[d] = (int64_t)json_integer_value(x);
    }
    char sb[256];
    if (shape_size(t->shape, t->ndim, pw_st_dtype_size(t->dtype), &t->numel, &t->nbytes) != 0)
        return pw_errf(err, "%s: tensor '%s': shape %s of %s overflows a byte count", p, name,
                       shape_str(sb, sizeof sb, t->shape, t->ndim), pw_st_dtype_name(t->dtype));

    json_t *jo = json_object_get(e, "data_offsets");
    json_t *j0 = json_array_get(jo, 0), *j1 = json_array_get(jo, 1);
    if (!json_is_array(jo) || json_array_size(jo) != 2 || !json_is_integer(j0) ||
        !json_is_integer(j1) || json_integer_value(j0) < 0 || json_integer_value(j1) < 0)
        return pw_errf(err, "%s: tensor '%s': \"data_offsets\" is not two non-negative integers",
                       p, name);
    r->begin = (int64_t)json_integer_value(j0);
    r->end = (int64_t)json_integer_value(j1);
    if (r->begin > r->end)
        return pw_errf(err, "%s: tensor '%s': data_offsets [%" PRId64 ", %" PRId64
                       "] begin after end", p, name, r->begin, r->end);
    if ((uint64_t)r->end > data_len)
        return pw_errf(err, "%s: tensor '%s': data_offsets end %" PRId64
                       " is past the end of the data buffer (%zu bytes)", p, name, r->end,
                       data_len);
    if ((uint64_t)(r->end - r->begin) != t->nbytes)
        return pw_errf(err, "%s: tensor '%s': data_offsets span %" PRId64
                       " bytes but dtype %s shape %s needs %zu bytes", p, name,
                       r->end - r->begin, pw_st_dtype_name(t->dtype),
                       shape_str(sb, sizeof sb, t->shape, t->ndim), t->nbytes);
    t->name = strdup(name);
    if (!t->name) return pw_errf(err, "%s: out of memory", p);
    return 0;
}

/* Sort key for the overlap check: begin, then end, so empty tensors come first at an offset. */
typedef struct {
    StRange r;
    PwStTensor t;
} StSlot;

static int slot_cmp(const void *a, const void *b)
{
    const StSlot *x = a, *y = b;
    if (x->r.begin != y->r.begin) return x->r.begin < y->r.begin ? -1 : 1;
    if (x->r.end != y->r.end) return x->r.end < y->r.end ? -1 : 1;
    return strcmp(x->t.name, y->t.name);
}

/* Like the reference implementation, tensors must tile the data buffer exactly: a gap or
 * trailing bytes mean a writer bug or a file cut and patched, so they are refused too. */
static int check_layout(const PwSafetensors *st, StSlot *s, int n, size_t data_len, PwErr *err)
{
    qsort(s, (size_t)n, sizeof *s, slot_cmp);
    int64_t next = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].r.begin < next)
            return pw_errf(err, "%s: tensor '%s' (bytes [%" PRId64 ", %" PRId64
                           ")) overlaps tensor '%s' (bytes [%" PRId64 ", %" PRId64 "))",
                           st->path, s[i].t.name, s[i].r.begin, s[i].r.end, s[i - 1].t.name,
                           s[i - 1].r.begin, s[i - 1].r.end);
        if (s[i].r.begin > next)
            return pw_errf(err, "%s: tensor '%s': gap of %" PRId64
                           " unused bytes before it in the data buffer", st->path,
                           s[i].t.name, s[i].r.begin - next);
        next = s[i].r.end;
    }
    if ((uint64_t)next != data_len)
        return pw_errf(err, "%s: %" PRIu64 " trailing bytes after the last tensor in the data "
                       "buffer", st->path, (uint64_t)data_len - (uint64_t)next);
    return 0;
}

static int parse_header(PwSafetensors *st, const char *hdr, size_t hlen, size_t data_len,
                        const unsigned char *data, PwErr *err)
{
    json_error_t je;
    size_t cnt = 0;
    json_t *root = json_loadb(hdr, hlen, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return pw_errf(err, "%s: header is not valid JSON: %s (line %d, column %d)", st->path,
                       je.text, je.line, je.column);
    int rc = -1;
    StSlot *s = NULL;
    if (!json_is_object(root)) {
        pw_errf(err, "%s: header is not a JSON object", st->path);
        goto done;
    }
    cnt = json_object_size(root);
    s = calloc(cnt + 1, sizeof *s);
    if (!s) {
        pw_errf(err, "%s: out of memory for %zu header entries", st->path, cnt);
        goto done;
    }
    int n = 0;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            if (parse_metadata(st, v, err) != 0) goto done;
            continue;
        }
        if (parse_entry(st, key, v, data_len, &s[n].t, &s[n].r, err) != 0) goto done;
        n++;
    }
    if (check_layout(st, s, n, data_len, err) != 0) goto done;
    st->t = calloc((size_t)n + 1, sizeof *st->t);
    if (!st->t) {
        pw_errf(err, "%s: out of memory", st->path);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        st->t[i] = s[i].t;
        st->t[i].data = data + s[i].r.begin;
        s[i].t.name = NULL;     /* ownership moved to st */
    }
    st->n = n;
    rc = 0;
done:
    if (s)
        for (size_t i = 0; i < cnt; i++) free((char *)s[i].t.name);
    free(s);
    json_decref(root);
    return rc;
}

int pw_st_open(PwSafetensors **out, const char *path, PwErr *err)
{
    *out = NULL;
    PwSafetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        free(st);
        return pw_errf(err, "%s: out of memory", path);
    }
    uint64_t size = 0;
    int fd = pw_file_open(path, PW_FILE_MAX_WEIGHTS, &size, err);
    if (fd < 0) goto fail;
    if (size < 8) {
        pw_errf(err, "%s: file is %llu bytes, shorter than the 8-byte header length", path,
                (unsigned long long)size);
        close(fd);
        goto fail;
    }
    st->map_len = (size_t)size;
    st->map = mmap(NULL, st->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (st->map == MAP_FAILED) {
        st->map = NULL;
        pw_errf(err, "%s: cannot map %zu bytes: %s", path, st->map_len, strerror(errno));
        goto fail;
    }
    const unsigned char *b = st->map;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | b[i];
    if (hlen > st->map_len - 8) {
        pw_errf(err, "%s: header length %" PRIu64 " runs past the end of the file (%zu bytes)",
                path, hlen, st->map_len);
        goto fail;
    }
    if (hlen > PW_ST_MAX_HEADER) {
        pw_errf(err, "%s: header length %" PRIu64 " is larger than the %u bytes allowed", path,
                hlen, PW_ST_MAX_HEADER);
        goto fail;
    }
    if (parse_header(st, (const char *)b + 8, (size_t)hlen, st->map_len - 8 - (size_t)hlen,
                     b + 8 + hlen, err) != 0)
        goto fail;
    *out = st;
    return 0;
fail:
    pw_st_close(st);
    return -1;
}

const char *pw_st_path(const PwSafetensors *st) { return st->path; }

int pw_st_count(const PwSafetensors *st) { return st->n; }

const PwStTensor *pw_st_get(const PwSafetensors *st, int i)
{
    return (i >= 0 && i < st->n) ? &st->t[i] : NULL;
}

const PwStTensor *pw_st_find(const PwSafetensors *st, const char *name)
{
    for (int i = 0; i < st->n; i++)
        if (strcmp(st->t[i].name, name) == 0) return &st->t[i];
    return NULL;
}

const char *pw_st_metadata(const PwSafetensors *st, const char *key)
{
    for (int i = 0; i < st->nmeta; i++)
        if (strcmp(st->meta[2 * i], key) == 0) return st->meta[2 * i + 1];
    return NULL;
}

/* The tensor `name` if it exists with exactly the expected shape. */
static const PwStTensor *find_shaped(const PwSafetensors *st, const char *name,
                                     const int64_t *shape, int ndim, PwErr *err)
{
    const PwStTensor *t = pw_st_find(st, name);
    if (!t) {
        pw_errf(err, "%s: no tensor '%s'", st->path, name);
        return NULL;
    }
    int same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!same) {
        char a[256], b[256];
        pw_errf(err, "%s: tensor '%s' has shape %s, expected %s", st->path, name,
                shape_str(a, sizeof a, t->shape, t->ndim),
                shape_str(b, sizeof b, shape, ndim < 0 ? 0 : ndim));
        return NULL;
    }
    return t;
}

/* IEEE half to float, written out so that no compiler extension (_Float16) is needed. */
static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, ex = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits;
    if (ex == 0) {
        /* zero or subnormal: man * 2^-24, exact in float */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    if (ex == 31)
        bits = sign | 0x7f800000u | (man << 13);  /* inf, or NaN keeping its payload */
    else
        bits = sign | ((ex + 112u) << 23) | (man << 13);  /* rebias 15 -> 127 */
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Elements [i0, i1) of t, widened to float32 into dst[i0, i1). Straight loops over the
 * element range, which the compiler vectorises (BF16 is a shift; F32 a copy). */
static void widen(const PwStTensor *t, float *dst, int64_t i0, int64_t i1)
{
    const unsigned char *src = t->data;
    switch (t->dtype) {
    case PW_DT_F32:
        memcpy(dst + i0, src + 4 * i0, 4 * (size_t)(i1 - i0));
        break;
    case PW_DT_F64:
        for (int64_t i = i0; i < i1; i++) {
            double v;
            memcpy(&v, src + 8 * i, 8);
            dst[i] = (float)v;
        }
        break;
    case PW_DT_BF16:
        for (int64_t i = i0; i < i1; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            dst[i] = pw_bf16_to_f32(h); /* bf16 is the top half of a float */
        }
        break;
    case PW_DT_F16:
        for (int64_t i = i0; i < i1; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            dst[i] = f16_to_f32(h);
        }
        break;
    default:
        break;
    }
}

/* Give the whole pages inside [p, p + n) of a mapping back to the kernel. The mapping is
 * private and never written, so nothing is lost: the pages leave the process's resident memory
 * (they stay in the page cache) and a later access maps them again. */
static void release_pages(const void *p, size_t n)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + n) & ~(page - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

/* Elements per block of a conversion: large enough that starting a block costs nothing next to
 * converting it, small enough that two threads share a tensor of a few million elements. */
#define PW_ST_BLOCK ((int64_t)1 << 20)

static int read_float(const PwSafetensors *st, const char *name, const int64_t *expect_shape,
                      int expect_ndim, float *dst, int release, PwErr *err)
{
    const PwStTensor *t = find_shaped(st, name, expect_shape, expect_ndim, err);
    if (!t) return -1;
    if (t->dtype != PW_DT_F32 && t->dtype != PW_DT_F64 && t->dtype != PW_DT_BF16 &&
        t->dtype != PW_DT_F16)
        return pw_errf(err, "%s: tensor '%s' has dtype %s, expected F32, F16, BF16 or F64",
                       st->path, name, pw_st_dtype_name(t->dtype));
    /* Blocks spread over the OpenMP threads: the conversion is cheap, and the time of a load
     * goes mostly to the kernel's first-touch faults on dst (fresh memory) and on the mapping,
     * which run in parallel too. Blocks are taken in order, so the threads work close to each
     * other in the file and a block's pages can be released as soon as it is done. */
    int64_t nblocks = (t->numel + PW_ST_BLOCK - 1) / PW_ST_BLOCK;
    size_t es = pw_st_dtype_size(t->dtype);
#pragma omp parallel for schedule(dynamic, 1) if (nblocks > 1)
    for (int64_t b = 0; b < nblocks; b++) {
        int64_t i0 = b * PW_ST_BLOCK, i1 = i0 + PW_ST_BLOCK < t->numel ? i0 + PW_ST_BLOCK
                                                                        : t->numel;
        widen(t, dst, i0, i1);
        if (release) release_pages((const unsigned char *)t->data + es * i0, es * (i1 - i0));
    }
    return 0;
}

int pw_st_read_f32(const PwSafetensors *st, const char *name, const int64_t *expect_shape,
                   int expect_ndim, float *dst, PwErr *err)
{
    return read_float(st, name, expect_shape, expect_ndim, dst, 0, err);
}

int pw_st_read_f32_once(const PwSafetensors *st, const char *name, const int64_t *expect_shape,
                        int expect_ndim, float *dst, PwErr *err)
{
    return read_float(st, name, expect_shape, expect_ndim, dst, 1, err);
}

int pw_st_read_i32(const PwSafetensors *st, const char *name, const int64_t *expect_shape,
                   int expect_ndim, int32_t *dst, PwErr *err)
{
    const PwStTensor *t = find_shaped(st, name, expect_shape, expect_ndim, err);
    if (!t) return -1;
    const unsigned char *src = t->data;
    switch (t->dtype) {
    case PW_DT_I32:
        memcpy(dst, src, t->nbytes);
        return 0;
    case PW_DT_I64:
        for (int64_t i = 0; i < t->numel; i++) {
            int64_t v;
            memcpy(&v, src + 8 * i, 8);
            if (v < INT32_MIN || v > INT32_MAX)
                return pw_errf(err, "%s: tensor '%s': element %" PRId64 " = %" PRId64
                               " does not fit in int32", st->path, name, i, v);
            dst[i] = (int32_t)v;
        }
        return 0;
    default:
        return pw_errf(err, "%s: tensor '%s' has dtype %s, expected I32 or I64", st->path,
                       name, pw_st_dtype_name(t->dtype));
    }
}

/* ------------------------------------------------------------------------------------------ */
/* writer                                                                                      */

/* Checks t[0..n) and fills nbytes[i]; names are checked for duplicates in build_header. */
/* stream: the data comes later (pw_st_stream_write), so the pointers are not looked at */
static int check_write_tensors(const char *path, const PwStWriteTensor *t, int n, int stream,
                               size_t *nbytes, PwErr *err)
{
    for (int i = 0; i < n; i++) {
        const char *nm = t[i].name;
        int64_t numel;
        if (!nm || !nm[0] || strcmp(nm, "__metadata__") == 0)
            return pw_errf(err, "%s: tensor %d has no usable name", path, i);
        if (pw_st_dtype_size(t[i].dtype) == 0 || t[i].ndim < 0 || t[i].ndim > PW_ST_MAX_NDIM ||
            shape_size(t[i].shape, t[i].ndim, pw_st_dtype_size(t[i].dtype), &numel,
                       &nbytes[i]) != 0)
            return pw_errf(err, "%s: tensor '%s': bad dtype, ndim or shape", path, nm);
        if (nbytes[i] && !t[i].data && !stream)
            return pw_errf(err, "%s: tensor '%s': no data for %zu bytes", path, nm, nbytes[i]);
    }
    return 0;
}

/* Data order: larger elements first (ties keep the caller's order). With the header padded to
 * 8, every tensor then starts aligned to its own element size, as in the reference writer. */
static void layout(const PwStWriteTensor *t, int n, const size_t *nbytes, int *order,
                   uint64_t *off)
{
    int k = 0;
    for (size_t el = 8; el >= 1; el /= 2)
        for (int i = 0; i < n; i++)
            if (pw_st_dtype_size(t[i].dtype) == el) order[k++] = i;
    uint64_t o = 0;
    for (k = 0; k < n; k++) {
        off[order[k]] = o;
        o += nbytes[order[k]];
    }
}

/* The header for t[0..n), entries in the caller's order; NULL after an error. */
static json_t *build_header(const char *path, const PwStWriteTensor *t, int n,
                            const char *const *kv, const size_t *nbytes, const uint64_t *off,
                            PwErr *err)
{
    json_t *root = json_object();
    if (!root) {
        pw_errf(err, "%s: out of memory", path);
        return NULL;
    }
    if (kv) {
        json_t *m = json_object();
        json_object_set_new(root, "__metadata__", m);
        for (int i = 0; kv[i]; i += 2) {
            if (!kv[i + 1]) {
                pw_errf(err, "%s: metadata key '%s' has no value", path, kv[i]);
                goto fail;
            }
            if (json_object_set_new(m, kv[i], json_string(kv[i + 1])) != 0) {
                pw_errf(err, "%s: metadata key '%s': value is not valid UTF-8", path, kv[i]);
                goto fail;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        if (json_object_get(root, t[i].name)) {
            pw_errf(err, "%s: tensor '%s' given twice", path, t[i].name);
            goto fail;
        }
        json_t *shape = json_array();
        for (int d = 0; d < t[i].ndim; d++)
            json_array_append_new(shape, json_integer(t[i].shape[d]));
        json_t *e = json_pack("{s:s, s:o, s:[I, I]}", "dtype", pw_st_dtype_name(t[i].dtype),
                              "shape", shape, "data_offsets", (json_int_t)off[i],
                              (json_int_t)(off[i] + nbytes[i]));
        if (!e || json_object_set_new(root, t[i].name, e) != 0) {
            pw_errf(err, "%s: tensor '%s': cannot build its header entry (name not UTF-8?)",
                    path, t[i].name);
            goto fail;
        }
    }
    return root;
fail:
    json_decref(root);
    return NULL;
}

/* The padded header text, or NULL after an error. */
static char *header_text(const char *path, const PwStWriteTensor *t, int n, const char *const *kv,
                         const size_t *nbytes, const uint64_t *off, PwErr *err)
{
    json_t *root = build_header(path, t, n, kv, nbytes, off, err);
    if (!root) return NULL;
    char *hdr = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!hdr) pw_errf(err, "%s: cannot serialise the header", path);
    return hdr;
}

/* A file being written: the header, then the tensors' data as it is pushed, in file order. */
struct PwStStream {
    PwFileOut o;
    FILE *f;
    uint64_t want, got; /* data bytes the tensors hold, and pushed so far */
    int bad;            /* a write failed: nothing more is written, and the close discards */
};

/* The file's header for t[0..n) (data pointers not read when `stream`), opened for its data; NULL
 * after an error. *order gets the data order (caller's: free it). */
static PwStStream *stream_open(const char *path, const PwStWriteTensor *t, int n,
                               const char *const *metadata_kv, int stream, int **order_out,
                               PwErr *err)
{
    if (n < 0) return pw_errf(err, "%s: negative tensor count %d", path, n), NULL;
    size_t *nbytes = calloc((size_t)n + 1, sizeof *nbytes);
    uint64_t *off = calloc((size_t)n + 1, sizeof *off);
    int *order = calloc((size_t)n + 1, sizeof *order);
    PwStStream *s = calloc(1, sizeof *s);
    char *hdr = NULL;
    if (!nbytes || !off || !order || !s) {
        pw_errf(err, "%s: out of memory", path);
        goto fail;
    }
    if (check_write_tensors(path, t, n, stream, nbytes, err) != 0) goto fail;
    layout(t, n, nbytes, order, off);
    if (!(hdr = header_text(path, t, n, metadata_kv, nbytes, off, err))) goto fail;
    for (int i = 0; i < n; i++) s->want += nbytes[i];
    /* Spaces pad the header to a multiple of 8 so that the data buffer starts 8-aligned. */
    size_t hlen = strlen(hdr), padded = (hlen + 7) & ~(size_t)7;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    static const char spaces[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
    /* written whole or not at all (pw_file.h): a crash leaves the old file in force */
    if (!(s->f = pw_file_out_open(&s->o, path, err))) goto fail;
    s->bad = fwrite(len8, 1, 8, s->f) != 8 || fwrite(hdr, 1, hlen, s->f) != hlen ||
             fwrite(spaces, 1, padded - hlen, s->f) != padded - hlen;
    free(hdr);
    free(off);
    free(nbytes);
    *order_out = order;
    return s;
fail:
    free(hdr);
    free(order);
    free(off);
    free(nbytes);
    free(s);
    return NULL;
}

PwStStream *pw_st_stream_open(const char *path, const PwStWriteTensor *t, int n,
                              const char *const *metadata_kv, PwErr *err)
{
    int *order = NULL;
    PwStStream *s = stream_open(path, t, n, metadata_kv, 1, &order, err);
    free(order);
    return s;
}

void pw_st_stream_write(PwStStream *s, const void *data, size_t bytes)
{
    if (s->bad || !bytes) return;
    s->bad = s->got + bytes > s->want || fwrite(data, 1, bytes, s->f) != bytes;
    s->got += bytes;
}

int pw_st_stream_close(PwStStream *s, const char *path, int discard, PwErr *err)
{
    int bad = 0; /* a discard keeps the caller's message */
    if (!discard && s->got != s->want)
        bad = pw_errf(err, "%s: %llu bytes of tensor data written of %llu", path,
                      (unsigned long long)s->got, (unsigned long long)s->want);
    else if (!discard && s->bad)
        bad = pw_errf(err, "%s: cannot write: %s", path, strerror(errno ? errno : EIO));
    int rc = pw_file_out_close(&s->o, bad || discard, err);
    free(s);
    return rc;
}

int pw_st_write(const char *path, const PwStWriteTensor *t, int n,
                const char *const *metadata_kv, PwErr *err)
{
    int *order = NULL;
    PwStStream *s = stream_open(path, t, n, metadata_kv, 0, &order, err);
    if (!s) return -1;
    for (int k = 0; k < n; k++) {
        const PwStWriteTensor *x = &t[order[k]];
        size_t nb = 0;
        int64_t numel;
        shape_size(x->shape, x->ndim, pw_st_dtype_size(x->dtype), &numel, &nb);
        pw_st_stream_write(s, x->data, nb);
    }
    free(order);
    return pw_st_stream_close(s, path, 0, err);
}
